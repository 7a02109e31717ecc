"""PostgreSQL (with pgvector for large scopes): one database shared by any number of machines.

The stores' portable SQL runs unchanged: `?` placeholders become `%s`. Every fourfold
database lives in a PostgreSQL *schema* (`fourfold` unless the URL says `?schema=NAME`), so
one PostgreSQL database can hold several (a service's tenants, tests). Transactions:

- `read()` is a REPEATABLE READ, READ ONLY snapshot, like a SQLite read.
- `write()` is READ COMMITTED and first locks the schema's clock row, so writers of one
  schema take turns exactly as SQLite's BEGIN IMMEDIATE makes them: a check-then-insert
  stays atomic and the versions a write reports (before, after) have no other write between.
- `lock(name)` is a session advisory lock: it holds across machines and is released when its
  holder's connection ends (a killed process never leaves it held).

Erasure on PostgreSQL, precisely: a deleted row is invisible to every query once the delete
commits, but its bytes stay in the table's pages (a dead tuple), in its index entries and in
the write-ahead log. After an erasure this engine VACUUMs the tables it deleted from (index
cleanup on), which removes the index entries and marks the row's space free; PostgreSQL does
not zero freed space, so the bytes stay in the page until new rows overwrite them (`VACUUM
FULL` rewrites a table into new files). VACUUM cannot remove a row that a transaction begun
before the delete may still see; the erasure runs it again for up to `VACUUM_PATIENCE` seconds
until none is left, and past that the rows wait for a later vacuum (a warning is logged).
The WAL keeps the row until its segments are recycled
after checkpoints; archived WAL, replicas' WAL and backups keep it as long as they are kept.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from fourfold._locks import ReentrantLock
from fourfold._validate import check_name
from fourfold.errors import (
    LockTimeout,
    StoreCorrupt,
    StoreUnavailable,
)
from fourfold.stores._pgconn import (
    psycopg_module,
    redact_url,
    release_pool,
    shared_pool,
    translate,
    unescape_rows,
)
from fourfold.stores.database import EPISODE_INDEXES, Database

if TYPE_CHECKING:
    import psycopg

__all__ = ["DEFAULT_SCHEMA", "SCHEMA_VERSION", "PostgresDatabase", "redact_url", "with_schema"]

log = logging.getLogger("fourfold.stores.postgres")

DEFAULT_SCHEMA = "fourfold"
#: 2: memories keep their tokens (`fourfold.stores.vector.tokens_to_keep`); 3: so do successful
#: episodes, and the episode log's skeleton and the episodes still to embed have indexes; 4: episodes
#: keep their problem and fix.
SCHEMA_VERSION = 4
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,62}")
_DELETE = re.compile(r"\s*DELETE\s+FROM\s+(\w+)", re.IGNORECASE)
#: How VACUUM VERBOSE reports rows an older transaction may still see (PostgreSQL 13 and later).
_NOT_REMOVABLE = re.compile(r"(\d+) are dead but not yet removable")
#: Seconds an erasure's vacuum waits for older transactions to end (see `_vacuum`).
VACUUM_PATIENCE = 3.0

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS clock (id INTEGER PRIMARY KEY CHECK (id = 1), value BIGINT NOT NULL)",
    "INSERT INTO clock (id, value) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
    "CREATE TABLE IF NOT EXISTS versions (name TEXT PRIMARY KEY, version BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS memories (id TEXT PRIMARY KEY, scope TEXT NOT NULL, kind TEXT NOT NULL,"
    " text TEXT NOT NULL, metadata TEXT NOT NULL, extra TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,"
    " seq BIGINT NOT NULL, embedding BYTEA NOT NULL, tokens TEXT)",
    # A schema of version 1 gains the column; its rows' tokens are made when read.
    "ALTER TABLE memories ADD COLUMN IF NOT EXISTS tokens TEXT",
    "CREATE INDEX IF NOT EXISTS memories_scope ON memories (scope, created_at, seq)",
    "CREATE TABLE IF NOT EXISTS facts (key TEXT PRIMARY KEY, value_json TEXT NOT NULL,"
    " description TEXT NOT NULL DEFAULT '', updated_at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS fact_history (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " key TEXT NOT NULL, value_json TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',"
    " replaced_at DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS fact_history_key ON fact_history (key, id)",
    "CREATE TABLE IF NOT EXISTS episodes (id TEXT PRIMARY KEY, scope TEXT NOT NULL, ts DOUBLE PRECISION NOT NULL,"
    " success INTEGER NOT NULL, goal TEXT NOT NULL, actions TEXT NOT NULL, outcome TEXT NOT NULL,"
    " tags TEXT NOT NULL, seq BIGINT NOT NULL, pos INTEGER NOT NULL, embedding BYTEA, embedder TEXT, tokens TEXT)",
    # A schema of version 2 gains the column; its successes' tokens are made when a search reads them.
    "ALTER TABLE episodes ADD COLUMN IF NOT EXISTS tokens TEXT",
    # Version 4: an episode's problem and fix (NULL in the episodes of before).
    "ALTER TABLE episodes ADD COLUMN IF NOT EXISTS problem TEXT",
    "ALTER TABLE episodes ADD COLUMN IF NOT EXISTS fix TEXT",
    # The log's skeleton in log order (see `fourfold.stores.sqlite`), and the successes to embed.
    "CREATE INDEX IF NOT EXISTS episodes_log ON episodes (seq, pos) INCLUDE (id, scope, ts, success)",
    *EPISODE_INDEXES,
    "CREATE TABLE IF NOT EXISTS keys (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, digest TEXT NOT NULL,"
    " label TEXT NOT NULL DEFAULT '', created_at DOUBLE PRECISION NOT NULL, revoked_at DOUBLE PRECISION)",
    # A key's role; the keys of before could do all an operator does, and keep that role.
    "ALTER TABLE keys ADD COLUMN IF NOT EXISTS role TEXT NOT NULL DEFAULT 'operator'",
    "CREATE TABLE IF NOT EXISTS threads (scope TEXT PRIMARY KEY, payload TEXT NOT NULL,"
    " updated_at DOUBLE PRECISION NOT NULL)",
)


def split_schema(url: str) -> tuple[str, str | None]:
    """The URL without fourfold's own `schema=` query parameter, and that parameter."""
    return _split_param(url, "schema")


