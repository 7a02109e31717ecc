"""Reliability workloads of a store shared by processes: the CLI beside a running service, and a
PostgreSQL server that restarts under load. benchmarks/reliability.py runs them; the tests
(tests/test_reliability_sharing.py) call them at CI sizes.

Both judge two things: every write a client saw acknowledged is there afterwards (lost), and
no memory whose forget was acknowledged is served again, by search, list or id (served).
"""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import httpx

from fourfold import FourfoldError
from fourfold.service.testing import LiveService, cli_command
from harness import reliability as rel


@dataclass
class SharingResult:
    """What the clients saw, and what the store showed afterwards."""

    acked: int = 0
    present: int = 0
    lost: list[str] = field(default_factory=list)
    forgotten: int = 0  # forgets acknowledged
    served: list[str] = field(default_factory=list)  # forgotten memories a read returned
    typed_errors: Counter[str] = field(default_factory=Counter)  # failures clients saw, by type
    untyped: list[str] = field(default_factory=list)  # failures that were not a typed error
    recovered: dict[str, int] = field(default_factory=dict)  # client kind -> successes after the outage

    def line(self) -> str:
        errors = ", ".join(f"{k} {v}" for k, v in sorted(self.typed_errors.items())) or "none"
        return (f"acked {self.acked}, present {self.present}, lost {len(self.lost)}, forgotten {self.forgotten}, "
                f"served after forget {len(self.served)}, typed errors: {errors}, untyped {len(self.untyped)}")


class Service:
    """JSON calls to one `fourfold serve` (the default tenant: a service without keys)."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=30)

    def call(self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None) -> tuple[int, Any]:
        response = self.http.request(method, path, json=body, params=params)
        return response.status_code, response.json() if response.content else None

    def remember(self, key: str) -> str | None:
        status, answer = self.call("POST", "/v1/memories", {"text": rel.memory_text(key), "scope": rel.scope_of(key),
                                                            "metadata": {"k": key}})
        if status != 201:
            _fail(status, answer)
        return str(answer["id"])

    def serves(self, memory_id: str, key: str) -> list[str]:
        """Where the service still shows a memory: its id, its scope's list, a search for its text."""
        seen = []
        if self.call("GET", f"/v1/memories/{memory_id}")[0] != 404:
            seen.append("get")
        status, page = self.call("GET", "/v1/memories", params={"scope": rel.scope_of(key)})
        if status == 200 and any(m["id"] == memory_id for m in page["results"]):
            seen.append("list")
        status, hits = self.call("POST", "/v1/memories/search", {"query": rel.memory_text(key), "scope": rel.scope_of(key),
                                                                 "k": 50})
        if status == 200 and any(h["id"] == memory_id for h in hits["results"]):
            seen.append("search")
        return seen

    def close(self) -> None:
        self.http.close()


class ServiceError(Exception):
    def __init__(self, status: int, code: str) -> None:
        super().__init__(f"{status} {code}")
        self.status, self.code = status, code


def _fail(status: int, answer: Any) -> NoReturn:
    code = answer.get("error", {}).get("code", "?") if isinstance(answer, dict) else "?"
    raise ServiceError(status, str(code))


def _cli(where: list[str], *args: str) -> tuple[int, Any]:
    done = subprocess.run(cli_command(*where, "--embedder", "hash", "--json", *args), capture_output=True, text=True,
                          timeout=120)
    out = done.stdout.strip() or done.stderr.strip()
    return done.returncode, json.loads(out) if out.startswith(("{", "[")) else out


def _where(data_dir: Path, store: str | None) -> list[str]:
    return ["--data-dir", str(data_dir), *(["--store", store] if store else [])]


# -- the CLI beside a running service --------------------------------------------------------


