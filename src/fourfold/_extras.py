"""Optional packages, imported only when used: a missing one is a one-line `MissingDependency`
that names the extra to install, never an ImportError traceback."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Literal

from fourfold.errors import MissingDependency

__all__ = ["Extra", "check", "missing", "require"]

Extra = Literal["server", "mcp", "anthropic", "openai", "chroma", "postgres"]


def missing(what: str, extra: Extra) -> MissingDependency:
    """The error for `what` when the `extra` is not installed."""
    return MissingDependency(f"{what} needs the {extra} extra: pip install 'fourfold[{extra}]'")


def require(module: str, extra: Extra, *, what: str) -> Any:
    """Import `module` (from the `extra`), or raise `missing(what, extra)`."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing(what, extra) from exc


def check(module: str, extra: Extra, *, what: str) -> None:
    """Fail now, without importing it, if `module` (from the `extra`) is not installed."""
    try:
        found = importlib.util.find_spec(module)
    except ImportError as exc:
        raise missing(what, extra) from exc
    if found is None:
        raise missing(what, extra)
