"""`AsyncRemoteMemory`: the `Memory` API over HTTP for asyncio programs, on `httpx.AsyncClient`.

    async with AsyncRemoteMemory("http://127.0.0.1:8765", api_key="ffk_...") as memory:
        await memory.long_term.remember("Prefers email over phone", scope="customer:42")
        hits = await memory.long_term.recall("how to contact them", scope="customer:42")

The async twin of `fourfold.remote.RemoteMemory`: the same methods, arguments and results,
awaited. Both build each call with `fourfold._wire`, so what is sent, how answers are read and
which typed errors are raised are one piece of code; this module only does the async I/O
(`tests/test_remote.py` runs the same conformance tests on both, and checks their parity).
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from fourfold import _wire as w
from fourfold.longterm.store import MemoryId, MemoryInput, When
from fourfold.types import DocHit, Episode, Fact, Recalled, Remembered

if TYPE_CHECKING:
    from fourfold.agent.deidentify import Ticket

__all__ = ["AsyncRemoteMemory", "connect_async"]

T = TypeVar("T")


def connect_async(url: str, *, api_key: str | None = None, timeout: float = 30.0) -> AsyncRemoteMemory:
    """An `AsyncRemoteMemory` for the service at `url` (the key defaults to $FOURFOLD_API_KEY)."""
    return AsyncRemoteMemory(url, api_key=api_key, timeout=timeout)


class _AsyncHttp:
    """One async HTTP client: sends a call's request and reads its answer (`fourfold._wire`)."""

    def __init__(self, client: httpx.AsyncClient, *, owned: bool) -> None:
        self.client = client
        self.owned = owned

    async def run(self, call: w.Call[T]) -> T:
        try:
            response = await self.client.request(**call.request_args())
        except httpx.HTTPError as exc:
            raise w.unreachable(self.client.base_url, exc) from None
        return w.answer(call, response)


