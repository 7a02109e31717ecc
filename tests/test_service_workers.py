"""`fourfold serve --workers N`: the supervisor (with stand-in workers), then the real service."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from fourfold.errors import InvalidInput, StoreUnavailable
from fourfold.service.testing import LiveService, cli_command
from fourfold.service.workers import Supervisor, listening_sockets

#: A stand-in worker: records when it started, served and ended, as files in options["dir"];
#: options["plans"][index] says how long it loads and whether it fails, per life of that worker.
STAND_IN = """
import json, os, signal, sys, time
options = json.loads(sys.stdin.readline())
from fourfold.service.workers import adopt, say_serving
adopt(options["supervisor"])
where, index = options["dir"], options["index"]
plan = options["plans"][str(index)]
life = len([f for f in os.listdir(where) if f.startswith(f"start-{index}-")])
def mark(what):
    with open(os.path.join(where, f"{what}-{index}-{life}"), "w") as f:
        f.write(json.dumps({"pid": os.getpid(), "at": time.time(), "fd": options.get("fd")}))
def ended(signum, frame):
    mark("term")
    sys.exit(0)
signal.signal(signal.SIGTERM, ended)
mark("start")
time.sleep(plan.get("load_s", 0))
if life in plan.get("fail_lives", []):
    sys.exit(3)
mark("serving")
say_serving(os.fdopen(os.dup(1), "w"))
if life in plan.get("exit_lives", []):
    time.sleep(plan.get("exit_after_s", 0.3))
    sys.exit(5)
while True:
    time.sleep(1)
