"""Concurrency: several processes write one data dir at once; nothing is lost, reads stay sound."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from conftest import OpenMemory
from fourfold import LockTimeout, Memory
from fourfold.config import MemoryConfig
from harness import reliability as rel

WRITERS, PER_WRITER = 4, 12


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> rel.ConcurrencyResult:
    return rel.concurrency(tmp_path_factory.mktemp("conc") / "data", writers=WRITERS, per_writer=PER_WRITER)


def test_concurrent_writers_to_all_three_stores_lose_nothing(embedded: rel.ConcurrencyResult) -> None:
    assert embedded.writer_exits == [0] * WRITERS
    assert embedded.acked == WRITERS * PER_WRITER * 3
    assert (embedded.lost, embedded.dupes, embedded.partial) == ([], [], [])
    assert embedded.present == embedded.acked


def test_concurrent_readers_never_see_damaged_or_foreign_records(embedded: rel.ConcurrencyResult) -> None:
    assert embedded.reads > 0
    assert not [e for e in embedded.reader_errors if "StoreUnavailable" not in e]


def test_readers_alongside_embedded_writers_never_fail(embedded: rel.ConcurrencyResult) -> None:
    assert embedded.reader_errors == []


def test_a_process_reads_what_another_process_wrote_after_it_opened(memory: Memory) -> None:
    """The minimal repro of the reader defect above, kept apart so the fix is easy to check."""
    import subprocess

    memory.long_term.remember("First note about parcel lockers", scope="customer:1")
    assert len(memory.long_term.recall("parcel lockers", scope="customer:1")) == 1
    code = ("from fourfold import Memory\nfrom fourfold.embeddings import HashEmbedder\n"
            f"with Memory.open({str(memory.data_dir)!r}, embedder=HashEmbedder()) as m:\n"
            "    m.long_term.remember('Second note about parcel lockers', scope='customer:1')\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    hits = memory.long_term.recall("parcel lockers", scope="customer:1", k=5)
    assert len(hits) == 2


def test_concurrent_embedded_writers_leave_chroma_index_whole(embedded: rel.ConcurrencyResult) -> None:
    assert embedded.index_damage == 0


def test_a_held_write_lock_ends_in_lock_timeout_never_a_hang(open_memory: OpenMemory) -> None:
    import sqlite3

    config = MemoryConfig(lock_timeout=0.3)
    mem = open_memory(config=config)
    other_process = sqlite3.connect(mem.data_dir / "fourfold.sqlite3", isolation_level=None)
    other_process.execute("BEGIN IMMEDIATE")  # another writer holds the database's write lock
    with pytest.raises(LockTimeout, match=r"locked by another writer for 0\.3s.*lock_timeout"):
        mem.long_term.remember("Prefers parcel lockers", scope="customer:1")
    with pytest.raises(LockTimeout):
        mem.facts.set("refund_window_days", 30)
    other_process.execute("ROLLBACK")
    other_process.close()
    mem.long_term.remember("Prefers parcel lockers", scope="customer:1")  # free again
    assert len(mem.long_term.all(scope="customer:1")) == 1


@pytest.mark.server
@pytest.mark.slow
def test_the_same_load_against_a_chroma_server_passes(chroma_server: str, tmp_path: Path) -> None:
    result = rel.concurrency(tmp_path / "data", writers=WRITERS, per_writer=PER_WRITER, chroma_url=chroma_server,
                             collection=f"rel_{uuid.uuid4().hex[:10]}")
    assert result.writer_exits == [0] * WRITERS
    assert (result.lost, result.dupes, result.partial) == ([], [], [])
    assert result.present == result.acked == WRITERS * PER_WRITER * 3
    assert result.reads > 0 and result.reader_errors == []
