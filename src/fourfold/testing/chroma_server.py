"""Start a real Chroma server (`chroma run`) on 127.0.0.1 for tests and benchmarks."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from fourfold._lifecycle import Started, terminate

__all__ = ["ChromaServer", "free_port"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _chroma_cli() -> str:
    beside = Path(sys.executable).with_name("chroma")
    if beside.exists():
        return str(beside)
    found = shutil.which("chroma")
    if not found:
        raise RuntimeError("the `chroma` command is not installed (pip install chromadb)")
    return found


class ChromaServer(Started):
    """A `chroma run` subprocess on loopback with its own data path; stops on exit."""

    def __init__(self, path: str | os.PathLike[str], *, port: int | None = None, startup_timeout: float = 60.0) -> None:
        self.path = Path(path)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ChromaServer:
        self.path.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        log = open(self.path / "server.log", "wb")
        self._proc = subprocess.Popen(
            [_chroma_cli(), "run", "--path", str(self.path / "data"), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=log, stderr=subprocess.STDOUT, env=env,
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"chroma server exited early; see {self.path / 'server.log'}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=1) as resp:
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"chroma server did not answer on {self.url} within {self.startup_timeout:g}s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            terminate(self._proc, timeout=10)
        self._proc = None
