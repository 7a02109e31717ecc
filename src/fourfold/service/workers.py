"""Several service processes on one port: `fourfold serve --workers N`.

One Python process runs Python on one core at a time (the GIL). Under the service benchmark's
load a single `fourfold serve` cannot keep two cores busy, its event loop and request
threads taking turns; two processes on one data dir serve more requests per second than
one (`benchmarks/service.py`, see benchmarks/results/service.md).

Each worker is a whole `fourfold serve`: its own event loop, models and caches. They share the
data dir (or the PostgreSQL database) the way the CLI and a service do: each sees the others'
writes on its next read (per-scope version counters), and what one forgets no other serves.

This process, the supervisor, owns the port. It first checks that nothing listens there (with
SO_REUSEPORT alone another service of the same user could join the port and take half its
connections), then opens one listening socket per worker, all bound with SO_REUSEPORT, so Linux
spreads new connections over them; a single shared socket would let whichever worker woke first
accept a whole burst. Each worker gets its socket as an inherited descriptor. Because the
sockets listen from the start, nothing else can take the port while the models load, a client
that connects early waits in the queue, and a replaced worker's queue waits for its successor.

The supervisor announces the service once every worker serves, replaces a worker that dies
later, stops the service when a worker dies before it serves (it would only fail again), and
stops them all on SIGINT or SIGTERM. Workers run in their own session, so a Ctrl-C in the
terminal reaches the supervisor only (which stops them), and each ends itself when the
supervisor dies, even by SIGKILL (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
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

__all__ = ["WORKER_LAUNCHER", "Supervisor", "adopt", "listening_sockets", "say_serving"]

log = logging.getLogger("fourfold.service")

#: The interpreter code a worker runs: `serve_worker(options)` from the JSON line on its stdin.
WORKER_LAUNCHER = (
    "import json, sys\n"
    "options = json.loads(sys.stdin.readline())\n"
    "from fourfold.service.workers import adopt\n"
    "adopt(options['supervisor'])\n"
    "from fourfold.cli.service_commands import serve_worker\n"
    "serve_worker(options)\n"
)

_SERVING = "serving"
_BACKLOG = 2048


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _address(host: str, port: int) -> tuple[str, int]:
    return host.strip("[]"), port


def _taken(host: str, port: int, exc: OSError) -> InvalidInput:
    if exc.errno == errno.EADDRINUSE:
        return InvalidInput(f"{host}:{port} is in use (another service listens there): choose another --port")
    return InvalidInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


def listening_sockets(host: str, port: int, count: int) -> list[socket.socket]:
    """`count` sockets listening on (host, port), all bound with SO_REUSEPORT.

    With port 0 the kernel picks a free port for the first and the others share it. A port
    where anything listens already is refused (`InvalidInput`), even a socket that allows
    sharing it."""
    option = getattr(socket, "SO_REUSEPORT", None)
    if option is None or sys.platform != "linux":  # elsewhere the kernel does not spread connections
        raise InvalidInput("--workers above 1 needs Linux (SO_REUSEPORT); run one `fourfold serve` per port instead")
    if port:
        with socket.socket(_family(host), socket.SOCK_STREAM) as probe:  # no SO_REUSEPORT: anyone listening refuses it
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed connection's TIME_WAIT does not
            try:
                probe.bind(_address(host, port))
            except OSError as exc:
                raise _taken(host, port, exc) from None
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(_family(host), socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, option, 1)
            try:
                sock.bind(_address(host, port))
                sock.listen(_BACKLOG)
            except OSError as exc:
                raise _taken(host, port, exc) from None
            port = sock.getsockname()[1]
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def adopt(supervisor: int) -> None:
    """First thing in a worker: end with the supervisor (Linux PR_SET_PDEATHSIG), or now if it
    is gone already."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(1, signal.SIGTERM) != 0:  # PR_SET_PDEATHSIG
        raise SystemExit(f"fourfold serve worker: prctl failed ({os.strerror(ctypes.get_errno())})")
    if os.getppid() != supervisor:  # it died before the prctl: nobody would stop this worker
        raise SystemExit("fourfold serve worker: the supervisor is gone")


