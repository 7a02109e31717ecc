"""Work beside the caller's: whether a core is idle right now, and helper threads to run it on.

A second thread helps a caller only when a core is idle.

Two threads of one Python process take turns at the GIL. Beside a model that runs outside it
(ONNX Runtime), a second thread doing Python work finishes within the model's time when a
core is idle. When every core is busy, the two only take turns, and the caller also waits
for the GIL after the model returns, so a scope read on a second thread costs the caller
more than the same read in line. So the work is split only when the machine's recent idle
time says a core is free, as `make -l` starts parallel jobs only below a load.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["Helpers", "IdleMeter", "overlap", "run_beside", "spare_core"]

T = TypeVar("T")
W = TypeVar("W")

#: Idle time is measured over at least this many seconds (the kernel counts it in 10 ms ticks).
WINDOW = 0.1
#: A core counts as spare when at least this much of one was idle over the window.
SPARE = 0.5


class IdleMeter:
    """Idle cores over the last `WINDOW` seconds, from Linux's /proc/stat (cheap: one small read)."""

    def __init__(self, path: str | os.PathLike[str] = "/proc/stat", *, clock: Callable[[], float] = time.monotonic,
                 cores: int | None = None) -> None:
        self.path = Path(path)
        self._clock = clock
        self._cores = cores or os.cpu_count() or 1
        self._lock = threading.Lock()
        self._spare = False
        # The first window starts now: a process's first calls (its first searches) would
        # otherwise all run in line for a window, however idle the machine (perf.py's episode
        # loop: its first 22 of 200 searches).
        first = self._read()
        self._last: tuple[float, int, int] | None = None if first is None else (clock(), *first)

    def spare_core(self) -> bool:
        """Whether a core was idle over the last window (the first one starts when the meter is
        made); False until a window was measured, and where the machine does not say (no /proc/stat)."""
        now = self._clock()
        with self._lock:
            if self._last is not None and now - self._last[0] < WINDOW:
                return self._spare
        reading = self._read()
        with self._lock:
            if reading is None:
                return False
            last, self._last = self._last, (now, *reading)
            if last is not None and reading[1] > last[2]:
                idle, total = reading[0] - last[1], reading[1] - last[2]
                self._spare = self._cores * idle / total >= SPARE
            return self._spare

    def _read(self) -> tuple[int, int] | None:
        try:
            with self.path.open("rb") as f:
                fields = f.readline().split()
        except OSError:
            return None
        if len(fields) < 5 or fields[0] != b"cpu":
            return None
        # user nice system idle iowait irq softirq steal (guest time is counted in user already)
        ticks = [int(x) for x in fields[1:9]]
        return ticks[3] + (ticks[4] if len(ticks) > 4 else 0), sum(ticks)


_meter = IdleMeter()


def spare_core() -> bool:
    """Whether this machine had a core idle over the last moment (see `IdleMeter`)."""
    return _meter.spare_core()


class Helpers:
    """Up to `size` long-lived threads that take a call beside the caller's only when one is idle.

    Long-lived, not a thread a call: a database keeps a connection per thread, so a thread a
    call would open (and keep) a connection a call. Never queued: a caller that finds every
    helper busy (many requests reading at once) does its work itself, so concurrent callers
    never wait on each other here.
    """

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self._idle = threading.Semaphore(size)
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._started = 0
        self._lock = threading.Lock()

    def try_run(self, fn: Callable[[], T]) -> Future[T] | None:
        """`fn()` on an idle helper (its result or error through the future), or None if none is idle."""
        if not self._idle.acquire(blocking=False):
            return None
        future: Future[T] = Future()
        self._calls.put((fn, future))
        with self._lock:
            if self._started < self.size:
                self._started += 1
                threading.Thread(target=self._work, name="fourfold-beside", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            fn, future = self._calls.get()
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the caller, which raises it
                future.set_exception(exc)
            finally:
                self._idle.release()


_helpers = Helpers()


def run_beside(fn: Callable[[], T]) -> Future[T] | None:
    """`fn()` on one of this process's helper threads, or None when every one is busy (`Helpers`)."""
    return _helpers.try_run(fn)


def overlap(read: Callable[[], T], meanwhile: Callable[[], W], *, spare: Callable[[], bool] = spare_core,
            ) -> tuple[T, W] | None:
    """`read()` on a helper thread while this one runs `meanwhile()` (a model outside the GIL),
    when `spare()` says a core is idle and a helper is free; None otherwise, and the caller does
    both in line. Both are waited for; the read's error, if any, wins over `meanwhile`'s."""
    reading = run_beside(read) if spare() else None
    if reading is None:
        return None
    try:
        other = meanwhile()
    finally:
        result = reading.result()
    return result, other


def _forget_helpers() -> None:
    """In a forked child: the helpers' threads were not copied, so new ones are made."""
    global _helpers
    _helpers = Helpers()


os.register_at_fork(after_in_child=_forget_helpers)
