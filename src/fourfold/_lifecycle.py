"""Opening and closing, written once: `with` support for what closes, and for test servers."""

from __future__ import annotations

import subprocess
from typing import Self

__all__ = ["Closing", "Started", "terminate"]


class Closing:
    """A resource released by `close()`, also on leaving a `with` block."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Started:
    """A server that `start()` starts and `stop()` stops; a `with` block does both."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def terminate(process: subprocess.Popen[bytes] | subprocess.Popen[str], *, timeout: float) -> None:
    """Stop a child process: SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
