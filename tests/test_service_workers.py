"""`fourfold serve --workers N`: the supervisor (with stand-in workers), then the real service."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from fourfold.errors import InvalidInput, StoreUnavailable
from fourfold.service.testing import LiveService, cli_command
from fourfold.service.workers import Supervisor, reserve_port

#: A stand-in worker: records when it started, loaded ("ready") and was let go, as files in
#: options["dir"]; options["plans"][index] says how long it loads and whether it fails.
STAND_IN = """
import json, os, sys, time
options = json.loads(sys.stdin.readline())
where, index = options["dir"], options["index"]
plan = options["plans"][str(index)]
life = len([f for f in os.listdir(where) if f.startswith(f"start-{index}-")])
def mark(what):
    with open(os.path.join(where, f"{what}-{index}-{life}"), "w") as f:
        f.write(json.dumps({"pid": os.getpid(), "at": time.time()}))
mark("start")
time.sleep(plan.get("load_s", 0))
if plan.get("fail_start"):
    sys.exit(3)
mark("ready")
print("ready", flush=True)
if sys.stdin.readline().strip() != "go":
    sys.exit(4)
mark("go")
if life == 0 and "exit_after_go_s" in plan:
    time.sleep(plan["exit_after_go_s"])
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
def _supervising(tmp_path: Path, plans: dict[int, dict[str, object]], early_death_s: float = 30.0) -> Iterator[Run]:
    announced: list[float] = []
    supervisor = Supervisor(len(plans), {"dir": str(tmp_path), "plans": {str(k): v for k, v in plans.items()}},
                            launcher=STAND_IN, announce=lambda: announced.append(time.time()),
                            early_death_s=early_death_s)
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


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_no_worker_is_let_go_before_every_worker_has_loaded(tmp_path: Path) -> None:
    with _supervising(tmp_path, {0: {"load_s": 0.05}, 1: {"load_s": 1.0}}) as run:
        _wait_for(lambda: (tmp_path / "go-0-0").exists() and (tmp_path / "go-1-0").exists())
        slowest_ready = _mark(tmp_path, "ready-1-0")["at"]
        assert _mark(tmp_path, "go-0-0")["at"] >= slowest_ready  # the fast one waited for the slow one
        _wait_for(lambda: bool(run.announced))
        assert run.announced[0] >= slowest_ready
        pids = [int(_mark(tmp_path, f"start-{i}-0")["pid"]) for i in (0, 1)]
        assert sorted(pids) == sorted(run.supervisor.pids)
    assert not any(_alive(pid) for pid in pids)  # stopped with the supervisor
    assert run.failure == []
    assert len(run.announced) == 1


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_a_worker_failing_to_start_stops_the_others_and_says_which(tmp_path: Path) -> None:
    with _supervising(tmp_path, {0: {"load_s": 0.0}, 1: {"load_s": 0.3, "fail_start": True}}) as run:
        _wait_for(run.done.is_set)  # it ends by itself
    assert len(run.failure) == 1 and isinstance(run.failure[0], StoreUnavailable)
    assert "service worker 1 exited with 3 while starting" in str(run.failure[0])
    assert not _alive(int(_mark(tmp_path, "start-0-0")["pid"]))
    assert not (tmp_path / "go-0-0").exists()  # the healthy one was never let go alone
    assert run.announced == []


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_a_worker_that_dies_later_is_replaced(tmp_path: Path) -> None:
    plans: dict[int, dict[str, object]] = {0: {"exit_after_go_s": 0.5}, 1: {}}
    with _supervising(tmp_path, plans, early_death_s=0.2) as run:
        _wait_for(lambda: (tmp_path / "go-0-1").exists())  # a second life of worker 0, let go at once
        first, second = (int(_mark(tmp_path, f"start-0-{n}")["pid"]) for n in (0, 1))
        assert first != second and not _alive(first) and _alive(second)
        assert second in run.supervisor.pids
        assert not (tmp_path / "start-1-1").exists()  # the other one kept running
        assert not run.done.is_set()
    assert run.failure == []
    assert not _alive(second)


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_a_worker_dying_at_once_stops_the_service_rather_than_looping(tmp_path: Path) -> None:
    with _supervising(tmp_path, {0: {"exit_after_go_s": 0.1}}, early_death_s=60) as run:
        _wait_for(run.done.is_set)  # it ends by itself
    assert len(run.failure) == 1 and "service worker 0 exited with 5 soon after starting" in str(run.failure[0])
    assert not (tmp_path / "start-0-1").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_workers_end_with_their_supervisor_even_when_it_is_killed(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from fourfold.service.workers import Supervisor\n"
        f"Supervisor(2, {{'dir': {str(tmp_path)!r}, 'plans': {{'0': {{}}, '1': {{}}}}}}, launcher={STAND_IN!r}).run()\n"
    )
    supervisor = subprocess.Popen([sys.executable, "-c", code])
    try:
        _wait_for(lambda: (tmp_path / "go-0-0").exists() and (tmp_path / "go-1-0").exists())
        pids = [int(_mark(tmp_path, f"start-{i}-0")["pid"]) for i in (0, 1)]
        assert all(_alive(pid) for pid in pids)
        supervisor.kill()  # no chance to stop them itself
        supervisor.wait()
        _wait_for(lambda: not any(_alive(pid) for pid in pids), 10)
    finally:
        if supervisor.poll() is None:
            supervisor.kill()


def test_a_bad_worker_count_is_refused() -> None:
    with pytest.raises(InvalidInput, match="at least 1"):
        Supervisor(0, {})


@pytest.mark.skipif(sys.platform != "linux", reason="workers need Linux")
def test_the_reserved_port_takes_no_connection() -> None:
    reserved = reserve_port("127.0.0.1", 0)
    try:
        with pytest.raises(httpx.ConnectError):  # bound, never listening: connections go to workers only
            httpx.get(f"http://127.0.0.1:{reserved.getsockname()[1]}/healthz", timeout=2)
    finally:
        reserved.close()


# -- the real service ---------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _written(pid: int) -> int:
    """Bytes the process wrote so far (sockets included)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar")


@pytest.mark.slow
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


def test_sigterm_reaches_the_workers_of_a_cli_service(tmp_path: Path) -> None:
    with LiveService(tmp_path, serve_args=["--workers", "2"]) as live:
        assert live.pid is not None
        workers = _children(live.pid)
        os.kill(live.pid, signal.SIGTERM)
        _wait_for(lambda: not any(_alive(pid) for pid in workers), 30)
