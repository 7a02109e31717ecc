"""A wall clock that steps backwards (NTP, a resumed VM) never dates a write before its scope's
newest one: a new version still supersedes the one before it, and `as_of` keeps its answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import OpenMemory
from fourfold.config import MemoryConfig
from fourfold.longterm import LongTermMemory
from fourfold.longterm.versions import TICK, next_time
from fourfold.stores.vector import VectorStore
from fourfold.testing.clock import ManualClock

S = "customer:7"
HOUR = 3600.0


def test_next_time_is_the_clock_or_just_after_the_scopes_newest_write() -> None:
    assert next_time(1_000.25, None) == 1_000.25
    assert next_time(1_000.25, 999.0) == 1_000.25
    assert next_time(500.0, 1_000.0) == 1_000.0 + TICK
    assert next_time(1_000.0, 1_000.0) == 1_000.0 + TICK
    assert next_time(1_000.0000004, None) == 1_000.0  # microseconds, as every store reads back


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def lt(engine: str, memory_target: Path | str, open_memory: OpenMemory, clock: ManualClock) -> LongTermMemory:
    return open_memory(memory_target, config=MemoryConfig(clock=clock)).long_term


def test_a_version_written_after_the_clock_stepped_back_supersedes_the_current_one(
    lt: LongTermMemory, clock: ManualClock
) -> None:
    first = lt.remember("Prefers email", scope=S, key="channel")
    clock.advance(-HOUR)
    second = lt.remember("Prefers phone calls", scope=S, key="channel")
    assert second.supersedes == (first,)
    old, new = lt.history(second)
    assert [old.id, new.id] == [first, second]
    assert old.valid_from < new.valid_from == old.valid_to and new.valid_to is None
    assert [m.text for m in lt.all(scope=S)] == ["Prefers phone calls"]


def test_an_update_after_the_clock_stepped_back_is_the_newest_version(lt: LongTermMemory, clock: ManualClock) -> None:
    first = lt.remember("Ships to Lisbon", scope=S)
    clock.advance(-HOUR)
    second = lt.update(first, "Ships to Porto")
    assert second.supersedes == (first,)
    assert [m.text for m in lt.all(scope=S)] == ["Ships to Porto"]
    assert [h.id for h in lt.history(first)] == [first, second]


def test_as_of_keeps_its_answers_when_the_clock_steps_back(lt: LongTermMemory, clock: ManualClock) -> None:
    lt.remember("Has a premium plan", scope=S, key="plan")
    lt.remember("Owns a blue bicycle", scope=S)
    seen_at = clock.now()
    before = sorted(m.text for m in lt.all(scope=S, as_of=seen_at))
    clock.advance(-HOUR)
    lt.remember("Has a basic plan", scope=S, key="plan")
    lt.remember("Owns a red scooter", scope=S)
    assert sorted(m.text for m in lt.all(scope=S, as_of=seen_at)) == before
    assert sorted(m.text for m in lt.all(scope=S)) == ["Has a basic plan", "Owns a blue bicycle", "Owns a red scooter"]
    assert all(m.valid_from > seen_at for m in lt.all(scope=S) if m.text != "Owns a blue bicycle")


def test_write_times_follow_the_clock_again_once_it_catches_up(lt: LongTermMemory, clock: ManualClock) -> None:
    lt.remember("Speaks Portuguese", scope=S, key="language")
    clock.advance(-HOUR)
    held = lt.get(lt.remember("Speaks Spanish", scope=S, key="language").id)
    clock.advance(2 * HOUR)
    later = lt.get(lt.remember("Speaks French", scope=S, key="language").id)
    assert held.valid_from < later.valid_from == clock.now()


def test_scopes_keep_their_own_write_times(lt: LongTermMemory, clock: ManualClock) -> None:
    lt.remember("Lives in Lisbon", scope=S)
    clock.advance(-HOUR)
    other = lt.get(lt.remember("Lives in Oslo", scope="customer:8").id)
    assert other.valid_from == clock.now()  # another scope's newest write does not hold it back


def test_every_store_reads_its_scopes_newest_write_time(vector_store: VectorStore, clock: ManualClock) -> None:
    from fourfold.embeddings import HashEmbedder

    lt = LongTermMemory(vector_store, HashEmbedder(), clock=clock)
    lt.remember("Lives in Lisbon", scope=S)
    clock.advance(5.0)
    lt.remember("Works in Porto", scope=S)
    assert vector_store.last_written([S, "customer:none"]) == {S: clock.now()}
    clock.advance(-HOUR)
    newest = lt.get(lt.remember("Studies in Braga", scope=S).id)
    assert newest.valid_from == round(clock.now() + HOUR + TICK, 6)
