"""Optional packages, imported only when used: a missing one is a one-line `MissingDependency`
that names the extra to install, never an ImportError traceback. `SDKClient` makes an SDK's
client only when it is first used, for the models and the embedder alike."""

from __future__ import annotations

import importlib
import importlib.util
from abc import ABC, abstractmethod
from typing import Any, Literal, TypedDict

from fourfold.errors import MissingDependency

__all__ = ["Extra", "SDKClient", "SDKOptions", "check", "missing", "require"]

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


class SDKOptions(TypedDict, total=False):
    """How to reach a service through its SDK: the keywords every SDK-backed model and embedder
    takes (`**options: Unpack[SDKOptions]`), declared once so that they cannot drift apart."""

    #: The service's key; None lets the SDK (or the class) read it from the environment.
    api_key: str | None
    #: The service's address; None lets the SDK read it from the environment, else its default.
    base_url: str | None
    #: Seconds one request may take (default 60).
    timeout: float
    #: How often a failed request is tried again (default: the class's `default_retries`).
    max_retries: int
    #: A ready SDK client (tests, custom transports), used as is: the other options go unused.
    client: Any


class SDKClient(ABC):
    """Something over an official SDK: the client's options, and the client made from them on
    first use, so that constructing it opens no connection. An injected client is used as is."""

    #: Tries again of a failed request when `max_retries` is not given.
    default_retries = 2

    def _keep_client(self, options: SDKOptions) -> None:
        unknown = options.keys() - SDKOptions.__optional_keys__
        if unknown:  # as Python itself refuses a misspelt keyword, rather than the SDK at the first call
            raise TypeError(f"{type(self).__name__}() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
        given = dict(options)
        self._client: Any = given.pop("client", None)
        #: The SDK client's own options, as its constructor takes them.
        self._options: dict[str, Any] = {"api_key": None, "base_url": None, "timeout": 60.0,
                                         "max_retries": self.default_retries, **given}

    @property
    def client(self) -> Any:
        """The SDK client, created on first use."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    @abstractmethod
    def _make_client(self) -> Any:
        """Build the SDK client from the stored options."""