"""


def _mark(where: Path, name: str) -> dict[str, float]:
    data: dict[str, float] = json.loads((where / name).read_text())
    return data


def _wait_for(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Run:
    """A Supervisor of stand-ins running on a thread: what it announced, how it ended."""

    def __init__(self, supervisor: Supervisor, announced: list[float]) -> None:
        self.supervisor = supervisor
        self.announced = announced
        self.failure: list[BaseException] = []
        self.done = threading.Event()


@contextmanager
def _supervising(tmp_path: Path, plans: dict[int, dict[str, object]],
                 sockets: Sequence[socket.socket] = ()) -> Iterator[Run]:
    """On a thread, so the test can watch it; stopping it is checked through `_supervisor_process`
    (here the stand-ins also end when the thread does: PR_SET_PDEATHSIG follows the forking thread)."""
    announced: list[float] = []
    supervisor = Supervisor(len(plans), {"dir": str(tmp_path), "plans": {str(k): v for k, v in plans.items()}},
                            sockets=sockets, launcher=STAND_IN, announce=lambda: announced.append(time.time()))
    run = Run(supervisor, announced)

    def target() -> None:
        try:
            supervisor.run()
        except BaseException as exc:  # the test reads it
            run.failure.append(exc)
        finally:
            run.done.set()

    thread = threading.Thread(target=target)
    thread.start()
    try:
        yield run
    finally:
        supervisor.stop()
        thread.join(30)
    assert not thread.is_alive()


def _supervisor_process(tmp_path: Path, plans: dict[int, dict[str, object]]) -> subprocess.Popen[bytes]:
    """A Supervisor of stand-ins as the main thread of its own process (as `fourfold serve` runs it)."""
    options = {"dir": str(tmp_path), "plans": {str(k): v for k, v in plans.items()}}
    code = (
        "from fourfold.service.workers import Supervisor\n"
        f"Supervisor({len(plans)}, {options!r}, launcher={STAND_IN!r}, announce=lambda: print('announced', flush=True)).run()\n"
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_the_service_is_announced_once_every_worker_serves(tmp_path: Path) -> None:
    with _supervising(tmp_path, {0: {"load_s": 0.05}, 1: {"load_s": 1.0}}) as run:
        _wait_for(lambda: bool(run.announced))
        slowest = _mark(tmp_path, "serving-1-0")["at"]
        assert run.announced[0] >= slowest  # not when the fast one served
        pids = [int(_mark(tmp_path, f"start-{i}-0")["pid"]) for i in (0, 1)]
        assert sorted(pids) == sorted(run.supervisor.pids)
    assert run.failure == []
    assert len(run.announced) == 1


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_sigterm_stops_every_worker_gracefully_and_the_supervisor_exits_0(tmp_path: Path) -> None:
    process = _supervisor_process(tmp_path, {0: {}, 1: {"load_s": 0.5}})
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == b"announced"
        pids = [int(_mark(tmp_path, f"start-{i}-0")["pid"]) for i in (0, 1)]
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0  # it handled the signal: it did not just die of it
        assert all((tmp_path / f"term-{i}-0").exists() for i in (0, 1))  # each was told to stop
        _wait_for(lambda: not any(_alive(pid) for pid in pids), 10)
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_ctrl_c_while_the_workers_load_stops_quietly(tmp_path: Path) -> None:
    process = _supervisor_process(tmp_path, {0: {"load_s": 30}, 1: {"load_s": 30}})
    try:
        _wait_for(lambda: (tmp_path / "start-0-0").exists() and (tmp_path / "start-1-0").exists())
        pids = [int(_mark(tmp_path, f"start-{i}-0")["pid"]) for i in (0, 1)]
        os.killpg(os.getpgid(process.pid), signal.SIGINT)  # what a terminal's Ctrl-C sends
        assert process.wait(30) == 0
        assert all((tmp_path / f"term-{i}-0").exists() for i in (0, 1))  # stopped by the supervisor,
        _wait_for(lambda: not any(_alive(pid) for pid in pids), 10)  # not by the terminal's SIGINT
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_a_worker_failing_to_start_stops_the_others_and_says_which(tmp_path: Path) -> None:
    with _supervising(tmp_path, {0: {"load_s": 0.0}, 1: {"load_s": 0.3, "fail_lives": [0]}}) as run:
        _wait_for(run.done.is_set)  # it ends by itself
    assert len(run.failure) == 1 and isinstance(run.failure[0], StoreUnavailable)
    assert "service worker 1 exited with 3 while starting" in str(run.failure[0])
    assert run.announced == []


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_a_worker_that_dies_later_is_replaced_on_its_own_socket(tmp_path: Path) -> None:
    sockets = listening_sockets("127.0.0.1", 0, 2)
    try:
        with _supervising(tmp_path, {0: {"exit_lives": [0]}, 1: {}}, sockets) as run:
            _wait_for(lambda: (tmp_path / "serving-0-1").exists())  # a second life of worker 0
            first, second = (_mark(tmp_path, f"start-0-{n}") for n in (0, 1))
            assert first["pid"] != second["pid"] and not _alive(int(first["pid"]))
            assert first["fd"] == second["fd"] == sockets[0].fileno()  # the same listening socket
            assert int(second["pid"]) in run.supervisor.pids
            assert not (tmp_path / "start-1-1").exists()  # the other one kept running
            assert len(run.announced) == 1 and not run.done.is_set()
        assert run.failure == []
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_a_successor_failing_to_start_stops_the_service_rather_than_looping(tmp_path: Path) -> None:
    with _supervising(tmp_path, {0: {"exit_lives": [0], "fail_lives": [1]}}) as run:
        _wait_for(run.done.is_set)  # it ends by itself
    assert len(run.failure) == 1 and "service worker 0 exited with 3 while starting" in str(run.failure[0])
    assert not (tmp_path / "start-0-2").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_workers_end_with_their_supervisor_even_when_it_is_killed(tmp_path: Path) -> None:
    process = _supervisor_process(tmp_path, {0: {}, 1: {}})
    pids: list[int] = []
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == b"announced"
        pids = [int(_mark(tmp_path, f"start-{i}-0")["pid"]) for i in (0, 1)]
        assert all(_alive(pid) for pid in pids)
        process.kill()  # no chance to stop them itself
        process.wait()
        _wait_for(lambda: not any(_alive(pid) for pid in pids), 10)
    finally:
        if process.poll() is None:
            process.kill()
        for pid in pids:  # never leave a stand-in behind, even when the test fails
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_a_bad_worker_count_is_refused() -> None:
    with pytest.raises(InvalidInput, match="at least 1"):
        Supervisor(0, {})


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_a_port_where_something_listens_is_refused() -> None:
    with socket.socket() as other:  # another program, or another fourfold serve --workers
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        with pytest.raises(InvalidInput, match=f"127.0.0.1:{port} is in use"):
            listening_sockets("127.0.0.1", port, 2)
    first = listening_sockets("127.0.0.1", 0, 2)
    try:  # and a second service on a port ours hold
        assert first[0].getsockname()[1] == first[1].getsockname()[1]
        with pytest.raises(InvalidInput, match="is in use"):
            listening_sockets("127.0.0.1", first[0].getsockname()[1], 2)
    finally:
        for sock in first:
            sock.close()


# -- the real service ---------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _written(pid: int) -> int:
    """Bytes the process wrote so far (sockets included)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar")


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_two_workers_share_the_port_and_the_data_and_forget_everywhere(tmp_path: Path) -> None:
    with LiveService(tmp_path, keys={"acme": 1}, serve_args=["--workers", "2"]) as live:
        assert live.pid is not None
        workers = _children(live.pid)
        assert len(workers) == 2
        shared = f"FOURFOLD_EMBED_THREADS={max(1, (os.cpu_count() or 1) // 2)}".encode()
        assert all(shared in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") for pid in workers)
        headers = live.headers("acme")
        before = {pid: _written(pid) for pid in workers}

        def search() -> list[str]:  # a new connection each time: the kernel picks the worker
            answer = httpx.post(f"{live.url}/v1/memories/search", headers=headers,
                                json={"query": "Lyon warehouse", "scope": "c1"})
            assert answer.status_code == 200, answer.text
            return [hit["id"] for hit in answer.json()["results"]]

        written = httpx.post(f"{live.url}/v1/memories", headers=headers,
                             json={"text": "Ships to the Lyon warehouse", "scope": "c1"})
        mid = written.json()["id"]
        for _ in range(24):  # every worker answers and caches the scope
            assert search() == [mid]
        assert all(_written(pid) > before[pid] for pid in workers), "a worker took no connection"
        assert httpx.delete(f"{live.url}/v1/memories/{mid}", headers=headers).status_code == 200
        for _ in range(24):  # forgotten through one worker, served by none
            assert search() == []
    assert not any(_alive(pid) for pid in workers)  # SIGTERM to the supervisor ended them


def test_workers_on_an_embedded_chroma_data_dir_are_refused(tmp_path: Path) -> None:
    (tmp_path / "fourfold.json").write_text(json.dumps({"format": 1}))  # fourfold 0.1's layout
    out = subprocess.run(cli_command("--data-dir", str(tmp_path), "--embedder", "hash", "serve", "--workers", "2"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "--workers above 1 needs the SQLite store" in out.stderr


def test_zero_workers_is_a_usage_error(tmp_path: Path) -> None:
    out = subprocess.run(cli_command("--data-dir", str(tmp_path), "--embedder", "hash", "serve", "--workers", "0"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--workers" in out.stderr
    assert not os.listdir(tmp_path)  # nothing created


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_a_cli_service_says_it_serves_once_it_does_and_stops_on_sigterm(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        cli_command("--data-dir", str(tmp_path), "--embedder", "hash", "serve", "--port", str(port), "--workers", "2"),
        stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert f"on http://127.0.0.1:{port} with 2 workers" in line, line
        for _ in range(8):  # at once, on new connections: every worker answers already
            assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        workers = _children(process.pid)
        assert len(workers) == 2
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        _wait_for(lambda: not any(_alive(pid) for pid in workers), 10)
    finally:
        if process.poll() is None:
            process.kill()


def test_a_bad_thread_count_is_refused_before_any_worker_starts(tmp_path: Path) -> None:
    env = {**os.environ, "FOURFOLD_EMBED_THREADS": "0"}
    out = subprocess.run(cli_command("--data-dir", str(tmp_path), "--embedder", "hash", "serve", "--workers", "2"),
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 2
    assert out.stderr.count("$FOURFOLD_EMBED_THREADS must be a whole number") == 1
