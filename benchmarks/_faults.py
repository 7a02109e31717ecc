"""Faults under a write load (`reliability.py --faults`): a full disk, a damaged file, a slow,
cut or read-only PostgreSQL, each injected under a running `fourfold serve`.

Per case: writers (single memories through the service's group commit, and batches carrying a
keyed version) and a reader run against the service; the fault is injected, held, then
removed. Checked after: every acknowledged write is readable, every refused one got a typed
error naming the fault's cause, no batch landed in part and every keyed lineage has exactly
one current version with contiguous validity, the service answered every read (a store that
is out of reach may answer 503), `/healthz` said "degraded" during the fault and "ok" after,
and writes work again in the same service process (the damaged file: after it is restored).

A full disk is real: a size-limited tmpfs (SQLite's data dir, or a PostgreSQL tablespace
holding the memories table) filled by a ballast file. Mounting needs root; without it those
cases are reported as not run. PostgreSQL is reached through a TCP proxy that delays or cuts
its connections.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from fourfold.errors import StoreUnavailable
from fourfold.service.testing import LiveService
from fourfold.testing.chroma_server import free_port

__all__ = ["CaseResult", "run_faults"]

#: How long each phase lasts: load before the fault, the fault, load after recovery.
WARM_S, FAULT_S, AFTER_S = 2.0, 5.0, 2.0
#: How long writes may take to work again once the fault is removed.
RECOVERY_S = 60.0
WRITERS = 3


@dataclass
class CaseResult:
    name: str
    acked: int = 0
    acked_lost: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    untyped: list[str] = field(default_factory=list)
    partial: int = 0
    reads: int = 0
    reads_answered: int = 0
    degraded_seen: bool = False
    healthy_after: bool = False
    recovered: bool = False
    same_process: bool = True
    ran: bool = True
    note: str = ""

    def ok(self) -> bool:
        return (self.recovered and not self.acked_lost and not self.untyped and not self.partial
                and self.healthy_after and self.reads == self.reads_answered)

    def line(self) -> str:
        if not self.ran:
            return f"  {self.name:<20} not run: {self.note}"
        refused = ", ".join(f"{code}={n}" for code, n in sorted(self.refused.items())) or "none"
        return (f"  {self.name:<20} acked={self.acked} lost={self.acked_lost} refused: {refused}; "
                f"untyped={len(self.untyped)} partial={self.partial} reads answered={self.reads_answered}/{self.reads} "
                f"degraded_seen={self.degraded_seen} healthy_after={self.healthy_after} "
                f"recovered={self.recovered}{'' if self.same_process else ' (after a restart)'}"
                + (f"; {self.note}" if self.note else "")
                + "".join(f"\n    untyped: {u[:300]}" for u in sorted(set(self.untyped))[:5]))


# -- the load -----------------------------------------------------------------------------


class Load:
    """Writers and a reader against a service, recording what was acknowledged and refused."""

    def __init__(self, url: str, causes: set[str], result: CaseResult) -> None:
        self.url, self.causes, self.result = url, causes, result
        self.stop = threading.Event()
        self.guard = threading.Lock()
        self.single: dict[str, str] = {}  # acked id -> text
        self.batches: list[tuple[list[str], bool]] = []  # texts of a batch, acked?
        self.threads = [threading.Thread(target=self._writer, args=(w,), daemon=True) for w in range(WRITERS)]
        self.threads.append(threading.Thread(target=self._reader, daemon=True))

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(120)

    def _refused(self, what: str, response: httpx.Response | None, error: Exception | None) -> None:
        code = _code(response) if response is not None else None
        with self.guard:
            if code is not None and code in self.causes:
                self.result.refused[code] = self.result.refused.get(code, 0) + 1
            else:
                got = f"{response.status_code} {code}" if response is not None else f"{type(error).__name__}: {error}"
                self.result.untyped.append(f"{what}: {got}")

    def _writer(self, w: int) -> None:
        n = 0
        with httpx.Client(base_url=self.url, timeout=120) as client:
            while not self.stop.is_set():
                n += 1
                scope = f"customer:{w}"
                if n % 3:
                    text = f"Customer {w} ordered item {n} for delivery to depot {n % 7}"
                    reply, error = _call(client, "POST", "/v1/memories", {"text": text, "scope": scope})
                    if reply is not None and reply.status_code == 201:
                        with self.guard:
                            self.single[reply.json()["id"]] = text
                    else:
                        self._refused("write", reply, error)
                    continue
                items = [{"text": f"Customer {w} returned parcel {n}-{i} at locker {i}", "scope": scope} for i in range(3)]
                items.append({"text": f"Customer {w} is on plan tier {n}", "scope": scope, "key": "plan"})
                reply, error = _call(client, "POST", "/v1/memories/batch", {"items": items})
                acked = reply is not None and reply.status_code == 201
                with self.guard:
                    self.batches.append(([str(i["text"]) for i in items], acked))
                if not acked:
                    self._refused("batch", reply, error)

    def _reader(self) -> None:
        with httpx.Client(base_url=self.url, timeout=120) as client:
            while not self.stop.is_set():
                reply, _ = _call(client, "POST", "/v1/memories/search", {"query": "delivery to depot", "scope": "customer:0"})
                with self.guard:
                    self.result.reads += 1
                    # An answer: results, or a typed refusal when the store is out of reach.
                    if reply is not None and (reply.status_code == 200 or _code(reply) in self.causes):
                        self.result.reads_answered += 1
                time.sleep(0.05)

    def verify(self, url: str) -> None:
        """What a reader sees once the fault is gone (module docstring)."""
        result = self.result
        result.acked = len(self.single) + sum(len(texts) for texts, acked in self.batches if acked)
        with httpx.Client(base_url=url, timeout=120) as client:
            stored: dict[str, list[dict[str, Any]]] = {}
            for w in range(WRITERS):
                reply = client.get("/v1/memories", params={"scope": f"customer:{w}", "include_superseded": "true"})
                reply.raise_for_status()
                stored[f"customer:{w}"] = reply.json()["results"]
        ids = {m["id"] for ms in stored.values() for m in ms}
        texts = {m["text"] for ms in stored.values() for m in ms}
        result.acked_lost = sum(1 for i in self.single if i not in ids)
        for batch, acked in self.batches:
            present = sum(t in texts for t in batch)
            if acked:
                result.acked_lost += len(batch) - present
            elif 0 < present < len(batch):
                result.partial += 1
        for memories in stored.values():
            result.partial += _broken_lineage([m for m in memories if m.get("key") == "plan"])


def _broken_lineage(versions: list[dict[str, Any]]) -> int:
    """1 unless the versions hold one after another, the last one alone current."""
    if not versions:
        return 0
    ordered = sorted(versions, key=lambda m: (m["valid_from"], m["created_at"]))
    current = [m for m in ordered if m["valid_to"] is None]
    chained = all(a["valid_to"] == b["valid_from"] for a, b in itertools.pairwise(ordered))
    return 0 if len(current) == 1 and current[0] is ordered[-1] and chained else 1


def _call(client: httpx.Client, method: str, path: str, body: Any) -> tuple[httpx.Response | None, Exception | None]:
    try:
        return client.request(method, path, json=body), None
    except httpx.HTTPError as exc:
        return None, exc


def _code(reply: httpx.Response) -> str | None:
    try:
        return str(reply.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return None


# -- running a case -----------------------------------------------------------------------


@dataclass
class Fault:
    """A fault to inject under a running service: what it is called, the codes a refused
    write may carry, and whether `/healthz` must say degraded while it lasts."""

    name: str
    causes: set[str]
    inject: Callable[[], None]
    remove: Callable[[], None]
    degrades: bool = True


def live_case(service: LiveService, fault: Fault) -> CaseResult:
    """Load, inject, hold, remove, wait for a write to land, load, verify (same process)."""
    result = CaseResult(fault.name)
    pid = service.pid
    with Load(service.url, fault.causes, result) as load:
        time.sleep(WARM_S)
        fault.inject()
        try:
            result.degraded_seen = _watch_health(service.url, FAULT_S, want_degraded=fault.degrades)
        finally:
            fault.remove()
        result.recovered = _write_lands(service.url, fault.causes, result)
        time.sleep(AFTER_S)
    result.healthy_after = _health(service.url) == "ok"
    result.same_process = service.pid == pid
    load.verify(service.url)
    result.recovered = result.recovered and result.same_process
    if not fault.degrades:
        result.note = "a slow store refuses nothing: degraded_seen means /healthz kept answering"
    return result


def _health(url: str) -> str:
    try:
        return str(httpx.get(f"{url}/healthz", timeout=30).json().get("status"))
    except (httpx.HTTPError, ValueError):
        return "no answer"


def _watch_health(url: str, seconds: float, *, want_degraded: bool) -> bool:
    """Hold the fault for `seconds`; whether /healthz said degraded (or, for a fault that need not
    degrade the store, kept answering) meanwhile."""
    seen, answered, deadline = False, True, time.monotonic() + seconds
    while time.monotonic() < deadline:
        status = _health(url)
        seen |= status == "degraded"
        answered &= status in ("ok", "degraded")
        time.sleep(0.25)
    return seen if want_degraded else answered


def _write_lands(url: str, causes: set[str], result: CaseResult) -> bool:
    deadline = time.monotonic() + RECOVERY_S
    with httpx.Client(base_url=url, timeout=60) as client:
        while time.monotonic() < deadline:
            reply, error = _call(client, "POST", "/v1/memories", {"text": "The fault is over for customer 0", "scope": "probe"})
            if reply is not None and reply.status_code == 201:
                return True
            if reply is None or _code(reply) not in causes:
                result.untyped.append(f"probe: {reply.status_code if reply is not None else error}")
            time.sleep(0.5)
    return False


# -- the faults ---------------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A size-limited file system at `where` (root only)."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True, capture_output=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)


def can_mount() -> tuple[bool, str]:
    if os.geteuid() != 0:
        return False, "a size-limited file system needs root to mount"
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with tmpfs(Path(tmp) / "m", "1m"):
                return True, ""
        except subprocess.CalledProcessError as exc:
            return False, f"mount refused: {exc.stderr.decode(errors='replace').strip()}"


def fill(path: Path) -> None:
    """Write a ballast file until its file system has no byte left."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for chunk in (1 << 20, 1 << 12, 1):
            block = b"\0" * chunk
            with contextlib.suppress(OSError):  # ENOSPC: this size no longer fits
                while os.write(fd, block):
                    pass
    finally:
        os.close(fd)


