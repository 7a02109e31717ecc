"""Reading what is left of a damaged SQLite store: every readable row, counted per table.

`fourfold doctor --repair` copies the rows into a fresh file in place of the damaged one;
`fourfold export --salvage` copies them into a scratch data dir and exports that, leaving the
damaged file untouched (a copy of it is read, so SQLite writes nothing beside the original).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from fourfold._manifest import MANIFEST
from fourfold.errors import InvalidInput, StoreCorrupt
from fourfold.stores.sqlite import DATABASE, SQLiteDatabase

if TYPE_CHECKING:
    from fourfold.embeddings.base import Embedder
    from fourfold.transfer import Counts

__all__ = ["Salvage", "copy_readable", "export_salvaged", "readonly_db"]

#: Columns made from a row's other columns: a damaged file's copy is not trusted, the store
#: makes them again when it reads the row (a memory's or an episode's kept tokens, from its text).
_DERIVED: dict[str, set[str]] = {"memories": {"tokens"}, "episodes": {"tokens"}}
#: When neither a table's size nor its last row can be read, probing for rows past the damage
#: stops after this many rowids in a row that hold nothing readable.
_PROBE = 1000


@dataclass(slots=True)
class Salvage:
    """Rows recovered and lost, per table of the store's schema."""

    recovered: dict[str, int] = field(default_factory=dict)
    #: None where the number is not known: neither the table's size nor its last row can be read.
    lost: dict[str, int | None] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.recovered.values())

    def summary(self) -> str:
        parts = [f"{table} {n} recovered, {_lost(self.lost.get(table, 0))} lost"
                 for table, n in self.recovered.items() if n or self.lost.get(table) != 0]
        return "; ".join(parts) or "nothing readable"


def _lost(n: int | None) -> str:
    return "an unknown number" if n is None else str(n)


def copy_readable(damaged: Path, fresh: Path) -> Salvage:
    """Copy every readable row of `damaged` into a new database at `fresh` (current schema).

    A table is read whole when it can be; otherwise row by row in rowid order, skipping the
    rows whose pages cannot be read. `damaged` is only ever opened read-only.
    """
    SQLiteDatabase(fresh).close()  # the current schema
    salvage = Salvage()
    new = sqlite3.connect(fresh)
    try:
        tables = [r[0] for r in new.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        with readonly_db(damaged) as old:
            for table in tables:
                try:
                    theirs = {r[1] for r in old.execute(f"PRAGMA table_info({table})")} - _DERIVED.get(table, set())
                except sqlite3.Error:
                    continue  # the schema itself is unreadable: nothing of this table can be named
                cols = [r[1] for r in new.execute(f"PRAGMA table_info({table})") if r[1] in theirs]
                if not cols:
                    continue
                rows, lost = _rows(old, table, ", ".join(cols))
                marks = ", ".join("?" * len(cols))
                new.executemany(f"INSERT OR REPLACE INTO {table} ({', '.join(cols)}) VALUES ({marks})", rows)
                salvage.recovered[table], salvage.lost[table] = len(rows), lost
        new.commit()
        new.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        new.close()
    return salvage


def _rows(old: sqlite3.Connection, table: str, cols: str) -> tuple[list[Any], int | None]:
    """The readable rows of one table, and how many could not be read (None: not known)."""
    try:
        return old.execute(f"SELECT {cols} FROM {table}").fetchall(), 0
    except sqlite3.Error:
        pass  # some page is damaged: read around it, row by row
    size = _size(old, table)
    top = _one(old, f"SELECT max(rowid) FROM {table}")
    rows: list[Any] = []
    failed = rowid = misses = 0
    while (rowid < top) if top is not None else (misses < _PROBE):
        rowid += 1
        try:
            row = old.execute(f"SELECT {cols} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        except sqlite3.Error:
            row = None
            failed += 1
        if row is None:
            misses += 1
            continue
        rows.append(row)
        misses = 0
    if size is not None and size >= len(rows):
        return rows, size - len(rows)
    # Without the table's size, its last rowid bounds the rows that failed to be read; without
    # either, the rows past the damage cannot be told from rowids never used.
    return rows, failed if top is not None else None


def _size(conn: sqlite3.Connection, table: str) -> int | None:
    """The table's row count from the table or any of its full indexes that can still be read."""
    size = _one(conn, f"SELECT count(*) FROM {table}")
    if size is not None:
        return size
    try:
        indexes = [r[1] for r in conn.execute(f"PRAGMA index_list({table})") if not r[4]]  # r[4]: partial
    except sqlite3.Error:
        return None
    counts = [_one(conn, f'SELECT count(*) FROM {table} INDEXED BY "{name}"') for name in indexes]
    return max((n for n in counts if n is not None), default=None)


def _one(conn: sqlite3.Connection, query: str) -> int | None:
    try:
        row = conn.execute(query).fetchone()
    except sqlite3.Error:
        return None
    return None if row is None or row[0] is None else int(row[0])


def export_salvaged(data_dir: str | Path, embedder: Embedder, out: IO[str]) -> tuple[Counts, Salvage]:
    """Export what can be read of a data dir whose database is damaged; the data dir is not touched.

    The database (and its write-ahead log) is copied to a scratch data dir, the readable rows
    are copied from that into a fresh database, and the fresh one is exported as `export_memory`
    does. Raises StoreCorrupt when not even the schema can be read.
    """
    from fourfold.memory import Memory
    from fourfold.transfer import export_memory

    root = Path(data_dir)
    if not (root / DATABASE).is_file():
        raise InvalidInput(f"{root} holds no SQLite store ({DATABASE}) to salvage")
    with _scratch() as scratch:
        for suffix in ("", "-wal"):
            source = root / f"{DATABASE}{suffix}"
            if source.exists():
                shutil.copyfile(source, scratch / f"damaged{suffix}")
        if (root / MANIFEST).exists():
            shutil.copyfile(root / MANIFEST, scratch / MANIFEST)
        try:
            salvage = copy_readable(scratch / "damaged", scratch / DATABASE)
        except sqlite3.Error as exc:
            raise StoreCorrupt(f"{root / DATABASE}: nothing can be salvaged ({exc}); restore it from a backup") from None
        if not salvage.recovered:
            raise StoreCorrupt(f"{root / DATABASE}: not even its schema can be read; restore it from a backup")
        for side in ("damaged", "damaged-wal", "damaged-shm"):
            (scratch / side).unlink(missing_ok=True)
        with Memory.open(scratch, embedder=embedder, create=False) as mem:
            counts = export_memory(mem, out)
    return counts, salvage


@contextmanager
def _scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="fourfold-salvage-") as name:
        yield Path(name)


class readonly_db:
    """A read-only SQLite connection that is closed on exit (sqlite3's own context manager is not)."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        # A file shorter than its header's page count is refused whole unless the schema is
        # "writable"; on a read-only connection this only lets the pages that are there be read.
        self._conn.execute("PRAGMA writable_schema = ON")

    def __enter__(self) -> sqlite3.Connection:
        return self._conn

    def __exit__(self, *exc: object) -> None:
        self._conn.close()
