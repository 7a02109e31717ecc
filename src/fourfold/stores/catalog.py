"""Which ids each scope holds: a small SQLite file beside an embedded vector store.

Reading one scope out of Chroma with a `where` filter costs time that grows with the whole
collection, while fetching the same records by id costs time that grows with the scope
alone. The catalog turns the first into the second.

It is kept a superset of the store: ids are added before the store writes them and
removed after the store deleted them, both under the store's write lock, so a crash
between the two leaves an id the store no longer has (skipped when read), never a
record the catalog does not list. A scope is trusted only once it is *complete*: every
scope of a store the catalog was created with, or a scope whose ids were read from the
store once (the first read of each scope of an older store pays the `where` scan).

Scopes are stored as digests, never by name, and ids are content digests: the file holds
no text of any memory.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from fourfold.errors import StoreUnavailable
from fourfold.stores.sqlite import enter_wal
from fourfold.stores.vector import scope_key

__all__ = ["ScopeCatalog", "catalog_path"]

log = logging.getLogger("fourfold.stores")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ids (id TEXT PRIMARY KEY, scope BLOB NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ids_by_scope ON ids (scope);
CREATE TABLE IF NOT EXISTS complete (scope BLOB PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
"""
_ALL_COMPLETE = "all_complete"


def _digest(scope: str | None) -> bytes:
    return hashlib.blake2b(scope_key(scope).encode(), digest_size=16, person=b"fourfold-scope").digest()


class ScopeCatalog:
    """scope -> ids, persisted; callers hold the store's write lock for every change."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._timeout = timeout
        #: Complete for every scope: set once, when the catalog was created for an empty store.
        self.all_complete = False
        try:
            self._db().executescript(_SCHEMA)
        except sqlite3.Error as exc:
            self.close()
            raise StoreUnavailable(f"cannot open the scope catalog {self.path}: {exc}") from exc

    @classmethod
    def open(cls, path: str | Path, *, store_is_empty: Callable[[], bool], timeout: float = 30.0) -> ScopeCatalog:
        """Open (or create) the catalog, under the store's write lock.

        A catalog created for an empty store is complete for every scope. A damaged file is
        set aside (`.damaged`) and started again: it is rebuilt from the store scope by scope.
        """
        path = Path(path)
        try:
            return cls._open(path, store_is_empty, timeout)
        except StoreUnavailable as exc:
            if not isinstance(exc.__cause__, sqlite3.DatabaseError) or isinstance(exc.__cause__, sqlite3.OperationalError):
                raise
            log.warning("scope catalog %s is damaged (%s); rebuilding it from the store", path, exc.__cause__)
            path.replace(path.with_name(path.name + ".damaged"))
            for suffix in ("-wal", "-shm"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)
            return cls._open(path, store_is_empty, timeout)

    @classmethod
    def _open(cls, path: Path, store_is_empty: Callable[[], bool], timeout: float) -> ScopeCatalog:
        created = not path.exists()
        catalog = cls(path, timeout=timeout)
        try:  # also the probe that finds a damaged file
            flag = catalog._db().execute("SELECT 1 FROM info WHERE key = ? AND value = '1'", (_ALL_COMPLETE,)).fetchone()
        except sqlite3.Error as exc:
            catalog.close()
            raise StoreUnavailable(f"scope catalog {path}: {exc}") from exc
        if created and store_is_empty():
            with catalog._write() as db:
                db.execute("INSERT OR REPLACE INTO info VALUES (?, '1')", (_ALL_COMPLETE,))
            flag = (1,)
        catalog.all_complete = flag is not None
        return catalog

    # -- reads ----------------------------------------------------------------------------

    def ids(self, scope: str | None) -> list[str] | None:
        """The scope's ids, or None when the catalog does not know the scope completely yet."""
        db = self._db()
        try:
            digest = _digest(scope)
            complete = self.all_complete or db.execute("SELECT 1 FROM complete WHERE scope = ?", (digest,)).fetchone()
            if not complete:
                return None
            return [row[0] for row in db.execute("SELECT id FROM ids WHERE scope = ?", (digest,))]
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"scope catalog {self.path}: {exc}") from exc

    def listed(self, ids: Sequence[str]) -> set[str] | None:
        """Which of ids the catalog lists; None unless it is complete for every scope.

        An id a complete catalog does not list is not in the store (the catalog is a
        superset); a listed id may still be one a crash kept out of the store.
        """
        if not self.all_complete:
            return None
        db = self._db()
        try:
            found: set[str] = set()
            for start in range(0, len(ids), 500):
                part = list(ids[start : start + 500])
                marks = ",".join("?" * len(part))
                found.update(row[0] for row in db.execute(f"SELECT id FROM ids WHERE id IN ({marks})", part))
            return found
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"scope catalog {self.path}: {exc}") from exc

    # -- changes (under the store's write lock) -------------------------------------------

    def add(self, pairs: Iterable[tuple[str | None, str]]) -> None:
        """Record (scope, id) pairs before the store writes them."""
        rows = [(record_id, _digest(scope)) for scope, record_id in pairs]
        if rows:
            with self._write() as db:
                db.executemany("INSERT OR REPLACE INTO ids VALUES (?, ?)", rows)

    def fill(self, scope: str | None, ids: Sequence[str]) -> None:
        """The store's full id list of a scope, read under the write lock: the scope is complete."""
        digest = _digest(scope)
        with self._write() as db:
            db.executemany("INSERT OR REPLACE INTO ids VALUES (?, ?)", [(i, digest) for i in ids])
            db.execute("INSERT OR IGNORE INTO complete VALUES (?)", (digest,))

    def remove(self, ids: Sequence[str]) -> None:
        """Forget ids after the store deleted them."""
        if ids:
            with self._write() as db:
                db.executemany("DELETE FROM ids WHERE id = ?", [(i,) for i in ids])

    def remove_scope(self, scope: str | None) -> None:
        with self._write() as db:
            db.execute("DELETE FROM ids WHERE scope = ?", (_digest(scope),))

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    # -- connections ----------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        """One connection per thread (sqlite3 connections are not shared across threads)."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            try:
                db = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
                enter_wal(db, self._timeout)
                db.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.Error as exc:
                raise StoreUnavailable(f"cannot open the scope catalog {self.path}: {exc}") from exc
            self._local.db = db
        return db

    def _write(self) -> _Transaction:
        return _Transaction(self)


class _Transaction:
    """`with catalog._write() as db:` one IMMEDIATE transaction, committed or rolled back."""

    def __init__(self, catalog: ScopeCatalog) -> None:
        self._catalog = catalog
        self._db: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        self._db = self._catalog._db()
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"scope catalog {self._catalog.path}: {exc}") from exc
        return self._db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        assert self._db is not None
        try:
            self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")
        except sqlite3.Error as error:
            if exc_type is None:
                raise StoreUnavailable(f"scope catalog {self._catalog.path}: {error}") from error


def catalog_path(root: Path, collection: str) -> Path:
    """Where the catalog of one collection of an embedded store lives."""
    return root / f"fourfold-scopes-{collection}.sqlite3"