class AsyncRemoteMemory:
    """Long-term, episodic and semantic memory of one tenant, served by `fourfold serve`, awaited."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        """`client` injects a ready `httpx.AsyncClient` (e.g. on an `httpx.ASGITransport`); else one is made."""
        headers = w.headers_for(api_key if api_key is not None else os.environ.get(w.API_KEY_ENV))
        if client is None:
            http = _AsyncHttp(httpx.AsyncClient(base_url=url, headers=headers, timeout=timeout), owned=True)
        else:
            client.headers.update(headers)
            http = _AsyncHttp(client, owned=False)
        self.url = url
        self._http = http
        self.long_term = AsyncRemoteLongTermMemory(http)
        self.episodes = AsyncRemoteEpisodeLog(http)
        self.cases = AsyncRemoteCaseBase(http)
        self.facts = AsyncRemoteFactStore(http)
        self.docs = AsyncRemoteDocumentStore(http)

    async def add(self, messages: Iterable[Mapping[str, Any] | str], *, scope: str | None = None) -> list[Remembered]:
        """Keep what a conversation says that is worth remembering (the service's model or rules)."""
        return await self._http.run(w.add(messages, scope))

    async def forget_scope(self, scope: str) -> dict[str, int]:
        """Erase one scope from every store; other scopes are untouched. Returns counts."""
        return await self._http.run(w.forget_scope(scope))

    async def whoami(self) -> str:
        """The tenant this key belongs to."""
        return await self._http.run(w.whoami())

    async def close(self) -> None:
        if self._http.owned:
            await self._http.client.aclose()

    async def __aenter__(self) -> AsyncRemoteMemory:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncRemoteMemory({self.url!r})"


class AsyncRemoteLongTermMemory:
    """`LongTermMemory` over HTTP, awaited: remember / recall / forget."""

    def __init__(self, http: _AsyncHttp) -> None:
        self._http = http

    async def remember(
        self,
        text: str,
        *,
        scope: str | None = None,
        kind: str = "note",
        metadata: Mapping[str, Any] | None = None,
        key: str | None = None,
        valid_from: When | None = None,
    ) -> MemoryId:
        return await self._http.run(w.LongTerm.remember(text, scope, kind, metadata, key, valid_from))

    async def update(
        self,
        memory_id: str,
        text: str,
        *,
        kind: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        valid_from: When | None = None,
    ) -> MemoryId:
        return await self._http.run(w.LongTerm.update(memory_id, text, kind, metadata, valid_from))

    async def history(self, memory_id: str) -> list[Recalled]:
        return await self._http.run(w.LongTerm.history(memory_id))

    async def remember_many(self, items: Iterable[MemoryInput | Mapping[str, Any]]) -> list[Remembered]:
        return await self._http.run(w.LongTerm.remember_many(items))

    async def recall(
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
        return await self._http.run(w.LongTerm.recall(query, scope, k, kinds, where, min_score, as_of, include_superseded))

    async def forget(self, memory_id: str) -> None:
        await self._http.run(w.LongTerm.forget(memory_id))

    async def forget_scope(self, scope: str) -> int:
        return await self._http.run(w.LongTerm.forget_scope(scope))

    async def get(self, memory_id: str) -> Recalled:
        return await self._http.run(w.LongTerm.get(memory_id))

    async def all(
        self,
        *,
        scope: str | None = None,
        kinds: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        as_of: When | None = None,
        include_superseded: bool = False,
    ) -> list[Recalled]:
        return await self._http.run(w.LongTerm.all(scope, kinds, where, as_of, include_superseded))


class AsyncRemoteEpisodeLog:
    """`EpisodeLog` over HTTP, awaited: record episodes, find similar successes, erase them."""

    def __init__(self, http: _AsyncHttp) -> None:
        self._http = http

    async def record(
        self,
        *,
        goal: str,
        actions: Sequence[str],
        outcome: str,
        success: bool,
        scope: str | None = None,
        tags: Sequence[str] = (),
    ) -> Episode:
        return await self._http.run(w.Episodes.record(goal, actions, outcome, success, scope, tags))

    async def record_many(self, items: Sequence[Mapping[str, Any]]) -> list[Episode]:
        return await self._http.run(w.Episodes.record_many(items))

    async def similar_successes(
        self, situation: str, *, k: int = 3, scope: str | None = None, include_unscoped: bool = True,
        min_score: float | None = None,
    ) -> list[Episode]:
        return await self._http.run(w.Episodes.similar_successes(situation, k, scope, include_unscoped, min_score))

    async def episodes(self, *, scope: str | None = None, success: bool | None = None) -> list[Episode]:
        return await self._http.run(w.Episodes.episodes(scope, success))

    async def count(self) -> int:
        """How many episodes there are (`len()` of the log)."""
        return await self._http.run(w.Episodes.count())

    async def get(self, episode_id: str) -> Episode:
        return await self._http.run(w.Episodes.get(episode_id))

    async def forget(self, episode_id: str) -> None:
        await self._http.run(w.Episodes.forget(episode_id))

    async def forget_scope(self, scope: str) -> int:
        return await self._http.run(w.Episodes.forget_scope(scope))

    async def forget_unscoped(self) -> int:
        return await self._http.run(w.Episodes.forget_unscoped())



class AsyncRemoteCaseBase:
    """The tenant's shared case base over HTTP, awaited: the service de-identifies each case it is sent."""

    def __init__(self, http: _AsyncHttp) -> None:
        self._http = http

    async def add(self, ticket: Ticket, *, source_scope: str) -> Episode | None:
        """Share a successfully resolved ticket; the case the service wrote, or None when nothing generic was left."""
        return await self._http.run(w.Cases.add(ticket, source_scope))

    async def similar(
        self, situation: str, *, k: int, exclude_source: str | None = None, min_score: float | None = None
    ) -> list[Episode]:
        """The shared cases most like `situation`, without those made from `exclude_source`'s tickets."""
        return await self._http.run(w.Cases.similar(situation, k, exclude_source, min_score))


class AsyncRemoteFactStore:
    """`FactStore` over HTTP, awaited: authoritative facts by key."""

    def __init__(self, http: _AsyncHttp) -> None:
        self._http = http

    async def set(self, key: str, value: Any, *, description: str | None = None) -> Fact:
        return await self._http.run(w.Facts.set(key, value, description))

    async def get(self, key: str) -> Fact:
        return await self._http.run(w.Facts.get(key))

    async def lookup(self, key: object) -> str:
        """The value as text for a model, or exactly UNKNOWN (for any key, even a bad one)."""
        return await self._http.run(w.Facts.lookup(key))

    async def delete(self, key: str, *, purge: bool = False) -> None:
        await self._http.run(w.Facts.delete(key, purge))

    async def keys(self) -> builtins.list[str]:
        return await self._http.run(w.Facts.keys())

    async def list(self) -> builtins.list[Fact]:
        return await self._http.run(w.Facts.list())

    async def history(self, key: str) -> builtins.list[tuple[Any, float]]:
        return await self._http.run(w.Facts.history(key))

    async def tool_schema(self, *, name: str = "lookup_policy", description: str | None = None) -> dict[str, Any]:
        """The lookup_policy schema over the current keys (built by the library's own function)."""
        return await self._http.run(w.Facts.tool_schema(name, description))

    async def tool_description(self) -> str:
        return await self._http.run(w.Facts.tool_description())

    async def set_tool_description(self, description: str | None) -> str:
        return await self._http.run(w.Facts.set_tool_description(description))

    async def descriptions(self) -> dict[str, str]:
        """Every key with the description it was set with ("" for none), for tool schemas."""
        return await self._http.run(w.Facts.descriptions())


class AsyncRemoteDocumentStore:
    """`DocumentStore` over HTTP, awaited; a path is read here, on the client, never by the service."""

    def __init__(self, http: _AsyncHttp) -> None:
        self._http = http

    async def ingest(
        self, text: str | os.PathLike[str], *, source: str | None = None, scope: str | None = None
    ) -> list[str]:
        """A string is the document's text; a `Path` is read here, as `ingest_file` does."""
        return await self._http.run(w.Docs.ingest(text, source, scope))

    async def ingest_file(self, path: str | os.PathLike[str], *, source: str | None = None, scope: str | None = None) -> list[str]:
        """Read a local UTF-8 file (on this client) and send its text."""
        return await self._http.run(w.Docs.ingest_file(path, source, scope))

    async def ingest_text(self, text: str, *, source: str, scope: str | None = None) -> list[str]:
        return await self._http.run(w.Docs.ingest_text(text, source, scope))

    async def search(
        self, query: str, *, k: int = 5, scope: str | None = None, source: str | None = None,
        min_score: float | None = None,
    ) -> list[DocHit]:
        return await self._http.run(w.Docs.search(query, k, scope, source, min_score))

    async def sources(self, *, scope: str | None = None) -> list[str]:
        return await self._http.run(w.Docs.sources(scope))

    async def delete_source(self, source: str, *, scope: str | None = None) -> int:
        return await self._http.run(w.Docs.delete_source(source, scope))
