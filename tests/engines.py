"""What the tests read back from either database engine's disk (a SQLite file, or PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["assert_erased", "on_disk"]


def _connect(url: str):  # type: ignore[no-untyped-def]
    import psycopg

    from fourfold.stores.postgres import split_schema

    conninfo, schema = split_schema(url)
    return psycopg.connect(conninfo, autocommit=True), schema or "fourfold"


def on_disk(target: Path | str) -> bytes:
    """Every byte the engine keeps: the files beside a SQLite database, or every file of the
    PostgreSQL server's data directory (tables, indexes, WAL) after a checkpoint."""
    if isinstance(target, Path):
        return b"".join(p.read_bytes() for p in sorted(target.parent.iterdir()) if p.is_file())
    conn, _ = _connect(target)
    with conn:
        conn.execute("CHECKPOINT")
        root = Path(conn.execute("SHOW data_directory").fetchone()[0])
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def assert_erased(target: Path | str, table: str, *needles: str) -> None:
    """What erasure guarantees on the engine.

    SQLite: no byte of the needles in any file. PostgreSQL: the erasure was vacuumed, so the
    table keeps no dead tuple (the freed space and the WAL may still hold the bytes until
    they are overwritten or recycled: see `fourfold.stores.postgres`).
    """
    if isinstance(target, Path):
        raw = on_disk(target)
        for needle in needles:
            assert needle.encode() not in raw, needle
        return
    conn, schema = _connect(target)
    with conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        dead = conn.execute("SELECT dead_tuple_count FROM pgstattuple(%s)", (f'"{schema}".{table}',)).fetchone()[0]
    assert dead == 0, f"{dead} dead tuples left in {table}: the erasure was not vacuumed"