def sqlite_full(root: Path) -> CaseResult:
    with tmpfs(root / "sqlite-full", "48m") as mnt, LiveService(mnt / "data") as service:
        ballast = mnt / "ballast"
        return live_case(service, Fault("sqlite/full", {"storage_full"}, lambda: fill(ballast), ballast.unlink))


def sqlite_damaged(root: Path) -> CaseResult:
    """Truncated while stopped: the service refuses to start, then serves the backup."""
    result = CaseResult("sqlite/truncated")
    data = root / "sqlite-damaged"
    with LiveService(data) as service, Load(service.url, set(), result) as load:
        time.sleep(WARM_S)
    db = data / "fourfold.sqlite3"
    backup = root / "backup"
    backup.mkdir()
    for part in data.glob("fourfold.sqlite3*"):  # the log too: it holds the latest writes
        shutil.copy(part, backup / part.name)
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    try:
        with LiveService(data):
            result.untyped.append("the service started on a truncated database")
    except StoreUnavailable as exc:
        result.degraded_seen = "truncated" in str(exc)  # the refusal names the damage
        if not result.degraded_seen:
            result.untyped.append(f"start refused without naming the damage: {str(exc)[-300:]}")
    for part in backup.iterdir():
        shutil.copy(part, data / part.name)
    with LiveService(data) as service:
        result.recovered = _write_lands(service.url, set(), result)
        result.healthy_after = _health(service.url) == "ok"
        load.verify(service.url)
    result.same_process = True  # restarting is the remedy here: the file was replaced
    result.note = "refused to start while truncated; served again from the restored file"
    return result


