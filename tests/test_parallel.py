"""The idle-core meter that decides whether a scope's first read runs beside its query's embedding,
and the thread it then runs on."""

from __future__ import annotations

from pathlib import Path

from fourfold._parallel import WINDOW, IdleMeter, on_thread


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _stat(path: Path, idle: int, busy: int) -> None:
    # user nice system idle iowait irq softirq steal guest guest_nice, then the per-cpu lines
    path.write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\n")


def test_a_core_is_spare_only_after_a_window_that_shows_one_idle(tmp_path: Path) -> None:
    stat, clock = tmp_path / "stat", _Clock()
    meter = IdleMeter(stat, clock=clock, cores=2)
    _stat(stat, idle=1000, busy=1000)
    assert not meter.spare_core()  # nothing measured yet
    clock.now += 2 * WINDOW
    _stat(stat, idle=1010, busy=1010)  # half of 2 cores idle: one core
    assert meter.spare_core()
    _stat(stat, idle=1010, busy=1030)  # read again only after a window
    assert meter.spare_core()
    clock.now += 2 * WINDOW
    assert not meter.spare_core()  # both cores busy since
    clock.now += 2 * WINDOW
    _stat(stat, idle=1014, busy=1046)  # a fifth of 2 cores idle: less than half a core
    assert not meter.spare_core()


def test_without_proc_stat_no_core_is_spare(tmp_path: Path) -> None:
    clock = _Clock()
    meter = IdleMeter(tmp_path / "missing", clock=clock)
    assert not meter.spare_core()
    clock.now += 1
    assert not meter.spare_core()
    (tmp_path / "odd").write_text("intr 1 2 3\n")
    assert not IdleMeter(tmp_path / "odd", clock=clock).spare_core()


def test_this_machine_is_read() -> None:
    """/proc/stat parses here: a reading exists after the first call (Linux, as CI)."""
    meter = IdleMeter()
    meter.spare_core()
    assert meter._read() is not None


def test_on_thread_hands_back_the_result_or_the_error() -> None:
    import threading

    import pytest

    where: list[int] = []
    assert on_thread(lambda: where.append(threading.get_ident()) or 42).result(timeout=5) == 42
    assert where and where[0] != threading.get_ident()

    def fail() -> None:
        raise KeyError("gone")

    with pytest.raises(KeyError, match="gone"):
        on_thread(fail).result(timeout=5)


def test_on_thread_keeps_its_threads_and_works_in_a_forked_child() -> None:
    """A database keeps a connection per thread: a new thread a call would leave one a call."""
    import multiprocessing
    import threading

    seen = {on_thread(threading.get_ident).result(timeout=5) for _ in range(50)}
    assert 1 <= len(seen) <= 2 and threading.get_ident() not in seen
    child = multiprocessing.get_context("fork").Process(target=_in_child)
    child.start()
    child.join(30)
    assert child.exitcode == 0  # not hung on the parent's threads, which a fork does not copy


def _in_child() -> None:
    assert on_thread(lambda: 7).result(timeout=10) == 7
