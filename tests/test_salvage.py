"""A damaged SQLite store: `fourfold export --salvage` exports the rows that can be read, counts
the rows lost, invents nothing, and leaves the damaged file as it was."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from conftest import OpenMemory
from fourfold import StoreCorrupt
from fourfold.cli import main
from fourfold.embeddings import HashEmbedder
from fourfold.salvage import export_salvaged

S = "customer:1"


def _truncated_store(open_memory: OpenMemory, root: Path) -> dict[str, str]:
    """A data dir cut in half after a load of memories; its memories' texts by id, before the cut."""
    written = _store(open_memory, root)
    path = root / "fourfold.sqlite3"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return written


def _store(open_memory: OpenMemory, root: Path) -> dict[str, str]:
    """A data dir after a load of memories, its write-ahead log folded in; its memories' texts by id."""
    with open_memory(root) as mem:
        mem.facts.set("refund_window_days", 30)
        for i in range(3):
            mem.episodes.record(goal=f"Parcel {i} late", actions=["traced"], outcome="resent", success=True)
        mem.long_term.remember_many([{"text": f"The customer owns device {i} bought in store {i}", "scope": S}
                                     for i in range(400)])
        written = {r.id: r.text for r in mem.long_term.all(scope=S)}
    path = root / "fourfold.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    return written


def test_a_salvaged_export_holds_the_readable_rows_and_counts_the_lost(open_memory: OpenMemory, tmp_path: Path) -> None:
    root = tmp_path / "damaged"
    written = _truncated_store(open_memory, root)
    path = root / "fourfold.sqlite3"
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(StoreCorrupt, match="truncated"):
        open_memory(root)
    dump = tmp_path / "dump.jsonl"
    with dump.open("w", encoding="utf-8") as out:
        counts, salvage = export_salvaged(root, HashEmbedder(), out)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in root.iterdir()) == ["fourfold.json", "fourfold.sqlite3"]  # nothing written beside it
    recovered, lost = salvage.recovered["memories"], salvage.lost["memories"]
    assert 0 < recovered < len(written)
    assert lost is None or recovered + lost == len(written)  # unknown: the cut took the table's index too
    assert counts.memories == recovered and counts.episodes == 3 and counts.facts == 1

    fresh = open_memory(tmp_path / "fresh")
    with dump.open(encoding="utf-8") as lines:
        from fourfold.transfer import import_memory

        import_memory(fresh, lines)
    back = {r.id: r.text for r in fresh.long_term.all(scope=S)}
    assert len(back) == recovered and all(written[i] == text for i, text in back.items())  # nothing invented
    assert sorted(ep.goal for ep in fresh.episodes.episodes()) == [f"Parcel {i} late" for i in range(3)]
    assert fresh.facts.get("refund_window_days").value == 30


def test_the_export_command_salvages_and_says_what_was_lost(open_memory: OpenMemory, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "damaged"
    written = _truncated_store(open_memory, root)
    dump = tmp_path / "dump.jsonl"
    assert main(["--data-dir", str(root), "--embedder", "hash", "export", str(dump)]) != 0  # refused, not served in part
    assert "--salvage" in capsys.readouterr().err and not dump.exists()
    assert main(["--data-dir", str(root), "--embedder", "hash", "--json", "export", "--salvage", str(dump)]) == 0
    captured = capsys.readouterr()
    assert f"salvaged from {root}: " in captured.err and "memories " in captured.err and " lost" in captured.err
    exported = json.loads(captured.out)["memories"]
    items = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    memories = [item for item in items if item["type"] == "memory"]
    assert 0 < exported == len(memories) < len(written)
    assert all(written[item["id"]] == item["text"] for item in memories)


def test_a_file_whose_schema_cannot_be_read_has_nothing_to_salvage(open_memory: OpenMemory, tmp_path: Path) -> None:
    root = tmp_path / "damaged"
    _truncated_store(open_memory, root)
    (root / "fourfold.sqlite3").write_bytes(b"this is not sqlite" * 500)
    with pytest.raises(StoreCorrupt, match="restore it from a backup"), (tmp_path / "dump.jsonl").open("w") as out:
        export_salvaged(root, HashEmbedder(), out)


def test_rows_around_a_damaged_page_are_read_one_by_one_and_the_lost_counted(open_memory: OpenMemory, tmp_path: Path) -> None:
    root = tmp_path / "damaged"
    written = _store(open_memory, root)
    path = root / "fourfold.sqlite3"
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        leaves = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = 'memories' AND pagetype = 'leaf'"
                                             " ORDER BY pageno")]
    conn.close()
    raw = bytearray(path.read_bytes())
    middle = leaves[len(leaves) // 2]
    raw[(middle - 1) * page_size : (middle - 1) * page_size + 64] = b"\xff" * 64  # one leaf of the memories table
    path.write_bytes(bytes(raw))
    with (tmp_path / "dump.jsonl").open("w", encoding="utf-8") as out:
        counts, salvage = export_salvaged(root, HashEmbedder(), out)
    recovered, lost = salvage.recovered["memories"], salvage.lost["memories"]
    assert lost is not None and 0 < lost < len(written) // 2
    assert recovered + lost == len(written) and counts.memories == recovered
    assert (salvage.recovered["facts"], salvage.lost["facts"]) == (1, 0)
    assert f"memories {recovered} recovered, {lost} lost" in salvage.summary()


def test_the_doctor_repairs_a_truncated_store_in_place_with_the_same_rows(open_memory: OpenMemory, tmp_path: Path) -> None:
    from fourfold import doctor

    root = tmp_path / "damaged"
    written = _truncated_store(open_memory, root)
    (finding,) = doctor.check(root).findings
    assert finding.repairable
    assert doctor.repair(root).ok
    assert list(root.glob("fourfold.sqlite3.damaged-*"))  # the original is kept
    with open_memory(root) as mem:
        kept = {r.id: r.text for r in mem.long_term.all(scope=S)}
        assert 0 < len(kept) < len(written) and all(written[i] == text for i, text in kept.items())
        assert mem.facts.get("refund_window_days").value == 30
