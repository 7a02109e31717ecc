"""`RemoteMemory`: the `Memory` API over HTTP, so an agent moves to the service by configuration.

    memory = Memory.open("./agent_memory")                       # embedded
    memory = connect("http://127.0.0.1:8765", api_key="ffk_...")  # the same calls, served
    memory = AsyncRemoteMemory("http://127.0.0.1:8765")          # the same calls, awaited

Each method sends one request to `fourfold serve` and returns the library's own types;
failures raise the library's typed errors (plus `Unauthorized` and `TooLarge`), rebuilt
from the service's stable error codes. What each call sends and reads is `fourfold._wire`,
shared with the async twin (`fourfold.remote_async`); this module only does the sync I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ParamSpec, TypeVar

import httpx

from fourfold import _wire as w
from fourfold._lifecycle import Closing
from fourfold._wire import API_KEY_ENV
from fourfold.service.errors import ServiceError, TooLarge, Unauthorized

if TYPE_CHECKING:
    from fourfold.remote_async import AsyncRemoteMemory

__all__ = ["API_KEY_ENV", "AsyncRemoteMemory", "RemoteMemory", "ServiceError", "TooLarge", "Unauthorized", "connect"]

T = TypeVar("T")
P = ParamSpec("P")


def connect(url: str, *, api_key: str | None = None, timeout: float = 30.0) -> RemoteMemory:
    """A `RemoteMemory` for the service at `url` (the key defaults to $FOURFOLD_API_KEY)."""
    return RemoteMemory(url, api_key=api_key, timeout=timeout)


class _Http(w.Connection[httpx.Client]):
    """One HTTP client: sends a call's request and reads its answer (`fourfold._wire`)."""

    def run(self, call: w.Call[T]) -> T:
        try:
            response = self.client.request(**call.request_args())
        except httpx.HTTPError as exc:
            raise w.unreachable(self.client.base_url, exc) from None
        return w.answer(call, response)


class RemoteMemory(w.Served[httpx.Client], w.SyncPart, w.Root, Closing):
    """Long-term, episodic and semantic memory of one tenant, served by `fourfold serve`."""

    _connection, _client = _Http, httpx.Client
    _http: _Http
    long_term: RemoteLongTermMemory
    episodes: RemoteEpisodeLog
    cases: RemoteCaseBase
    facts: RemoteFactStore
    docs: RemoteDocumentStore

    def close(self) -> None:
        if self._http.owned:
            self._http.client.close()


class RemoteLongTermMemory(w.SyncPart, w.LongTerm):
    """`LongTermMemory` over HTTP: remember / recall / forget."""


class RemoteEpisodeLog(w.SyncPart, w.Episodes):
    """`EpisodeLog` over HTTP: record episodes, find similar successes, erase them."""

    def __len__(self) -> int:
        return self.count()


class RemoteCaseBase(w.SyncPart, w.Cases):
    """The tenant's shared case base over HTTP: the service de-identifies each case it is sent."""


class RemoteFactStore(w.SyncPart, w.Facts):
    """`FactStore` over HTTP: authoritative facts by key."""


class RemoteDocumentStore(w.SyncPart, w.Docs):
    """`DocumentStore` over HTTP; a path is read here, on the client, never by the service."""


def __getattr__(name: str) -> object:
    # The async twin lives in its own module; `from fourfold.remote import AsyncRemoteMemory` works too.
    if name == "AsyncRemoteMemory":
        from fourfold.remote_async import AsyncRemoteMemory

        return AsyncRemoteMemory
    raise AttributeError(f"module 'fourfold.remote' has no attribute {name!r}")