def say_serving(pipe: IO[str]) -> None:
    """In a worker, once it accepts connections: tell the supervisor, then close the pipe."""
    with contextlib.suppress(OSError):
        pipe.write(_SERVING + "\n")
        pipe.close()


class _Worker:
    def __init__(self, index: int, process: subprocess.Popen[str]) -> None:
        self.index = index
        self.process = process


def _close_pipes(worker: _Worker) -> None:
    for pipe in (worker.process.stdin, worker.process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


class Supervisor:
    """Starts `count` workers running `launcher` with `options`, and keeps them running.

    Each worker reads one JSON line on its stdin: `options`, plus its `index`, the supervisor's
    pid (`supervisor`) and, when `sockets` are given (one per worker), the descriptor `fd` of
    its listening socket, inherited. It says it serves with one line on its stdout
    (`say_serving`). `announce` is called once every worker serves. A worker that exits
    before it serves stops the service (`StoreUnavailable`); one that exits later gets a
    successor on its socket. `env` is the workers' environment (default: this process's).
    """

    def __init__(self, count: int, options: Mapping[str, Any], *, sockets: Sequence[socket.socket] = (),
                 startup_timeout: float = 300.0, announce: Callable[[], None] | None = None,
                 launcher: str = WORKER_LAUNCHER, env: Mapping[str, str] | None = None) -> None:
        if count < 1:
            raise InvalidInput(f"--workers must be at least 1, got {count}")
        if sockets and len(sockets) != count:
            raise InvalidInput(f"{count} workers need {count} sockets, got {len(sockets)}")
        self.count = count
        self.options = dict(options)
        self.sockets = list(sockets)
        self.startup_timeout = startup_timeout
        self.announce = announce
        self.launcher = launcher
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
                if not self._await_serving([self._start(index) for index in range(self.count)]):
                    return
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
        options: dict[str, Any] = {**self.options, "index": index, "supervisor": os.getpid()}
        fds: tuple[int, ...] = ()
        if self.sockets:
            options["fd"] = self.sockets[index].fileno()
            fds = (options["fd"],)
        process = subprocess.Popen(
            [sys.executable, "-c", self.launcher], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            pass_fds=fds, start_new_session=True, env=self.env,  # its own session: the terminal's Ctrl-C is ours
        )
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it died at once: `_await_serving` reports it
            process.stdin.write(json.dumps(options) + "\n")
            process.stdin.flush()
        worker = self._workers[index] = _Worker(index, process)
        return worker

    def _await_serving(self, workers: Sequence[_Worker]) -> bool:
        """Until each of `workers` serves (True), or a stop (False); `StoreUnavailable` if one
        exits first or takes longer than `startup_timeout`."""
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
                    raise StoreUnavailable(f"the service workers did not start within {self.startup_timeout:g}s")
                for key, _ in selector.select(timeout=min(left, 0.5)):
                    worker = key.data
                    assert worker.process.stdout is not None
                    said = worker.process.stdout.readline().strip()
                    if said != _SERVING:  # end of file: it exited while starting
                        if self._stopping:
                            return False
                        terminate(worker.process, timeout=5)
                        raise StoreUnavailable(f"service worker {worker.index} exited with {worker.process.returncode} "
                                               "while starting (its error is above)")
                    selector.unregister(key.fileobj)
                    waiting -= 1
        return True

    def _watch(self) -> None:
        while not self._stopping:
            time.sleep(0.2)
            for index, worker in list(self._workers.items()):
                code = worker.process.poll()
                if code is None or self._stopping:
                    continue
                log.error("service worker %d (pid %d) exited with %s; starting another", index, worker.process.pid, code)
                _close_pipes(worker)
                self._await_serving([self._start(index)])