def service_and_cli(work: Path, *, store: str | None = None, writes: int = 40, cli_writes: int = 8,
                    seed: int = 1) -> SharingResult:
    """A service and CLI processes write one store at once, and each forgets what the other wrote.

    Service writes go through HTTP from a client thread; each CLI call is a new process (as a
    user's shell would run it). Right after each acknowledged forget, the other side is asked
    for the memory (id, list, search) and must not serve it."""
    work.mkdir(parents=True, exist_ok=True)
    data_dir = work / "data"
    where = _where(data_dir, store)
    result = SharingResult()
    acks: list[tuple[str, str]] = []
    by_key: dict[str, str] = {}
    rng = random.Random(seed)
    lock = threading.Lock()
    with LiveService(data_dir, store=store, startup_timeout=120) as live:
        service = Service(live.url)
        try:
            def through_service() -> None:
                for i in range(writes):
                    key = f"s{seed}n{i}"
                    memory_id = service.remember(key)
                    with lock:
                        acks.append(("mem", key))
                        by_key[key] = str(memory_id)
                    status, _ = service.call("PUT", f"/v1/facts/{rel.fact_key(key)}", {"value": rel.fact_value(key)})
                    if status == 200:
                        with lock:
                            acks.append(("fact", key))

            def through_cli() -> None:
                for i in range(cli_writes):
                    key = f"c{seed}n{i}"
                    code, answer = _cli(where, "remember", rel.memory_text(key), "--scope", rel.scope_of(key),
                                        "-m", f"k={key}")
                    if code == 0:
                        with lock:
                            acks.append(("mem", key))
                            by_key[key] = str(answer["id"])
                    else:
                        result.untyped.append(f"cli remember: {answer}")

            with ThreadPoolExecutor(2) as pool:
                for done in [pool.submit(through_service), pool.submit(through_cli)]:
                    done.result()
            result.acked = len(acks)
            service_keys = [k for op, k in acks if op == "mem" and k.startswith("s")]
            cli_keys = [k for op, k in acks if op == "mem" and k.startswith("c")]
            gone: set[str] = set()
            for key in rng.sample(service_keys[: writes // 2], min(4, writes // 2)):  # the CLI forgets service writes
                code, _ = _cli(where, "forget", by_key[key])
                if code == 0:
                    gone.add(key)
                    result.served += [f"{key} by the service's {how}" for how in service.serves(by_key[key], key)]
            for key in rng.sample(cli_keys, min(3, len(cli_keys))):  # the service forgets CLI writes
                if service.call("DELETE", f"/v1/memories/{by_key[key]}")[0] in (200, 204):
                    gone.add(key)
                    result.served += [f"{key} by the CLI's {how}" for how in _cli_serves(where, by_key[key], key)]
            result.forgotten = len(gone)
        finally:
            service.close()
    _judge(result, store or str(data_dir), [(op, k) for op, k in acks if not (op == "mem" and k in gone)],
           {by_key[k]: k for k in gone})
    return result


def _cli_serves(where: list[str], memory_id: str, key: str) -> list[str]:
    seen = []
    code, hits = _cli(where, "recall", rel.memory_text(key), "--scope", rel.scope_of(key), "-k", "50")
    if code == 0 and memory_id in json.dumps(hits):
        seen.append("recall")
    return seen


def _judge(result: SharingResult, where: str, kept: list[tuple[str, str]], gone: dict[str, str]) -> None:
    """Open the store afresh: every kept acknowledged write present, no forgotten memory there."""
    with rel.open_memory(where) as mem:
        verdict = rel.judge(rel.snapshot(mem), kept)
        result.present = verdict["present"]
        result.lost = verdict["lost"] + verdict["partial"]
        for memory_id, key in gone.items():
            if mem.long_term.store.get([memory_id]):
                result.served.append(f"{key} by a fresh Memory's get")
            if any(h.id == memory_id for h in mem.long_term.recall(rel.memory_text(key), scope=rel.scope_of(key), k=50)):
                result.served.append(f"{key} by a fresh Memory's recall")
    result.acked = verdict["acked"] + len(gone)  # records: a batch of three is three


# -- a PostgreSQL restart under load ----------------------------------------------------------


def restart_under_load(work: Path, server: Any, *, seconds: float = 6.0, seed: int = 1) -> SharingResult:
    """Library writers, a forgetter and a service client keep working while `server` (a
    `fourfold.testing.postgres.PostgresServer`) restarts, then stops for a second and starts.

    Each call either succeeds (then it is acknowledged), or fails with a typed error
    (`StoreUnavailable` in the library, 503 over HTTP); anything else counts as untyped. After
    the outage every client kind must succeed again."""
    work.mkdir(parents=True, exist_ok=True)
    result = SharingResult()
    acks: list[tuple[str, str]] = []
    gone: dict[str, str] = {}
    lock = threading.Lock()
    stop = threading.Event()
    back_at = [float("inf")]  # when the last outage ended

    def attempt(kind: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            answer = fn(*args, **kwargs)
        except FourfoldError as exc:
            with lock:
                result.typed_errors[type(exc).__name__] += 1
            return None
        except ServiceError as exc:
            with lock:
                if exc.status == 503:
                    result.typed_errors[f"HTTP 503 {exc.code}"] += 1
                else:
                    result.untyped.append(f"{kind}: HTTP {exc}")
            return None
        except Exception as exc:  # the verdict: anything but a typed error is a defect
            with lock:
                result.untyped.append(f"{kind}: {type(exc).__name__}: {str(exc)[:120]}")
            return None
        if time.monotonic() > back_at[0]:
            with lock:
                result.recovered[kind] = result.recovered.get(kind, 0) + 1
        return True if answer is None else answer

    def writer(w: int) -> None:
        ops = rel.OPS
        with rel.open_memory(server.url) as mem:
            for j in range(100_000):
                if stop.is_set():
                    return
                op, key = ops[j % len(ops)], f"p{seed}w{w}j{j}"
                if attempt("library", rel.do_write, mem, op, key):
                    with lock:
                        acks.append((op, key))
                time.sleep(0.01)

    def forgetter() -> None:
        with rel.open_memory(server.url) as mem:
            for j in range(100_000):
                if stop.is_set():
                    return
                key = f"p{seed}f{j}"
                memory_id = attempt("forget", mem.long_term.remember, rel.memory_text(key), scope=rel.scope_of(key),
                                    metadata={"k": key})
                if memory_id is None:
                    continue
                if attempt("forget", mem.long_term.forget, memory_id):
                    with lock:
                        gone[str(memory_id)] = key
                # (a forget that failed may or may not have happened: that memory is judged neither way)
                time.sleep(0.01)

    def http_client(url: str) -> None:
        service = Service(url)
        try:
            for j in range(100_000):
                if stop.is_set():
                    return
                key = f"p{seed}h{j}"
                if attempt("service", service.remember, key):
                    with lock:
                        acks.append(("mem", key))
                time.sleep(0.01)
        finally:
            service.close()

    with LiveService(work / "svc", store=server.url, startup_timeout=120) as live:
        threads = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
        threads += [threading.Thread(target=forgetter), threading.Thread(target=http_client, args=(live.url,))]
        for t in threads:
            t.start()
        time.sleep(seconds / 3)
        server.restart()  # every pooled connection breaks at once
        time.sleep(seconds / 3)
        server.pause()  # down for a second: calls in that second fail
        time.sleep(1.0)
        server.resume()
        back_at[0] = time.monotonic() + 0.5
        time.sleep(seconds / 3)
        stop.set()
        for t in threads:
            t.join(120)
        live_service = Service(live.url)
        try:
            for memory_id, key in gone.items():
                result.served += [f"{key} by the service's {how}" for how in live_service.serves(memory_id, key)]
        finally:
            live_service.close()
    result.forgotten = len(gone)
    _judge(result, server.url, acks, gone)
    return result
