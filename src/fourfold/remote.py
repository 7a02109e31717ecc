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

import builtins
import os
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from fourfold import _wire as w
from fourfold._wire import API_KEY_ENV
from fourfold.longterm.store import MemoryId, MemoryInput, When
from fourfold.service.errors import ServiceError, TooLarge, Unauthorized
from fourfold.types import DocHit, Episode, Fact, Recalled, Remembered

if TYPE_CHECKING:
    from fourfold.agent.deidentify import Ticket
    from fourfold.remote_async import AsyncRemoteMemory

__all__ = ["API_KEY_ENV", "AsyncRemoteMemory", "RemoteMemory", "ServiceError", "TooLarge", "Unauthorized", "connect"]

T = TypeVar("T")


def connect(url: str, *, api_key: str | None = None, timeout: float = 30.0) -> RemoteMemory:
    """A `RemoteMemory` for the service at `url` (the key defaults to $FOURFOLD_API_KEY)."""
    return RemoteMemory(url, api_key=api_key, timeout=timeout)


class _Http:
    """One HTTP client: sends a call's request and reads its answer (`fourfold._wire`)."""

    def __init__(self, client: httpx.Client, *, owned: bool) -> None:
        self.client = client
        self.owned = owned

    def run(self, call: w.Call[T]) -> T:
        try:
            response = self.client.request(**call.request_args())
        except httpx.HTTPError as exc:
            raise w.unreachable(self.client.base_url, exc) from None
        return w.answer(call, response)


