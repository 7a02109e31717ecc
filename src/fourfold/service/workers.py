"""Several service processes on one port: `fourfold serve --workers N`.

One Python process runs Python on one core at a time (the GIL). Under the service benchmark's
load a single `fourfold serve` used about 1.4 of this project's 2 cores, its event loop and
request threads taking turns; two processes on one SQLite data dir served 391 requests/s
where one served 194-298 (`benchmarks/service.py`, see benchmarks/results/service.md).

Each worker is a whole `fourfold serve`: its own event loop, models and caches. They share the
data dir (or the PostgreSQL database) the way the CLI and a service do: each sees the others'
writes on its next read (per-scope version counters), and what one forgets no other serves.
Every worker listens on its own socket bound with SO_REUSEPORT, so the kernel spreads new
connections over them (Linux hashes each connection to one listener); a single shared socket
would let whichever worker woke first accept a whole burst of connections.

This process, the supervisor, reserves the port (a bound socket that never listens, so no
connection lands on it), starts the workers, and lets none of them listen until every one has
loaded its models: the first clients are then spread over all of them. It restarts a worker
that dies, gives up when a worker dies while starting, and stops them all on SIGINT or SIGTERM.
A worker ends itself when the supervisor dies, even by SIGKILL (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import json
import logging
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import IO, Any

from fourfold._lifecycle import terminate
from fourfold.errors import InvalidInput, StoreUnavailable

__all__ = ["WORKER_LAUNCHER", "Supervisor", "listening_socket", "reserve_port", "worker_handshake"]

log = logging.getLogger("fourfold.service")

#: The interpreter code a worker runs: `serve_worker(options)` from the JSON line on its stdin.
WORKER_LAUNCHER = (
    "import json, sys\n"
    "from fourfold.cli.service_commands import serve_worker\n"
    "serve_worker(json.loads(sys.stdin.readline()))\n"
)

_READY, _GO = "ready", "go"
#: A worker that dies within this many seconds of starting counts as failing to start.
_EARLY_DEATH_S = 30.0


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _reuse_port(sock: socket.socket) -> None:
    option = getattr(socket, "SO_REUSEPORT", None)
    if option is None or sys.platform != "linux":  # elsewhere the kernel does not spread connections
        raise InvalidInput("--workers above 1 needs Linux (SO_REUSEPORT); run one `fourfold serve` per port instead")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, option, 1)


def reserve_port(host: str, port: int) -> socket.socket:
    """A socket bound to (host, port) with SO_REUSEPORT that never listens: the workers' port.

    With port 0 the kernel picks a free one (`getsockname()` tells which)."""
    sock = socket.socket(_family(host), socket.SOCK_STREAM)
    try:
        _reuse_port(sock)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise StoreUnavailable(f"cannot bind {host}:{port}: {exc.strerror or exc}") from exc
    except BaseException:
        sock.close()
        raise
    return sock


def listening_socket(host: str, port: int) -> socket.socket:
    """A worker's own socket on the shared port (uvicorn listens on it once it starts)."""
    sock = reserve_port(host, port)
    sock.set_inheritable(False)
    return sock


def worker_handshake(ready: IO[str] | None = None, go: IO[str] | None = None) -> None:
    """In a worker, once its models are loaded: say so, and wait until the supervisor says go.

    If the supervisor is gone (its end of the pipe closed), the worker stops here."""
    out, into = ready or sys.stdout, go or sys.stdin
    out.write(_READY + "\n")
    out.flush()
    if into.readline().strip() != _GO:
        raise SystemExit("fourfold serve: the supervisor went away before the workers started")