class Proxy:
    """A TCP proxy in front of PostgreSQL that can delay every chunk or cut every connection."""

    def __init__(self, target: int) -> None:
        self.target, self.port = target, free_port()
        self.delay = 0.0
        self.cut = False
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._guard = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def set_cut(self, cut: bool) -> None:
        self.cut = cut
        if cut:
            with self._guard:
                pairs, self._pairs = self._pairs, []
            for a, b in pairs:
                for s in (a, b):
                    with contextlib.suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)
                    s.close()

    def close(self) -> None:
        self._server.close()
        self.set_cut(True)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self.cut:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            with self._guard:
                self._pairs.append((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(65536):
                if self.delay:
                    time.sleep(self.delay)
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)


def postgres_cases(root: Path, mountable: bool, why: str) -> list[CaseResult]:
    import psycopg

    from fourfold.testing.postgres import SERVER_USER, PostgresServer

    results: list[CaseResult] = []
    with ExitStack() as stack:
        server = stack.enter_context(PostgresServer())
        proxy = Proxy(int(server.port or 0))
        stack.callback(proxy.close)
        url = server.url.replace(f":{server.port}/", f":{proxy.port}/")

        def admin(sql: str) -> None:
            with psycopg.connect(server.url, autocommit=True) as conn:
                conn.execute("SET default_transaction_read_only = off")  # while the database's is on
                conn.execute(sql)

        def read_only(on: bool) -> None:
            admin(f'ALTER DATABASE "{server.database}" {"SET default_transaction_read_only = on" if on else "RESET default_transaction_read_only"}')
            # A database's settings apply to new sessions: end the service's, as a failover does.
            admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()"
                  " AND pid <> pg_backend_pid() AND backend_type = 'client backend'")

        def slow(seconds: float) -> Callable[[], None]:
            return lambda: setattr(proxy, "delay", seconds)

        faults = [
            Fault("postgres/slow", {"lock_timeout", "store_unavailable"}, slow(1.5), slow(0.0), degrades=False),
            Fault("postgres/cut", {"store_unavailable", "lock_timeout"}, lambda: proxy.set_cut(True), lambda: proxy.set_cut(False)),
            Fault("postgres/read-only", {"store_read_only", "store_unavailable"}, lambda: read_only(True), lambda: read_only(False)),
        ]
        for fault in faults:
            with LiveService(root / f"pg-{fault.name.split('/')[1]}", store=url, startup_timeout=120) as service:
                results.append(live_case(service, fault))
            admin("DROP SCHEMA IF EXISTS fourfold CASCADE")
        if not mountable:
            results.append(CaseResult("postgres/full", ran=False, note=why))
            return results
        with tmpfs(root / "pg-full", "24m") as mnt, LiveService(root / "pg-full-svc", store=url, startup_timeout=120) as service:
            space = mnt / "space"
            space.mkdir()
            shutil.chown(space, SERVER_USER)
            _memories_into(server.url, space)
            ballast = mnt / "ballast"
            results.append(live_case(service, Fault("postgres/full", {"storage_full"}, lambda: fill(ballast), ballast.unlink)))
    return results


