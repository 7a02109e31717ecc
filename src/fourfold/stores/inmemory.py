"""A process-local vector store: fast tests, throwaway agents, and the conformance reference."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager

from fourfold.stores.vector import VectorRecord, VectorStore, WriteTicket

__all__ = ["InMemoryVectorStore"]


class InMemoryVectorStore(VectorStore):
    """Keeps records in dicts; nothing survives the process."""

    def __init__(self, *, embedder_identity: str = "") -> None:
        self.embedder_identity = embedder_identity
        self._records: dict[str, VectorRecord] = {}
        self._lock = threading.RLock()
        self._generation = itertools.count()
        self._current = next(self._generation)

    def _bump(self) -> None:
        self._current = next(self._generation)

    def add(self, records: Sequence[VectorRecord]) -> None:
        with self._lock:
            for record in records:
                self._records.setdefault(record.id, record)
            self._bump()

    def existing(self, ids: Sequence[str]) -> set[str]:
        with self._lock:
            return {i for i in ids if i in self._records}

    def get(self, ids: Sequence[str]) -> list[VectorRecord]:
        with self._lock:
            return [self._records[i] for i in ids if i in self._records]

    def scan(self, scope: str | None) -> list[VectorRecord]:
        with self._lock:
            return [r for r in self._records.values() if r.scope == scope]

    def delete(self, ids: Sequence[str]) -> None:
        with self._lock:
            for i in ids:
                self._records.pop(i, None)
            self._bump()

    def delete_scope(self, scope: str) -> int:
        with self._lock:
            doomed = [i for i, r in self._records.items() if r.scope == scope]
            for i in doomed:
                del self._records[i]
            self._bump()
            return len(doomed)

    def count(self) -> int:
        return len(self._records)

    def scopes(self) -> list[str | None]:
        with self._lock:
            return list({r.scope for r in self._records.values()})

    @contextmanager
    def writing(self) -> Iterator[WriteTicket]:
        with self._lock:
            ticket = WriteTicket(before=self._current)
            yield ticket
            ticket.generation = self._current

    def generation(self) -> Hashable:
        return self._current
