"""Faults of the disk and the server: each refused write names its cause in a typed error,
leaves nothing behind (no version without its bookkeeping), and writes work again without
reopening once the fault is gone."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

from conftest import OpenMemory
from fourfold import Memory, StorageFull, StoreCorrupt, StoreReadOnly, StoreUnavailable
from fourfold.service.errors import error_for, status_for
from fourfold.stores._pgconn import translate

S = "customer:1"


def snapshot(memory: Memory) -> list[tuple[str, str, float, float | None]]:
    """Every memory of the scope with its validity: what a partial write would change."""
    return sorted((m.id, m.text, m.valid_from, m.valid_to) for m in memory.long_term.all(scope=S, include_superseded=True))


def batch(n: int, tag: str) -> list[dict[str, object]]:
    return [{"text": f"The customer owns device {tag}-{i} bought in store {i}", "scope": S} for i in range(n)] + [
        {"text": f"Prefers contact by {tag}", "scope": S, "key": "channel"}
    ]


def set_pragma(memory: Memory, pragma: str) -> None:
    """Set a pragma on the connection this thread's writes use (SQLite keeps both per connection)."""
    with memory.database.read() as conn:  # a read: a read-only connection refuses BEGIN IMMEDIATE
        conn.execute(f"PRAGMA {pragma}")


def test_a_full_sqlite_database_refuses_the_whole_batch_with_storage_full(memory: Memory) -> None:
    memory.long_term.remember_many(batch(3, "email"))
    before = snapshot(memory)
    with memory.database.read() as conn:
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    set_pragma(memory, f"max_page_count = {pages}")  # the quota: no page more than now
    with pytest.raises(StorageFull, match="full"):
        memory.long_term.remember_many(batch(400, "phone"))
    assert snapshot(memory) == before  # not one memory, and the keyed version still current
    set_pragma(memory, "max_page_count = 1073741823")  # room again: no reopening
    memory.long_term.remember_many(batch(400, "phone"))
    current = [m.text for m in memory.long_term.all(scope=S) if m.key == "channel"]
    assert current == ["Prefers contact by phone"]


def test_a_read_only_sqlite_database_refuses_writes_but_answers_reads(memory: Memory) -> None:
    kept = memory.long_term.remember("The customer lives in Lisbon", scope=S)
    set_pragma(memory, "query_only = ON")
    with pytest.raises(StoreReadOnly, match="read-only"):
        memory.long_term.remember("The customer moved to Porto", scope=S)
    assert [m.id for m in memory.long_term.all(scope=S)] == [kept]
    assert [h.id for h in memory.long_term.recall("where does the customer live", scope=S)] == [kept]
    set_pragma(memory, "query_only = OFF")
    memory.long_term.remember("The customer moved to Porto", scope=S)
    assert len(memory.long_term.all(scope=S)) == 2


def test_storage_errors_keep_their_type_and_their_http_status() -> None:
    assert issubclass(StorageFull, StoreUnavailable) and issubclass(StoreReadOnly, StoreUnavailable)
    assert status_for(StorageFull.code) == 507
    assert status_for(StoreReadOnly.code) == 503
    for cls in (StorageFull, StoreReadOnly):  # what RemoteMemory raises from the service's answer
        assert type(error_for(cls.code, "x")) is cls


def test_postgresql_disk_full_and_read_only_errors_are_typed() -> None:
    url = "postgresql://app:s3cret@db.example/mem"
    full = translate(psycopg.errors.DiskFull("could not extend file: No space left on device"), url)
    assert isinstance(full, StorageFull) and "s3cret" not in str(full)
    standby = translate(psycopg.errors.ReadOnlySqlTransaction("cannot execute INSERT in a read-only transaction"), url)
    assert isinstance(standby, StoreReadOnly)
    assert type(translate(psycopg.OperationalError("server closed the connection unexpectedly"), url)) is StoreUnavailable


