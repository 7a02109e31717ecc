"""Crash safety: writers SIGKILLed at random moments never lose an acknowledged write.

The workload lives in harness.reliability (benchmarks/reliability.py runs it longer); each cycle
forks a fresh writer from a clean multiprocessing forkserver, which first verifies what
the earlier cycles left, then writes to all three stores until it is killed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import reliability as rel

pytestmark = pytest.mark.slow  # 50 writer processes killed in turn: about a minute
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