def with_schema(url: str, schema: str) -> str:
    """The URL naming another schema of the same database (a tenant's)."""
    rest, _ = split_schema(url)
    parts = urlsplit(rest)
    query = [*parse_qsl(parts.query, keep_blank_values=True), ("schema", check_schema(schema))]
    return urlunsplit(parts._replace(query=urlencode(query)))


def check_schema(name: object) -> str:
    """A schema name fourfold may create: lowercase letters, digits, '_' and '-', at most 63."""
    return check_name(name, _SCHEMA_NAME, "a PostgreSQL schema name for fourfold is 1-63 lowercase letters, "
                      "digits, '_' or '-', starting with a letter or '_'")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class _Cursor:
    """Rows of one statement, fetched at once (iterating row by row costs a Python call each)."""

    def __init__(self, cur: Any) -> None:
        self.rowcount = int(cur.rowcount)
        self._rows = unescape_rows(cur.fetchall()) if cur.description else []
        self._next = 0

    def fetchall(self) -> list[Any]:
        rows, self._next = self._rows[self._next :], len(self._rows)
        return rows

    def fetchone(self) -> Any:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class _Connection:
    """A pooled connection inside a transaction, speaking the stores' `?` SQL."""

    def __init__(self, raw: psycopg.Connection[Any], db: PostgresDatabase) -> None:
        self.raw = raw
        self.db = db

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> _Cursor:
        # Binary results: bytea arrives as bytes, not hex text to decode.
        cur = self.raw.cursor(binary=True)
        with self.db.errors():
            if parameters:
                cur.execute(_translate(sql), parameters)
            else:
                cur.execute(sql)
        self._deleted(sql, cur)
        return _Cursor(cur)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        rows = list(parameters)
        cur = self.raw.cursor()
        if rows:
            with self.db.errors():
                cur.executemany(_translate(sql), rows)
        self._deleted(sql, cur)
        return cur

    def _deleted(self, sql: str, cur: Any) -> None:
        """Note a table an erasure deleted from: it is vacuumed once the transaction commits."""
        found = _DELETE.match(sql)
        if found and cur.rowcount:
            self.db._local.deleted.add(found.group(1).lower())


def _translate(sql: str) -> str:
    return _TRANSLATED.get(sql) or _TRANSLATED.setdefault(sql, sql.replace("%", "%%").replace("?", "%s"))


_TRANSLATED: dict[str, str] = {}


