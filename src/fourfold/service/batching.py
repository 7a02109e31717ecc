"""Group commit: concurrent `remember` requests of one tenant share one `remember_many` write.

An embedded Chroma write costs tens of milliseconds whatever its size, so under load the
service writes what has queued up while the previous write ran, in one library call. Each
request still gets exactly what `remember` would have answered: if the batch is refused
(one invalid item refuses them all), its items are written one by one instead, and a
repeat of a memory already in the batch is reported as not created.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fourfold.errors import FourfoldError
from fourfold.longterm import LongTermMemory
from fourfold.types import Remembered

__all__ = ["GroupCommit"]


@dataclass
class _Slot:
    item: Mapping[str, Any]
    result: Remembered | None = None
    error: FourfoldError | None = None
    failure: BaseException | None = None
    done: bool = False


class GroupCommit:
    """`remember(item)` for many threads at once; one write at a time, as large as it comes."""

    def __init__(self, long_term: LongTermMemory, *, max_batch: int = 128) -> None:
        self.long_term = long_term
        self.max_batch = max_batch
        self._queue: list[_Slot] = []
        self._queue_lock = threading.Lock()
        self._write_lock = threading.Lock()

    def remember(self, item: Mapping[str, Any]) -> Remembered:
        slot = _Slot(item)
        with self._queue_lock:
            self._queue.append(slot)
        while not slot.done:
            with self._write_lock:  # whoever holds it writes everything queued so far
                if slot.done:
                    break
                with self._queue_lock:
                    batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
                try:
                    self._commit(batch)
                except BaseException as exc:  # not the library's: each unanswered request of the batch
                    for other in batch:  # gets it (left undone, they would wait for a write that never comes)
                        if not other.done:
                            other.failure, other.done = exc, True
        if slot.failure is not None:
            raise slot.failure
        if slot.error is not None:
            raise slot.error
        assert slot.result is not None
        return slot.result

    def _warm(self, batch: list[_Slot]) -> None:
        """Index the written scopes now, before answering: their first recall then scans nothing."""
        try:
            self.long_term.warm({slot.item.get("scope") for slot in batch})
        except FourfoldError:  # the write stands; a recall will scan the scope itself
            pass

    def _commit(self, batch: list[_Slot]) -> None:
        try:
            results = self.long_term.remember_many([s.item for s in batch])
        except FourfoldError:
            for slot in batch:  # one by one: each request gets its own answer
                try:
                    slot.result = self.long_term.remember_many([slot.item])[0]
                except FourfoldError as exc:
                    slot.error = exc
                slot.done = True
            return
        seen: set[str] = set()
        self._warm(batch)
        for slot, result in zip(batch, results, strict=True):
            # As if sent one after another: only the first of identical memories is new.
            slot.result = result if result.id not in seen else Remembered(
                result.id, result.text, redactions=result.redactions, created=False, supersedes=result.supersedes)
            seen.add(result.id)
            slot.done = True
