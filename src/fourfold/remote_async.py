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

from types import TracebackType
from typing import ParamSpec, TypeVar

import httpx

from fourfold import _wire as w

__all__ = ["AsyncRemoteMemory", "connect_async"]

T = TypeVar("T")
P = ParamSpec("P")


def connect_async(url: str, *, api_key: str | None = None, timeout: float = 30.0) -> AsyncRemoteMemory:
    """An `AsyncRemoteMemory` for the service at `url` (the key defaults to $FOURFOLD_API_KEY)."""
    return AsyncRemoteMemory(url, api_key=api_key, timeout=timeout)


class _AsyncHttp(w.Connection[httpx.AsyncClient]):
    """One async HTTP client: sends a call's request and reads its answer (`fourfold._wire`)."""

    async def run(self, call: w.Call[T]) -> T:
        try:
            response = await self.client.request(**call.request_args())
        except httpx.HTTPError as exc:
            raise w.unreachable(self.client.base_url, exc) from None
        return w.answer(call, response)


class AsyncRemoteMemory(w.Served[httpx.AsyncClient], w.AsyncPart, w.Root):
    """Long-term, episodic and semantic memory of one tenant, served by `fourfold serve`, awaited."""

    _connection, _client = _AsyncHttp, httpx.AsyncClient
    _http: _AsyncHttp
    long_term: AsyncRemoteLongTermMemory
    episodes: AsyncRemoteEpisodeLog
    cases: AsyncRemoteCaseBase
    facts: AsyncRemoteFactStore
    docs: AsyncRemoteDocumentStore

    async def close(self) -> None:
        if self._http.owned:
            await self._http.client.aclose()

    async def __aenter__(self) -> AsyncRemoteMemory:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


class AsyncRemoteLongTermMemory(w.AsyncPart, w.LongTerm):
    """`LongTermMemory` over HTTP, awaited: remember / recall / forget."""


class AsyncRemoteEpisodeLog(w.AsyncPart, w.Episodes):
    """`EpisodeLog` over HTTP, awaited: record episodes, find similar successes, erase them."""


class AsyncRemoteCaseBase(w.AsyncPart, w.Cases):
    """The tenant's shared case base over HTTP, awaited: the service de-identifies each case it is sent."""


class AsyncRemoteFactStore(w.AsyncPart, w.Facts):
    """`FactStore` over HTTP, awaited: authoritative facts by key."""


class AsyncRemoteDocumentStore(w.AsyncPart, w.Docs):
    """`DocumentStore` over HTTP, awaited; a path is read here, on the client, never by the service."""