class RemoteMemory:
    """Long-term, episodic and semantic memory of one tenant, served by `fourfold serve`."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        client: httpx.Client | None = None,
    ) -> None:
        """`client` injects a ready `httpx.Client` (e.g. FastAPI's TestClient); else one is made."""
        headers = w.headers_for(api_key if api_key is not None else os.environ.get(API_KEY_ENV))
        if client is None:
            http = _Http(httpx.Client(base_url=url, headers=headers, timeout=timeout), owned=True)
        else:
            client.headers.update(headers)
            http = _Http(client, owned=False)
        self.url = url
        self._http = http
        self.long_term = RemoteLongTermMemory(http)
        self.episodes = RemoteEpisodeLog(http)
        self.cases = RemoteCaseBase(http)
        self.facts = RemoteFactStore(http)
        self.docs = RemoteDocumentStore(http)

    def add(self, messages: Iterable[Mapping[str, Any] | str], *, scope: str | None = None) -> list[Remembered]:
        """Keep what a conversation says that is worth remembering (the service's model or rules)."""
        return self._http.run(w.add(messages, scope))

    def forget_scope(self, scope: str) -> dict[str, int]:
        """Erase one scope from every store; other scopes are untouched. Returns counts."""
        return self._http.run(w.forget_scope(scope))

    def whoami(self) -> str:
        """The tenant this key belongs to."""
        return self._http.run(w.whoami())

    def close(self) -> None:
        if self._http.owned:
            self._http.client.close()

    def __enter__(self) -> RemoteMemory:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteMemory({self.url!r})"


class RemoteLongTermMemory:
    """`LongTermMemory` over HTTP: remember / recall / forget."""

    def __init__(self, http: _Http) -> None:
        self._http = http

    def remember(
        self,
        text: str,
        *,
        scope: str | None = None,
        kind: str = "note",
        metadata: Mapping[str, Any] | None = None,
        key: str | None = None,
        valid_from: When | None = None,
    ) -> MemoryId:
        return self._http.run(w.LongTerm.remember(text, scope, kind, metadata, key, valid_from))

    def update(
        self,
        memory_id: str,
        text: str,
        *,
        kind: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        valid_from: When | None = None,
    ) -> MemoryId:
        return self._http.run(w.LongTerm.update(memory_id, text, kind, metadata, valid_from))

    def history(self, memory_id: str) -> list[Recalled]:
        return self._http.run(w.LongTerm.history(memory_id))

    def remember_many(self, items: Iterable[MemoryInput | Mapping[str, Any]]) -> list[Remembered]:
        return self._http.run(w.LongTerm.remember_many(items))

    def recall(
        self,
        query: str,
        *,
        scope: str | None = None,
        k: int = 3,
        kinds: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        min_score: float | None = None,
        as_of: When | None = None,
        include_superseded: bool = False,
    ) -> list[Recalled]:
        return self._http.run(w.LongTerm.recall(query, scope, k, kinds, where, min_score, as_of, include_superseded))

    def forget(self, memory_id: str) -> None:
        self._http.run(w.LongTerm.forget(memory_id))

    def forget_scope(self, scope: str) -> int:
        return self._http.run(w.LongTerm.forget_scope(scope))

    def get(self, memory_id: str) -> Recalled:
        return self._http.run(w.LongTerm.get(memory_id))

    def all(
        self,
        *,
        scope: str | None = None,
        kinds: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        as_of: When | None = None,
        include_superseded: bool = False,
    ) -> list[Recalled]:
        return self._http.run(w.LongTerm.all(scope, kinds, where, as_of, include_superseded))


class RemoteEpisodeLog:
    """`EpisodeLog` over HTTP: record episodes, find similar successes, erase them."""

    def __init__(self, http: _Http) -> None:
        self._http = http

    def record(
        self,
        *,
        goal: str,
        actions: Sequence[str],
        outcome: str,
        success: bool,
        scope: str | None = None,
        tags: Sequence[str] = (),
    ) -> Episode:
        return self._http.run(w.Episodes.record(goal, actions, outcome, success, scope, tags))

    def record_many(self, items: Sequence[Mapping[str, Any]]) -> list[Episode]:
        return self._http.run(w.Episodes.record_many(items))

    def similar_successes(
        self, situation: str, *, k: int = 3, scope: str | None = None, include_unscoped: bool = True,
        min_score: float | None = None,
    ) -> list[Episode]:
        return self._http.run(w.Episodes.similar_successes(situation, k, scope, include_unscoped, min_score))

    def episodes(self, *, scope: str | None = None, success: bool | None = None) -> list[Episode]:
        return self._http.run(w.Episodes.episodes(scope, success))

    def count(self) -> int:
        """How many episodes there are (`len()` of the log)."""
        return self._http.run(w.Episodes.count())

    def get(self, episode_id: str) -> Episode:
        return self._http.run(w.Episodes.get(episode_id))

    def forget(self, episode_id: str) -> None:
        self._http.run(w.Episodes.forget(episode_id))

    def forget_scope(self, scope: str) -> int:
        return self._http.run(w.Episodes.forget_scope(scope))

    def forget_unscoped(self) -> int:
        return self._http.run(w.Episodes.forget_unscoped())

    def __len__(self) -> int:
        return self.count()


class RemoteCaseBase:
    """The tenant's shared case base over HTTP: the service de-identifies each case it is sent."""

    def __init__(self, http: _Http) -> None:
        self._http = http

    def add(self, ticket: Ticket, *, source_scope: str) -> Episode | None:
        """Share a successfully resolved ticket; the case the service wrote, or None when nothing generic was left."""
        return self._http.run(w.Cases.add(ticket, source_scope))

    def similar(
        self, situation: str, *, k: int, exclude_source: str | None = None, min_score: float | None = None
    ) -> list[Episode]:
        """The shared cases most like `situation`, without those made from `exclude_source`'s tickets."""
        return self._http.run(w.Cases.similar(situation, k, exclude_source, min_score))


class RemoteFactStore:
    """`FactStore` over HTTP: authoritative facts by key."""

    def __init__(self, http: _Http) -> None:
        self._http = http

    def set(self, key: str, value: Any, *, description: str | None = None) -> Fact:
        return self._http.run(w.Facts.set(key, value, description))

    def get(self, key: str) -> Fact:
        return self._http.run(w.Facts.get(key))

    def lookup(self, key: object) -> str:
        """The value as text for a model, or exactly UNKNOWN (for any key, even a bad one)."""
        return self._http.run(w.Facts.lookup(key))

    def delete(self, key: str, *, purge: bool = False) -> None:
        self._http.run(w.Facts.delete(key, purge))

    def keys(self) -> builtins.list[str]:
        return self._http.run(w.Facts.keys())

    def list(self) -> builtins.list[Fact]:
        return self._http.run(w.Facts.list())

    def history(self, key: str) -> builtins.list[tuple[Any, float]]:
        return self._http.run(w.Facts.history(key))

    def tool_schema(self, *, name: str = "lookup_policy", description: str | None = None) -> dict[str, Any]:
        """The lookup_policy schema over the current keys (built by the library's own function)."""
        return self._http.run(w.Facts.tool_schema(name, description))

    def tool_description(self) -> str:
        return self._http.run(w.Facts.tool_description())

    def set_tool_description(self, description: str | None) -> str:
        return self._http.run(w.Facts.set_tool_description(description))

    def descriptions(self) -> dict[str, str]:
        """Every key with the description it was set with ("" for none), for tool schemas."""
        return self._http.run(w.Facts.descriptions())


class RemoteDocumentStore:
    """`DocumentStore` over HTTP; a path is read here, on the client, never by the service."""

    def __init__(self, http: _Http) -> None:
        self._http = http

    def ingest(
        self, text: str | os.PathLike[str], *, source: str | None = None, scope: str | None = None
    ) -> list[str]:
        """A string is the document's text; a `Path` is read here, as `ingest_file` does."""
        return self._http.run(w.Docs.ingest(text, source, scope))

    def ingest_file(self, path: str | os.PathLike[str], *, source: str | None = None, scope: str | None = None) -> list[str]:
        """Read a local UTF-8 file (on this client) and send its text."""
        return self._http.run(w.Docs.ingest_file(path, source, scope))

    def ingest_text(self, text: str, *, source: str, scope: str | None = None) -> list[str]:
        return self._http.run(w.Docs.ingest_text(text, source, scope))

    def search(
        self, query: str, *, k: int = 5, scope: str | None = None, source: str | None = None,
        min_score: float | None = None,
    ) -> list[DocHit]:
        return self._http.run(w.Docs.search(query, k, scope, source, min_score))

    def sources(self, *, scope: str | None = None) -> list[str]:
        return self._http.run(w.Docs.sources(scope))

    def delete_source(self, source: str, *, scope: str | None = None) -> int:
        return self._http.run(w.Docs.delete_source(source, scope))


def __getattr__(name: str) -> object:
    # The async twin lives in its own module; `from fourfold.remote import AsyncRemoteMemory` works too.
    if name == "AsyncRemoteMemory":
        from fourfold.remote_async import AsyncRemoteMemory

        return AsyncRemoteMemory
    raise AttributeError(f"module 'fourfold.remote' has no attribute {name!r}")
