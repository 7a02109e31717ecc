"""Cross-process file locks with a timeout that ends in a clear error, never a hang."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from fourfold._files import private_dir, private_file
from fourfold.errors import LockTimeout

__all__ = ["FileLock", "ReentrantLock"]


class ReentrantLock(ABC):
    """A lock whose `hold()` is re-entrant within one thread: only the outermost acquires."""

    def __init__(self) -> None:
        self._local = threading.local()

    @contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[None]:
        depth = getattr(self._local, "depth", 0)
        if depth:
            self._local.depth = depth + 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        with self._acquire(timeout):
            self._local.depth = 1
            try:
                yield
            finally:
                self._local.depth = 0

    @abstractmethod
    def _acquire(self, timeout: float | None) -> AbstractContextManager[None]:
        """Hold the lock for the block (LockTimeout past `timeout`, None: the default)."""


class FileLock(ReentrantLock):
    """An exclusive `flock` on a lock file, re-entrant within one thread of one process.

    `flock` locks belong to the open file description, so the lock is released by the
    kernel if the holder dies (a SIGKILLed writer never leaves the data dir locked).
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0, hint: str = "") -> None:
        super().__init__()
        self.path = Path(path)
        self.timeout = timeout
        self.hint = hint
        self._thread_lock = threading.Lock()

    @contextmanager
    def _acquire(self, timeout: float | None) -> Iterator[None]:
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        if not self._thread_lock.acquire(timeout=max(limit, 0.0)):
            raise self._timeout_error(limit)
        try:
            private_dir(self.path.parent)
            fd = private_file(self.path)
            try:
                delay = 0.001
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            raise self._timeout_error(limit) from None
                        time.sleep(delay)
                        delay = min(delay * 2, 0.05)
                try:
                    yield
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        finally:
            self._thread_lock.release()

    def _timeout_error(self, limit: float) -> LockTimeout:
        msg = f"could not lock {self.path} within {limit:g}s: another process is writing"
        return LockTimeout(f"{msg}. {self.hint}".strip() if self.hint else msg)