def _die_with_parent() -> None:
    """Linux: this process gets SIGTERM when its parent ends, however it ends."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _close_pipes(worker: _Worker) -> None:
    for pipe in (worker.process.stdin, worker.process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


class _Worker:
    def __init__(self, index: int, process: subprocess.Popen[str]) -> None:
        self.index = index
        self.process = process
        self.started = time.monotonic()


class Supervisor:
    """Starts `count` workers running `WORKER_LAUNCHER` with `options`, and keeps them running.

    `options` (JSON) is what each worker's `serve_worker` gets; `index` is added per worker.
    `announce` is called once every worker is ready to listen. A worker that exits within
    `early_death_s` of its start stops the service (it would only fail again); a later exit
    gets a new worker. `launcher` replaces the worker's code (tests run stand-ins); `env` is
    the workers' environment (default: this process's).
    """

    def __init__(self, count: int, options: Mapping[str, Any], *, startup_timeout: float = 300.0,
                 announce: Callable[[], None] | None = None, python: Sequence[str] = (sys.executable,),
                 launcher: str = "", early_death_s: float = _EARLY_DEATH_S, env: Mapping[str, str] | None = None) -> None:
        if count < 1:
            raise InvalidInput(f"--workers must be at least 1, got {count}")
        self.count = count
        self.options = dict(options)
        self.startup_timeout = startup_timeout
        self.announce = announce
        self.python = list(python)
        self.launcher = launcher or WORKER_LAUNCHER
        self.early_death_s = early_death_s
        self.env = dict(env) if env is not None else None
        self._workers: dict[int, _Worker] = {}
        self._stopping = False

    def run(self) -> None:
        """Until SIGINT, SIGTERM or `stop()`: start the workers, then replace any that dies."""
        on_main = threading.current_thread() is threading.main_thread()  # only it may take signals
        signals = (signal.SIGTERM, signal.SIGINT) if on_main else ()
        previous = {s: signal.signal(s, self._on_signal) for s in signals}
        try:
            with self._stopped():
                if not self._await_ready([self._start(index) for index in range(self.count)]):
                    return
                for worker in self._workers.values():
                    self._go(worker)
                if self.announce is not None:
                    self.announce()
                self._watch()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    @property
    def pids(self) -> list[int]:
        return [w.process.pid for w in self._workers.values()]

    def stop(self) -> None:
        """Make `run` stop the workers and return (from any thread)."""
        self._stopping = True

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stop()

    @contextlib.contextmanager
    def _stopped(self) -> Iterator[None]:
        try:
            yield
        finally:
            self._stopping = True
            for worker in self._workers.values():  # all at once: each drains its own requests
                if worker.process.poll() is None:
                    worker.process.terminate()
            for worker in self._workers.values():
                terminate(worker.process, timeout=15)  # SIGKILL for one that did not end
                _close_pipes(worker)

    def _start(self, index: int) -> _Worker:
        process = subprocess.Popen(
            [*self.python, "-c", self.launcher], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, preexec_fn=_die_with_parent, close_fds=True, env=self.env,
        )
        assert process.stdin is not None
        process.stdin.write(json.dumps({**self.options, "index": index}) + "\n")
        process.stdin.flush()
        worker = self._workers[index] = _Worker(index, process)
        return worker

    def _await_ready(self, workers: Sequence[_Worker]) -> bool:
        """Until each of `workers` has said it loaded its models (True), or a stop (False);
        an error if one exits first."""
        deadline = time.monotonic() + self.startup_timeout
        with selectors.DefaultSelector() as selector:
            for worker in workers:
                assert worker.process.stdout is not None
                selector.register(worker.process.stdout, selectors.EVENT_READ, worker)
            waiting = len(workers)
            while waiting:
                if self._stopping:
                    return False
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StoreUnavailable(f"the service workers did not load within {self.startup_timeout:g}s")
                for key, _ in selector.select(timeout=min(left, 0.5)):
                    worker = key.data
                    assert worker.process.stdout is not None
                    if worker.process.stdout.readline().strip() != _READY:  # end of file: it exited while starting
                        raise StoreUnavailable(f"service worker {worker.index} exited with {worker.process.wait()} "
                                               "while starting (its error is above)")
                    selector.unregister(key.fileobj)
                    waiting -= 1
        return True

    def _go(self, worker: _Worker) -> None:
        assert worker.process.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it just died: `_watch` sees to it
            worker.process.stdin.write(_GO + "\n")
            worker.process.stdin.flush()

    def _watch(self) -> None:
        while not self._stopping:
            time.sleep(0.2)
            for index, worker in list(self._workers.items()):
                code = worker.process.poll()
                if code is None or self._stopping:
                    continue
                if time.monotonic() - worker.started < self.early_death_s:
                    raise StoreUnavailable(f"service worker {index} exited with {code} soon after starting")
                log.error("service worker %d (pid %d) exited with %s; starting another", index, worker.process.pid, code)
                _close_pipes(worker)
                replacement = self._start(index)
                if self._await_ready([replacement]):
                    self._go(replacement)
