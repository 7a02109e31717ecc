"""Test helpers that ship with the service: an in-process app, and a real `fourfold serve`.

    with LiveService(tmp_path, keys={"acme": 1}) as live:
        memory = connect(live.url, api_key=live.keys["acme"][0])
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from fourfold._lifecycle import terminate
from fourfold.errors import StoreUnavailable

__all__ = ["CLI_LAUNCHER", "LiveService", "cli_command", "free_port"]

#: Runs the fourfold CLI with the service commands registered (idempotent once app.py does it).
CLI_LAUNCHER = (
    "import sys\n"
    "from fourfold.cli.app import app\n"
    "from fourfold.cli.service_commands import register\n"
    "register(app)\n"
    "from fourfold.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def cli_command(*args: str) -> list[str]:
    """argv that runs `fourfold <args>` with this interpreter."""
    return [sys.executable, "-c", CLI_LAUNCHER, *args]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LiveService:
    """`fourfold serve` in a subprocess on a free loopback port; ready when /healthz answers.

    `keys` maps tenant -> how many operator keys to create first (with the CLI, as a user would);
    the secrets end up in `self.keys[tenant]`. With `store` (a postgresql:// URL) the service
    and its keys live in that database; replicas are several LiveServices on one store, and
    only the first needs to create keys.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        embedder: str = "hash",
        keys: dict[str, int] | None = None,
        serve_args: Sequence[str] = (),
        startup_timeout: float = 60.0,
        store: str | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.store = store
        self.embedder = embedder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.serve_args = list(serve_args)
        self.startup_timeout = startup_timeout
        self.keys: dict[str, list[str]] = {}
        self._wanted = dict(keys or {})
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Any = None  # the service's stderr (a file: a pipe nobody reads fills up and blocks it)

    @property
    def pid(self) -> int | None:
        """The `fourfold serve` process (None before it starts)."""
        return self._process.pid if self._process is not None else None

    def create_key(self, tenant: str, *, role: str = "operator") -> str:
        """A key of `tenant`, made with the CLI (an operator's unless `role` says otherwise)."""
        out = subprocess.run(
            cli_command(*self._where(), "keys", "create", "--tenant", tenant, "--role", role),
            check=True, capture_output=True, text=True, timeout=60,
        )
        key = out.stdout.strip().splitlines()[-1]
        self.keys.setdefault(tenant, []).append(key)
        return key

    def __enter__(self) -> LiveService:
        for tenant, count in self._wanted.items():
            for _ in range(count):
                self.create_key(tenant)
        args = [*self._where(), "--embedder", self.embedder, "serve", "--port", str(self.port)]
        # stderr goes to a file: the service logs every 5xx, and once a pipe that nobody
        # drains held 64 KiB of them, its next log call blocked every request (client timeouts).
        self._log = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            cli_command(*args, *self.serve_args), stdout=subprocess.DEVNULL, stderr=self._log
        )
        self._wait_ready()
        return self

    def _where(self) -> list[str]:
        where = ["--data-dir", str(self.data_dir)]
        return [*where, "--store", self.store] if self.store else where

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise StoreUnavailable(f"fourfold serve exited with {self._process.returncode}: {self.log().strip()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise StoreUnavailable(f"fourfold serve did not answer /healthz within {self.startup_timeout:g}s")

    def stop(self) -> None:
        if self._process is None:
            return
        terminate(self._process, timeout=15)
        self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def log(self) -> str:
        """What the running service wrote to stderr so far (its warnings and errors)."""
        if self._log is None:
            return ""
        fd = self._log.fileno()  # read without moving the offset the service writes at
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def headers(self, tenant: str) -> dict[str, Any]:
        return {"Authorization": f"Bearer {self.keys[tenant][0]}"}