def _memories_into(url: str, location: Path) -> None:
    """Move the memories table and its indexes to a tablespace at `location` (a small disk)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLESPACE small LOCATION '{location}'")
        schema = conn.execute("SELECT schemaname FROM pg_tables WHERE tablename = 'memories'").fetchone()[0]
        conn.execute(f'ALTER TABLE "{schema}".memories SET TABLESPACE small')
        for (index,) in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename = 'memories'",
                                     (schema,)).fetchall():
            conn.execute(f'ALTER INDEX "{schema}"."{index}" SET TABLESPACE small')


def run_faults(engine: str) -> list[CaseResult]:
    """Every case on the engines asked for ("both", "sqlite", "postgres")."""
    mountable, why = can_mount()
    results: list[CaseResult] = []
    with tempfile.TemporaryDirectory(prefix="fourfold-faults-") as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # PostgreSQL's own user reaches its tablespace through it
        if engine != "postgres":
            results.append(sqlite_full(root) if mountable else CaseResult("sqlite/full", ran=False, note=why))
            results.append(sqlite_damaged(root))
        if engine != "sqlite":
            results.extend(postgres_cases(root, mountable, why))
    return results


def summary(results: list[CaseResult]) -> str:
    ran = [r for r in results if r.ran]
    return (f"faults: cases={len(ran)} acked_lost={sum(r.acked_lost for r in ran)} "
            f"untyped_errors={sum(len(r.untyped) for r in ran)} partial={sum(r.partial for r in ran)} "
            f"recovered={sum(r.recovered for r in ran)} of {len(ran)}")
