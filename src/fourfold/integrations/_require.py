"""The one-line error of an adapter whose framework is not installed."""

from __future__ import annotations

import importlib.util

from fourfold.errors import MissingDependency

__all__ = ["require_framework"]


def require_framework(module: str, extra: str, *, what: str) -> None:
    """Fail with `MissingDependency` naming `fourfold[extra]` unless `module` can be imported."""
    try:
        found = importlib.util.find_spec(module)
    except ImportError:
        found = None
    if found is None:
        raise MissingDependency(f"{what} needs the {extra} extra: pip install 'fourfold[{extra}]'")