@pytest.mark.postgres
def test_a_read_only_postgresql_database_refuses_writes_then_recovers(
    open_memory: OpenMemory, postgres_url: str
) -> None:
    memory = open_memory(postgres_url)
    kept = memory.long_term.remember("The customer lives in Lisbon", scope=S)
    conninfo = postgres_url.split("?")[0]
    with psycopg.connect(conninfo, autocommit=True) as admin:
        database = admin.execute("SELECT current_database()").fetchone()[0]

        def read_only(on: bool) -> None:
            setting = "SET default_transaction_read_only = on" if on else "RESET default_transaction_read_only"
            admin.execute(f'ALTER DATABASE "{database}" {setting}')
            # Settings of a database apply to new sessions: end the pool's, as a failover does.
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                          " WHERE datname = current_database() AND pid <> pg_backend_pid()")

        read_only(True)
        try:
            with pytest.raises(StoreReadOnly, match="reads only"):
                memory.long_term.remember("The customer moved to Porto", scope=S)
            assert [m.id for m in memory.long_term.all(scope=S)] == [kept]
        finally:
            read_only(False)
    memory.long_term.remember("The customer moved to Porto", scope=S)
    assert len(memory.long_term.all(scope=S)) == 2


def test_healthz_reports_a_store_refusing_writes_until_a_write_lands(memory: Memory, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from fourfold.embeddings import HashEmbedder
    from fourfold.service.app import create_app
    from fourfold.service.keys import KeyStore
    from fourfold.service.tenancy import Tenants

    tenants = Tenants(tmp_path / "svc", embedder=HashEmbedder(), memories={"acme": memory})
    keys = KeyStore(tmp_path / "keys.sqlite3")
    try:
        with TestClient(create_app(tenants, keys, mount_mcp=False)) as client:
            assert client.get("/healthz").json() == {"status": "ok"}
            set_pragma(memory, "query_only = ON")
            with pytest.raises(StoreReadOnly):
                memory.long_term.remember("The customer moved to Porto", scope=S)
            assert memory.database.degraded is not None
            assert client.get("/healthz").json() == {"status": "degraded", "cause": "store_read_only", "tenants": "1"}
            set_pragma(memory, "query_only = OFF")
            memory.long_term.remember("The customer moved to Porto", scope=S)
            assert client.get("/healthz").json() == {"status": "ok"}
    finally:
        keys.close()
        tenants.close()


def test_a_truncated_sqlite_database_is_refused_at_open_not_served_in_part(open_memory: OpenMemory, tmp_path: Path) -> None:
    from fourfold import doctor

    data_dir = tmp_path / "data"
    with open_memory(data_dir) as memory:
        memory.long_term.remember_many(batch(300, "email"))
    path = data_dir / "fourfold.sqlite3"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(StoreCorrupt, match="truncated"):
        open_memory(data_dir)
    assert [f.problem.split(":")[0] for f in doctor.check(data_dir).findings] == ["database"]


def test_a_key_store_out_of_reach_is_a_typed_503_not_a_500() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.testclient import TestClient

    from fourfold.errors import FourfoldError
    from fourfold.service.admission import Admission

    def authenticate(scope: object) -> object:
        raise StoreUnavailable("cannot reach PostgreSQL at postgresql://app:***@db/mem")

    def respond(exc: FourfoldError) -> JSONResponse:
        return JSONResponse({"error": {"code": exc.code}}, status_code=status_for(exc.code))

    with ThreadPoolExecutor(1) as executor:
        app = Admission(Starlette(), authenticate=authenticate, executor=executor, respond=respond)
        reply = TestClient(app).post("/v1/memories", json={"text": "The customer lives in Lisbon"})
    assert (reply.status_code, reply.json()) == (503, {"error": {"code": "store_unavailable"}})


def test_a_write_to_a_full_device_is_storage_full() -> None:
    import errno

    from fourfold._files import write_error

    with pytest.raises(OSError) as info, open("/dev/full", "w") as device:  # the kernel's full disk
        device.write("x" * 10_000)
        device.flush()
    assert info.value.errno == errno.ENOSPC
    assert isinstance(write_error(info.value, "/dev/full"), StorageFull)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a size-limited file system needs root")
def test_an_export_onto_a_full_disk_is_one_typed_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess

    from fourfold.cli import main

    where = ["--data-dir", str(tmp_path / "data"), "--embedder", "hash"]
    for i in range(30):
        main([*where, "remember", "--scope", S, f"Customer bought item {i}: {'a detailed description ' * 20}"])
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mnt)], check=True)
    try:
        capsys.readouterr()
        assert main([*where, "export", str(mnt / "out.jsonl")]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "No space left" in err and len(err.strip().splitlines()) == 1
        assert list(mnt.iterdir()) == []  # nothing half-written left behind
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
