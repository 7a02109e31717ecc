"""Work beside the caller's: whether a core is idle right now, and a call on a thread of its own.

A second thread helps a caller only when a core is idle.

Two threads of one Python process take turns at the GIL. Beside a model that runs outside it
(ONNX Runtime), a second thread doing Python work finishes within the model's time when a
core is idle. When every core is busy, the two only take turns, and the caller also waits
for the GIL after the model returns: measured here, a first recall that read its scope on a
second thread cost 3.0-3.3 ms more than a later recall with the other core busy, against
1.6-1.7 ms read in line (0.1-0.6 ms more with the core idle). So the work is split only when
the machine's recent idle time says a core is free, as `make -l` starts parallel jobs only
below a load.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

__all__ = ["IdleMeter", "on_thread", "spare_core"]

T = TypeVar("T")

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
        self._last: tuple[float, int, int] | None = None  # (when, idle ticks, all ticks)
        self._spare = False

    def spare_core(self) -> bool:
        """Whether a core was idle over the last window; False until a window was measured,
        and where the machine does not say (no /proc/stat)."""
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


def on_thread(fn: Callable[[], T]) -> Future[T]:
    """`fn()` run on a thread beside the caller's; its result or its error comes through the future.

    Two long-lived threads, not one a call: a database keeps a connection per thread, so a
    thread a call would open (and keep) a connection a call. A forked child starts without them.
    """
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fourfold-beside")
        return _pool.submit(fn)


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    """In a forked child: the pool's threads were not copied, so it must not be used."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)
