"""Crash safety: writers SIGKILLed at random moments never lose an acknowledged write.

The workload lives in benchmarks/reliability.py (the benchmark runs it longer); each cycle
forks a fresh writer from a clean multiprocessing forkserver, which first verifies what
the earlier cycles left, then writes to all three stores until it is killed.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import reliability as rel
from fourfold import Memory, doctor
from fourfold.embeddings import HashEmbedder

CYCLES = 50


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, rel.CrashResult]:
    root = tmp_path_factory.mktemp("crash")
    return root / "data", rel.crash_cycles(root / "data", cycles=CYCLES, seed=20261129, max_delay=0.2)


def test_every_cycle_reopens_with_every_acknowledged_write_exactly_once(crashed: tuple[Path, rel.CrashResult]) -> None:
    _, result = crashed
    assert result.cycles == CYCLES  # cycles 0-48 verified by the next writer, cycle 49 by a final check
    assert result.open_errors == []
    assert result.lost == []
    assert result.dupes == []
    assert result.partial == []  # no torn memory, episode or fact, no half of a batch
    assert result.index_damage == 0
    assert result.survived == result.cycles
    assert result.acked > CYCLES and result.present == result.acked


def test_torn_last_lines_never_hide_earlier_episodes_and_doctor_quarantines_them(
    crashed: tuple[Path, rel.CrashResult],
) -> None:
    data_dir, result = crashed
    assert result.torn_lines == CYCLES // 10
    final = result.verdicts[-1]
    skipped = [w for w in final["warnings"] if "corrupt episode line" in w]
    # Each torn write is one skipped line, nothing more; a torn line still at the very end
    # has no newline yet, so readers wait for it instead of reporting it.
    assert len(skipped) in (result.torn_lines - 1, result.torn_lines)
    report = doctor.check(data_dir)
    assert [f.problem.split(":")[0] for f in report.findings] == ["episodes"]
    repaired = doctor.repair(data_dir)
    assert repaired.ok, repaired.findings
    quarantine = (data_dir / "episodes.jsonl.quarantine").read_bytes().splitlines()
    assert len(quarantine) == result.torn_lines
    acks = rel.read_acks(data_dir.parent / f"{data_dir.name}.acks")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean log now: no line is skipped
        with rel.open_memory(data_dir) as mem:
            verdict = rel.judge(rel.snapshot(mem), acks)
    assert verdict["lost"] == [] and verdict["partial"] == []


def test_a_torn_last_line_is_ended_by_the_next_append(tmp_path: Path) -> None:
    with Memory.open(tmp_path, embedder=HashEmbedder()) as mem:
        first = mem.episodes.record(goal="Parcel A1 late", actions=[], outcome="resent", success=True)
    log = tmp_path / "episodes.jsonl"
    whole = log.read_bytes()
    with open(log, "ab") as f:
        f.write(whole[: len(whole) // 2])  # a second record cut short, no newline
    with Memory.open(tmp_path, embedder=HashEmbedder()) as mem:
        assert [e.id for e in mem.episodes.episodes()] == [first.id]
        second = mem.episodes.record(goal="Parcel A2 late", actions=[], outcome="resent", success=True)
    with pytest.warns(RuntimeWarning, match=r"episodes.jsonl:2: skipped a corrupt episode line"):
        with Memory.open(tmp_path, embedder=HashEmbedder()) as mem:
            assert [e.id for e in mem.episodes.episodes()] == [first.id, second.id]
    assert json.loads(log.read_bytes().splitlines()[-1])["id"] == second.id