class PostgresDatabase(Database):
    """One schema of a PostgreSQL database: the tables of one fourfold data set.

    `url` is a libpq URL (`postgresql://user:password@host:5432/dbname`); its fourfold-only
    query parameters `schema` (default `fourfold`) and `pool` (connections per process,
    default 16) are taken out before connecting. The password never appears in messages.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        timeout: float = 30.0,
        pool_size: int | None = None,
        create: bool = True,
    ) -> None:
        """`create=False` opens only a schema fourfold already made (`StoreUnavailable` otherwise),
        so a reader with a mistyped `?schema=` gets an error instead of a new, empty store."""
        psycopg_module()
        conninfo, from_url = split_schema(url)
        conninfo, pool_from_url = _split_param(conninfo, "pool")
        self.schema = check_schema(schema or from_url or DEFAULT_SCHEMA)
        self.url = conninfo
        self.timeout = timeout
        size = pool_size or int(pool_from_url or 16)
        self.where = f"{redact_url(conninfo)} (schema {self.schema})"
        self._pool = shared_pool(conninfo, "transactions", size=size, connect_timeout=min(timeout, 10.0))
        # Locks hold a connection for as long as they are held (a conversation turn), so they
        # have connections of their own and never starve transactions.
        self._locks = shared_pool(conninfo, "locks", size=max(size, 32), connect_timeout=min(timeout, 10.0))
        self._version_sql = f"SELECT version FROM {_quote(self.schema)}.versions WHERE name = %s"
        self._local = threading.local()
        self._closed = False
        self._timeout_ms = max(int(timeout * 1000), 1)
        try:
            self._setup(create=create)
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"PostgresDatabase({self.where!r})"

    # -- errors -------------------------------------------------------------------------------

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Turn psycopg errors into fourfold errors that say what to do."""
        psycopg = psycopg_module()
        try:
            yield
        except psycopg.Error as exc:
            raise translate(exc, self.url, timeout=self.timeout) from None

    # -- transactions -------------------------------------------------------------------------

    def _state(self) -> threading.local:
        local = self._local
        if not hasattr(local, "depth"):
            local.depth, local.writing, local.conn = 0, False, None
            local.deleted, local.vacuum, local.pending_erasure = set(), set(), False
        return local

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[_Connection]:
        local = self._state()
        if local.depth:
            if write and not local.writing:
                raise StoreUnavailable("a write cannot start inside a read of the same thread")
            local.depth += 1
            try:
                yield local.conn
            finally:
                local.depth -= 1
            return
        if self._closed:
            raise StoreUnavailable(f"the database {self.where} is closed")
        raw = self._begin(write)
        conn = _Connection(raw, self)
        local.depth, local.writing, local.conn = 1, write, conn
        local.deleted = set()
        failed = True
        try:
            yield conn
            with self.errors():
                raw.execute("COMMIT")
            failed = False
            local.vacuum |= local.deleted
        finally:
            local.depth, local.writing, local.conn = 0, False, None
            if failed and not raw.broken and not raw.closed:
                try:
                    raw.execute("ROLLBACK")
                except Exception:
                    pass
            self._pool.put(raw, broken=failed and (raw.broken or raw.closed))
        if local.pending_erasure:
            self.erased()

    def _begin(self, write: bool) -> psycopg.Connection[Any]:
        """A pooled connection inside a new transaction."""
        raw, _ = self._first(self._begin_sql(write))
        return raw

    def _first(self, sql: str, params: Sequence[Any] | None = None) -> tuple[psycopg.Connection[Any], Any]:
        """A pooled connection that ran `sql` first, and its cursor; the caller puts it back.

        A stale idle connection (the server restarted since) is replaced once, since nothing
        has run on it yet. A connection that fails goes back to the pool exactly once (a second
        put of the stale one, when the fresh one could not be had, once released the pool's
        semaphore twice).
        """
        psycopg = psycopg_module()
        for attempt in (1, 2):
            raw = self._pool.get(self.timeout)
            try:
                return raw, raw.execute(sql, params)
            except psycopg.Error as exc:
                broken = raw.broken or raw.closed
                if not broken and raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    try:
                        raw.execute("ROLLBACK")
                    except psycopg.Error:
                        broken = True
                self._pool.put(raw, broken=broken)
                if attempt == 2 or not broken:
                    raise translate(exc, self.url, timeout=self.timeout) from None
        raise AssertionError("unreachable")

    def _begin_sql(self, write: bool) -> str:
        mode = "ISOLATION LEVEL READ COMMITTED" if write else "ISOLATION LEVEL REPEATABLE READ READ ONLY"
        sql = (
            f"BEGIN {mode}; SET LOCAL search_path TO {_quote(self.schema)}, public;"
            f" SET LOCAL lock_timeout = {self._timeout_ms}"
        )
        # One round trip: the write turn (the clock row's lock) is taken with the BEGIN.
        return sql + "; SELECT 1 FROM clock WHERE id = 1 FOR UPDATE" if write else sql

    @contextmanager
    def read(self) -> Iterator[_Connection]:
        """A consistent snapshot (REPEATABLE READ) for several statements."""
        with self._transaction(False) as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[_Connection]:
        """A transaction holding the schema's write turn (its clock row), like BEGIN IMMEDIATE."""
        with self._watched(), self._transaction(True) as conn:
            yield conn

    def version(self, name: str) -> int:
        """The version of `name`; outside a transaction, one statement (one round trip)."""
        if self._closed or self._state().depth:
            return super().version(name)
        raw, cur = self._first(self._version_sql, (name,))
        try:
            row = cur.fetchone()  # fetched with the statement: no round trip
        finally:
            self._pool.put(raw)
        return int(row[0]) if row else 0

    # -- erasure ------------------------------------------------------------------------------

    def erased(self) -> bool:
        """VACUUM (with index cleanup) the tables this thread's committed erasures deleted from.

        Inside a transaction the vacuum waits for it to commit (VACUUM cannot run in one).
        Returns whether a vacuum ran.
        """
        local = self._state()
        if local.depth:
            local.pending_erasure = True
            return False
        local.pending_erasure = False
        tables, local.vacuum = sorted(local.vacuum), set()
        if not tables:
            return False
        raw = self._pool.get(self.timeout)
        broken = True
        notices: list[str] = []

        def note(diagnostic: Any) -> None:
            notices.append(diagnostic.message_primary or "")

        raw.add_notice_handler(note)
        try:
            with self.errors():
                raw.execute(f"SET search_path TO {_quote(self.schema)}, public")
                for table in tables:
                    self._vacuum(raw, table, notices)
            broken = False
        finally:
            raw.remove_notice_handler(note)
            self._pool.put(raw, broken=broken)
        return True

    def _vacuum(self, raw: Any, table: str, notices: list[str]) -> None:
        """VACUUM `table` until no deleted row is left, for up to `VACUUM_PATIENCE` seconds.

        VACUUM cannot remove a row that a transaction begun before the delete may still see
        (an autovacuum ANALYZE, a long report): it reports those rows as "dead but not yet
        removable". They usually go within milliseconds, so the vacuum is run again until
        none is left; a transaction that outlasts the patience leaves them to a later vacuum
        (autovacuum), and a warning says so.
        """
        pause, waited = 0.05, 0.0
        while True:
            notices.clear()
            raw.execute(f"VACUUM (INDEX_CLEANUP ON, VERBOSE) {_quote(table)}")
            left = sum(int(n) for text in notices for n in _NOT_REMOVABLE.findall(text))
            if not left:
                return
            if waited >= VACUUM_PATIENCE:
                log.warning("%d erased row(s) of %s are still visible to an older transaction; "
                            "a later VACUUM (autovacuum) removes them", left, table)
                return
            time.sleep(pause)
            waited += pause
            pause = min(pause * 2, 1.0)

    # -- locks --------------------------------------------------------------------------------

    def _new_lock(self, name: str) -> AdvisoryLock:
        key = int.from_bytes(
            hashlib.blake2b(f"{self.schema}\x00{name}".encode("utf-8", "surrogatepass"), digest_size=8).digest(),
            "big", signed=True,
        )
        return AdvisoryLock(self, key, name)

    # -- schema -------------------------------------------------------------------------------

    def _setup(self, *, create: bool) -> None:
        """Create the schema and its tables (once, whichever process comes first); refuse a
        schema of a newer fourfold or of another program."""
        psycopg = psycopg_module()
        raw = self._pool.get(self.timeout)
        ok = False
        try:
            with self.errors():
                raw.execute("BEGIN")
                raw.execute("SELECT pg_advisory_xact_lock(%s)", (_key(f"fourfold schema {self.schema}"),))
                tables = {
                    r[0]
                    for r in raw.execute(
                        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (self.schema,)
                    )
                }
                version = self._schema_version(raw, tables)
                if version is None and not create:
                    raise StoreUnavailable(f"no fourfold store at {self.where}: check the URL's ?schema= "
                                           "(a writing command creates it)")
                if version is None or version < SCHEMA_VERSION:
                    raw.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(self.schema)}")
                    raw.execute(f"SET LOCAL search_path TO {_quote(self.schema)}, public")
                    for statement in _SCHEMA:
                        raw.execute(statement)
                    raw.execute(
                        "INSERT INTO meta (name, value) VALUES ('schema_version', %s) ON CONFLICT (name)"
                        " DO UPDATE SET value = excluded.value",
                        (str(SCHEMA_VERSION),),
                    )
                raw.execute("COMMIT")
            ok = True
        except psycopg.Error as exc:  # pragma: no cover - errors() translates
            raise translate(exc, self.url) from None
        finally:
            if not ok and not raw.broken:
                try:
                    raw.execute("ROLLBACK")
                except psycopg.Error:
                    pass
            self._pool.put(raw, broken=not ok)

    def _schema_version(self, raw: psycopg.Connection[Any], tables: set[str]) -> int | None:
        if "meta" not in tables:
            if tables:
                raise StoreCorrupt(
                    f"the schema {self.schema} of {redact_url(self.url)} holds tables that are not fourfold's "
                    f"({', '.join(sorted(tables)[:8])}); choose another schema with ?schema=NAME"
                )
            return None
        row = raw.execute(
            f"SELECT value FROM {_quote(self.schema)}.meta WHERE name = 'schema_version'"
        ).fetchone()
        try:
            version = int(row[0])  # type: ignore[index]
        except (TypeError, ValueError):
            raise StoreCorrupt(f"{self.where} has no readable schema version; restore it from a backup") from None
        if version > SCHEMA_VERSION:
            raise StoreCorrupt(
                f"{self.where} has schema version {version}, but this fourfold knows only up to "
                f"{SCHEMA_VERSION}: it was written by a newer fourfold. Upgrade fourfold to open it."
            )
        return version

    def drop(self) -> None:
        """Delete this schema and everything in it (a tenant's whole memory), then close."""
        raw = self._pool.get(self.timeout)
        ok = False
        try:
            with self.errors():
                raw.execute(f"DROP SCHEMA IF EXISTS {_quote(self.schema)} CASCADE")
            ok = True
        finally:
            self._pool.put(raw, broken=not ok)
        self.close()

    def close(self) -> None:
        """Return to the shared pool; the last database of a URL closes its connections."""
        if self._closed:
            return
        self._closed = True
        release_pool(self._pool)
        release_pool(self._locks)


