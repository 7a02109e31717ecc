"""What an application needs of a memory: satisfied by `Memory` (embedded) and `RemoteMemory` (served).

Code written against `MemoryLike` (the support agent, your own agent) runs on either, so
moving from a data dir to `fourfold serve` is a change of configuration, not of code. The
protocols name only the calls both sides offer with the same meaning; `CaseLog` and
`Consolidating` are capabilities only the embedded stores have (`isinstance` tells).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from fourfold.types import DocHit, Episode, Fact, Recalled, Remembered

if TYPE_CHECKING:
    from fourfold.agent.deidentify import Ticket
    from fourfold.episodic.log import LogCursor
    from fourfold.longterm.consolidate import Consolidator
    from fourfold.longterm.store import MemoryInput
    from fourfold.stores.database import Lock

__all__ = ["CaseLog", "Consolidating", "DocsLike", "EpisodesLike", "FactsLike", "LongTermLike", "MemoryLike",
           "SharedCases"]


class LongTermLike(Protocol):
    def recall(
        self, query: str, *, scope: str | None = None, k: int = 3, min_score: float | None = None
    ) -> list[Recalled]: ...

    def remember_many(self, items: Iterable[MemoryInput | Mapping[str, Any]]) -> list[Remembered]: ...

    def all(self, *, scope: str | None = None, kinds: Sequence[str] | None = None) -> list[Recalled]: ...

    def profile(self, scope: str, *, max_tokens: int = ...) -> list[Recalled]: ...


@runtime_checkable
class Consolidating(Protocol):
    """Long-term memory that can judge new memories against the current ones as it writes them."""

    consolidator: Consolidator | None

    def remember_many(
        self, items: Iterable[MemoryInput | Mapping[str, Any]], *, consolidate: Consolidator | None = None
    ) -> list[Remembered]: ...


class EpisodesLike(Protocol):
    def record(
        self, *, goal: str, actions: Sequence[str], outcome: str, success: bool,
        scope: str | None = None, tags: Sequence[str] = (), problem: str = "", fix: str = "",
    ) -> Episode: ...

    def similar_successes(
        self, situation: str, *, k: int = 3, scope: str | None = None, include_unscoped: bool = True,
        min_score: float | None = None,
    ) -> list[Episode]: ...

    def episodes(self, *, scope: str | None = None, success: bool | None = None) -> list[Episode]: ...


@runtime_checkable
class CaseLog(Protocol):
    """An episode log that keeps which scope a derived episode came from (the shared cases)."""

    def insert(self, episodes: Sequence[Episode], *, derived_from: Mapping[str, str] | None = None) -> None: ...

    def sources(self, ids: Sequence[str]) -> dict[str, str]: ...

    def move(self, episode_id: str, *, from_scope: str, to_scope: str) -> Episode: ...

    def forget(self, episode_id: str) -> None: ...

    def since(self, cursor: LogCursor | None = None) -> tuple[LogCursor, list[Episode], bool]: ...

    def lock(self, name: str) -> Lock: ...


@runtime_checkable
class SharedCases(Protocol):
    """A desk's shared case base: what `SupportAgent` writes on resolve and reads every turn
    (`fourfold.agent.cases.CaseBase` in-process, `RemoteCaseBase` over the service)."""

    def add(self, ticket: Ticket, *, source_scope: str) -> Episode | None: ...

    def similar(
        self, situation: str, *, k: int, exclude_source: str | None = None, min_score: float | None = None
    ) -> list[Episode]: ...


class FactsLike(Protocol):
    def lookup(self, key: object) -> str: ...

    def search(self, query: str, *, k: int = 3, min_score: float = ...) -> list[Fact]: ...

    def tool_schema(self, *, name: str = "lookup_policy", description: str | None = None) -> dict[str, Any]: ...

    def descriptions(self) -> dict[str, str]: ...

    def list(self) -> list[Fact]: ...


class DocsLike(Protocol):
    def search(
        self, query: str, *, k: int = 5, scope: str | None = None, source: str | None = None,
        min_score: float | None = None,
    ) -> list[DocHit]: ...


class MemoryLike(Protocol):
    """Long-term, episodic and semantic memory of one agent, embedded or served."""

    @property
    def long_term(self) -> LongTermLike: ...

    @property
    def episodes(self) -> EpisodesLike: ...

    @property
    def facts(self) -> FactsLike: ...

    @property
    def docs(self) -> DocsLike: ...

    def forget_scope(self, scope: str) -> dict[str, int]: ...


if TYPE_CHECKING:  # mypy proves that both memories satisfy the protocol
    from fourfold.memory import Memory
    from fourfold.remote import RemoteMemory

    def _embedded(memory: Memory) -> MemoryLike:
        return memory

    def _served(memory: RemoteMemory) -> MemoryLike:
        return memory
