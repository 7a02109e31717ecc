"""Optional packages, imported only when used: a missing one is a one-line `MissingDependency`
that names the extra to install, never an ImportError traceback. `SDKClient` makes an SDK's
client only when it is first used, for the models and the embedder alike."""

from __future__ import annotations

import importlib
import importlib.util
from abc import ABC, abstractmethod
from typing import Any, Literal

from fourfold.errors import MissingDependency

__all__ = ["Extra", "SDKClient", "check", "missing", "require"]

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


class SDKClient(ABC):
    """Something over an official SDK: the client's options, and the client made from them on
    first use, so that constructing it opens no connection. An injected client is used as is."""

    def _keep_client(self, client: Any, **options: Any) -> None:
        #: The SDK client's own options, as its constructor takes them.
        self._options: dict[str, Any] = options
        self._client: Any = client

    @property
    def client(self) -> Any:
        """The SDK client, created on first use."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    @abstractmethod
    def _make_client(self) -> Any:
        """Build the SDK client from the stored options."""