class AdvisoryLock(ReentrantLock):
    """A PostgreSQL session advisory lock on a connection of its own; re-entrant within a thread.

    The lock belongs to the connection's session, so it holds against every process on every
    machine, and PostgreSQL releases it if the holder's connection ends (the process died).
    """

    def __init__(self, db: PostgresDatabase, key: int, name: str) -> None:
        super().__init__()
        self.db = db
        self.key = key
        self.name = name

    @contextmanager
    def _acquire(self, timeout: float | None) -> Iterator[None]:
        psycopg = psycopg_module()
        limit = self.db.timeout if timeout is None else timeout
        started = time.monotonic()
        pool = self.db._locks
        raw = pool.get(limit)
        broken = True
        try:
            try:
                remaining = max(limit - (time.monotonic() - started), 0.001)
                raw.execute("SELECT set_config('lock_timeout', %s, false)", (f"{max(int(remaining * 1000), 1)}ms",))
                raw.execute("SELECT pg_advisory_lock(%s)", (self.key,))
            except psycopg.errors.LockNotAvailable:
                broken = False
                raise LockTimeout(
                    f"could not lock {self.name!r} in {self.db.where} within {limit:g}s: another process holds it"
                ) from None
            except psycopg.Error as exc:
                raise translate(exc, self.db.url, timeout=limit) from None
            try:
                yield
            finally:
                try:
                    raw.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
                    broken = False
                except psycopg.Error:
                    pass  # a dropped connection released the lock with itself
        finally:
            pool.put(raw, broken=broken)


def _key(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big", signed=True)


def _split_param(url: str, name: str) -> tuple[str, str | None]:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    found = [v for k, v in query if k == name]
    rest = [(k, v) for k, v in query if k != name]
    return urlunsplit(parts._replace(query=urlencode(rest))), (found[-1] if found else None)


