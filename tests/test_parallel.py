"""The idle-core meter that decides whether a scope's first read runs beside its query's embedding,
and the thread it then runs on."""

from __future__ import annotations

from pathlib import Path

from fourfold._parallel import WINDOW, Helpers, IdleMeter, run_beside


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
    _stat(stat, idle=1000, busy=1000)
    meter = IdleMeter(stat, clock=clock, cores=2)  # the first window starts
    _stat(stat, idle=1001, busy=1001)
    assert not meter.spare_core()  # not a window yet
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


def test_a_new_meter_measures_its_first_window_from_when_it_was_made(tmp_path: Path) -> None:
    stat, clock = tmp_path / "stat", _Clock()
    _stat(stat, idle=1000, busy=1000)
    meter = IdleMeter(stat, clock=clock, cores=2)
    clock.now += 2 * WINDOW
    _stat(stat, idle=1010, busy=1010)
    assert meter.spare_core()  # the first call already answers from a whole window


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


def test_a_helper_hands_back_the_result_or_the_error() -> None:
    import threading

    import pytest

    helpers = Helpers(2)
    future = helpers.try_run(threading.get_ident)
    assert future is not None and future.result(timeout=5) != threading.get_ident()

    def fail() -> None:
        raise KeyError("gone")

    failing = helpers.try_run(fail)
    assert failing is not None
    with pytest.raises(KeyError, match="gone"):
        failing.result(timeout=5)


def test_with_every_helper_busy_the_caller_is_told_to_do_the_work_itself() -> None:
    """Never queued: concurrent callers (many requests reading at once) must not wait on each other."""
    import threading

    helpers = Helpers(2)
    release = threading.Event()
    busy = [helpers.try_run(lambda: release.wait(10)) for _ in range(2)]
    assert all(f is not None for f in busy)
    assert helpers.try_run(lambda: 1) is None
    release.set()
    for f in busy:
        assert f is not None and f.result(timeout=5) is True
    again = helpers.try_run(lambda: 2)  # a helper is idle again once its call returned
    assert again is not None and again.result(timeout=5) == 2


def test_helpers_keep_their_threads_and_work_in_a_forked_child() -> None:
    """A database keeps a connection per thread: a new thread a call would leave one a call."""
    import multiprocessing
    import threading

    seen = set()
    for _ in range(50):
        future = run_beside(threading.get_ident)
        if future is not None:
            seen.add(future.result(timeout=5))
    assert 1 <= len(seen) <= 2 and threading.get_ident() not in seen
    child = multiprocessing.get_context("fork").Process(target=_in_child)
    child.start()
    child.join(30)
    assert child.exitcode == 0  # not hung on the parent's threads, which a fork does not copy


def _in_child() -> None:
    future = run_beside(lambda: 7)
    assert future is not None and future.result(timeout=10) == 7
