"""The embedded default: one SQLite file (WAL) holds what a data dir persists.

Several processes (the CLI, `fourfold mcp`, any number of `fourfold serve`) can read and
write one data dir at once: SQLite serializes writers and gives each reader a snapshot.
Caches stay right across processes through *versions*: a named counter (one per memory
scope, one for the facts...) that every write transaction bumps, so a reader checks one
small row instead of dropping everything whenever anyone wrote.

Erasure leaves no trace on disk by SQLite's own means: `secure_delete` zeroes what a delete
frees, and after an erasure the write-ahead log is checkpointed and truncated.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from fourfold._files import FILE_MODE, private_dir
from fourfold._locks import FileLock
from fourfold.errors import (
    FourfoldError,
    LockTimeout,
    StorageFull,
    StoreCorrupt,
    StoreReadOnly,
    StoreUnavailable,
)
from fourfold.stores.database import EPISODE_INDEXES, Database
from fourfold.stores.sql import VERSIONED, SQLVectorStore, decode_stored
from fourfold.stores.vector import (
    embedding_text,
    tokens_to_keep,
)
from fourfold.text.tokenize import tokenize_many

__all__ = ["DATABASE", "SCHEMA_VERSION", "SQLiteDatabase", "SQLiteVectorStore", "enter_wal", "translate"]

#: The database file of a data dir.
DATABASE = "fourfold.sqlite3"
SCHEMA_VERSION = 1
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # One clock for every version, so a name that is dropped and written again never
    # repeats a version a reader may still hold.
    "CREATE TABLE IF NOT EXISTS clock (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO clock (id, value) VALUES (1, 0)",
    "CREATE TABLE IF NOT EXISTS versions (name TEXT PRIMARY KEY, version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS memories (id TEXT PRIMARY KEY, scope TEXT NOT NULL, kind TEXT NOT NULL,"
    " text TEXT NOT NULL, metadata TEXT NOT NULL, extra TEXT NOT NULL, created_at REAL NOT NULL,"
    " seq INTEGER NOT NULL, embedding BLOB NOT NULL, tokens TEXT)",
    "CREATE INDEX IF NOT EXISTS memories_scope ON memories (scope, created_at, seq)",
    # The rows carrying version bookkeeping, few in any scope, found without reading the scope.
    f"CREATE INDEX IF NOT EXISTS memories_versioned ON memories (scope) WHERE {VERSIONED}",
    "CREATE TABLE IF NOT EXISTS facts (key TEXT PRIMARY KEY, value_json TEXT NOT NULL,"
    " description TEXT NOT NULL DEFAULT '', updated_at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS fact_history (id INTEGER PRIMARY KEY, key TEXT NOT NULL,"
    " value_json TEXT NOT NULL, description TEXT NOT NULL DEFAULT '', replaced_at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS fact_history_key ON fact_history (key, id)",
    # seq: the clock of the write that stored the row (commit order); pos: its place in that write.
    # tokens: a success's kept tokens (`fourfold.stores.vector.tokens_to_keep`), NULL otherwise.
    "CREATE TABLE IF NOT EXISTS episodes (id TEXT PRIMARY KEY, scope TEXT NOT NULL, ts REAL NOT NULL,"
    " success INTEGER NOT NULL, goal TEXT NOT NULL, actions TEXT NOT NULL, outcome TEXT NOT NULL,"
    " tags TEXT NOT NULL, seq INTEGER NOT NULL, pos INTEGER NOT NULL, embedding BLOB, embedder TEXT, tokens TEXT,"
    " problem TEXT, fix TEXT)",
    # The log's skeleton in log order, read without touching the rows (a row holds its vector:
    # reading 100k rows to learn their ids and scopes cost most of opening a large log).
    "CREATE INDEX IF NOT EXISTS episodes_log ON episodes (seq, pos, id, scope, ts, success)",
    *EPISODE_INDEXES,
    # API keys of a served data dir: only an HMAC of each key, with the salt in meta.
    "CREATE TABLE IF NOT EXISTS keys (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, digest TEXT NOT NULL,"
    " label TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL, revoked_at REAL,"
    " role TEXT NOT NULL DEFAULT 'operator')",
    "CREATE TABLE IF NOT EXISTS threads (scope TEXT PRIMARY KEY, payload TEXT NOT NULL, updated_at REAL NOT NULL)",
)


class SQLiteDatabase(Database):
    """One SQLite file shared by the stores of a data dir; a connection per thread.

    `read()` and `write()` are transactions (a snapshot, or the database's single write
    lock taken up front); both nest within one thread, the outermost one commits.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.where = str(self.path)
        self.timeout = timeout
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        self._closed = False
        _create_private(self.path)
        with _OPENED.hold(self.path) as first:
            if first:
                _check_length(self.path)
        try:
            with self.write() as conn:
                _migrate(conn, self.path)
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"SQLiteDatabase({str(self.path)!r})"

    # -- connections and transactions ------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        with self._guard:
            if self._closed:
                raise StoreUnavailable(f"the database {self.path} is closed")
            with self.errors():
                conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
                try:
                    conn.execute(f"PRAGMA busy_timeout = {max(int(self.timeout * 1000), 0)}")
                    enter_wal(conn, self.timeout)
                    # FULL: a write is on disk when it is acknowledged, even after a power cut.
                    conn.execute("PRAGMA synchronous = FULL")
                    conn.execute("PRAGMA secure_delete = ON")
                except BaseException:
                    conn.close()
                    raise
            self._connections.append(conn)
        self._local.conn = conn
        self._local.depth = 0
        return conn

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Turn sqlite3 errors into fourfold errors that say what to do."""
        try:
            yield
        except sqlite3.Error as exc:
            raise translate(exc, self.path, timeout=self.timeout) from exc

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        if self._local.depth:
            if begin == "BEGIN IMMEDIATE" and not self._local.writing:
                raise StoreUnavailable("a write cannot start inside a read of the same thread")
            self._local.depth += 1
            try:
                yield conn
            finally:
                self._local.depth -= 1
            return
        with self.errors():
            conn.execute(begin)
        self._local.depth, self._local.writing = 1, begin == "BEGIN IMMEDIATE"
        try:
            yield conn
        except BaseException:
            self._local.depth = 0
            if conn.in_transaction:
                with self.errors():
                    conn.execute("ROLLBACK")
            raise
        self._local.depth = 0
        try:
            with self.errors():
                conn.execute("COMMIT")
        except BaseException:
            # A commit refused (a full disk) leaves the transaction open; it must not stay
            # so, or the connection's next BEGIN fails long after the disk has room again.
            if conn.in_transaction:
                with self.errors():
                    conn.execute("ROLLBACK")
            raise

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several statements."""
        with self._transaction("BEGIN"), self.errors():
            yield self._conn()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """The write lock, taken up front so a busy writer waits instead of failing later."""
        with self._watched(), self._transaction("BEGIN IMMEDIATE"), self.errors():
            yield self._conn()

    # -- erasure ------------------------------------------------------------------------------

    def erased(self) -> bool:
        """After erasing: move the log into the file and truncate it, so no old page remains.

        A reader in another process holding an old snapshot can keep the log in use; the
        checkpoint is retried briefly, and the next erasure (or close) tries again. Returns
        whether the log was truncated.
        """
        conn = self._conn()
        for attempt in range(20):
            with self.errors():
                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                return True
            time.sleep(0.005 * (attempt + 1))
        return False

    def _new_lock(self, name: str) -> FileLock:
        """A lock file under `locks/` beside the database: every process on this machine."""
        digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        return FileLock(self.path.parent / "locks" / f"{digest}.lock", timeout=self.timeout)

    def close(self) -> None:
        """Close every connection (after a last checkpoint); further use raises StoreUnavailable."""
        with self._guard:
            if self._closed:
                return
            self._closed = True
            connections, self._connections = self._connections, []
        _OPENED.release(self.path)
        for conn in connections:
            try:
                if not conn.in_transaction:
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass  # another process is using the log; its own checkpoints will fold it in
            conn.close()
        self._local = threading.local()


def _create_private(path: Path) -> None:
    """Create the database file readable by its owner only; SQLite gives its -wal and -shm
    files the same permissions.

    An existing file is narrowed by path, never opened: closing any descriptor of a file
    drops every POSIX lock this process holds on it, and SQLite's locks of another
    connection in this process (a key store beside a tenant's memory) would go with them.
    Another process closing last would then take the log for unused and delete it.
    """
    try:
        private_dir(path.parent)
        try:
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE))
        except FileExistsError:
            os.chmod(path, FILE_MODE)
        for side in ("-wal", "-shm"):  # left by an older run with another umask
            with contextlib.suppress(FileNotFoundError):
                os.chmod(f"{path}{side}", FILE_MODE)
    except OSError as exc:
        raise StoreUnavailable(f"cannot create the database {path}: {exc.strerror or exc}") from None


class _OpenFiles:
    """How many `SQLiteDatabase`s of this process have each file open.

    Reading a file's header opens and closes a descriptor of it, and closing any descriptor
    drops every POSIX lock this process holds on the file: SQLite's locks of the connections
    already open here would go, and another process closing last would take the write-ahead
    log for unused and delete it, leaving this process writing to a log nobody else reads. So
    the header is read only by the first open of a file in a process, before any lock exists.
    """

    def __init__(self) -> None:
        self._count: dict[str, int] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def hold(self, path: Path) -> Iterator[bool]:
        """Count one more open of `path` (undone if the body fails); yields whether it is the first."""
        key = os.path.realpath(path)
        with self._lock:  # held through the first open's check: a second open waits for it
            first = self._count.get(key, 0) == 0
            self._count[key] = self._count.get(key, 0) + 1
            try:
                yield first
            except BaseException:
                self._release(key)
                raise

    def release(self, path: Path) -> None:
        with self._lock:
            self._release(os.path.realpath(path))

    def _release(self, key: str) -> None:
        left = self._count.get(key, 0) - 1
        if left > 0:
            self._count[key] = left
        else:
            self._count.pop(key, None)


_OPENED = _OpenFiles()


def _check_length(path: Path) -> None:
    """Refuse a database file shorter than its header says: a truncated file would open and
    answer from the pages left, without the memories that were cut off. Only the first open
    of a file in a process may call it (`_OpenFiles`).

    Another process's checkpoint writes the header's new size before the pages that reach
    it, so a short file is refused only once its size has held still for a second.
    """
    short = _short(path)
    deadline = time.monotonic() + 1.0
    while short is not None and time.monotonic() < deadline:
        time.sleep(0.05)
        now = _short(path)
        if now != short:  # growing: a checkpoint is under way
            short, deadline = now, time.monotonic() + 1.0
    if short is not None:
        size, pages, page_size = short
        raise StoreCorrupt(
            f"{path} is truncated: {size} bytes where its header counts {pages} pages of {page_size}. "
            "Restore it from a backup, export the rows left with `fourfold export --salvage FILE`, "
            "or let `fourfold doctor --repair` salvage them in place."
        )


def _short(path: Path) -> tuple[int, int, int] | None:
    """(size, pages, page size) when the file is shorter than its header's page count."""
    try:
        with open(path, "rb") as file:  # the caller made the file; reading it takes no lock
            header = file.read(100)
            size = os.fstat(file.fileno()).st_size
    except OSError:
        return None  # a folder, or unreadable: opening it says so, as a typed error
    if len(header) < 100 or header[:16] != b"SQLite format 3\x00":
        return None  # new, or not a database: SQLite says which when it is read
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    counted = header[24:28] == header[92:96]  # the size field is valid only then (SQLite's file format)
    return (size, pages, page_size) if counted and size < pages * page_size else None


def enter_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Put the file in WAL mode, waiting out other processes that open it at the same moment.

    Switching a file to WAL takes an exclusive lock, and while another connection holds the
    write lock SQLite answers "database is locked" at once, without its busy handler (six
    processes opening one new file together failed 20 times in 100 rounds).
    """
    deadline = time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _primary_code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code of the error (SQLITE_BUSY for SQLITE_BUSY_RECOVERY...)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _busy(exc: sqlite3.Error) -> bool:
    """Another connection holds a lock this one needs."""
    return _primary_code(exc) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def translate(exc: sqlite3.Error, path: Path, *, timeout: float | None = None) -> FourfoldError:
    """A sqlite3 error as the fourfold error a caller can act on."""
    primary = _primary_code(exc)
    if primary in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
        return StoreCorrupt(
            f"{path} is damaged or is not a SQLite database ({exc}). Restore it from a backup, "
            "or move it aside to start an empty data dir."
        )
    # An I/O error is often the disk's state: SQLite reports a write to a read-only mount
    # as one, and a full disk met outside its own writes (a journal, the log's index) too.
    disk = _disk_state(path) if primary in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN) else None
    if primary == sqlite3.SQLITE_FULL or disk == "full":
        return StorageFull(
            f"the disk holding {path} is full, or the database reached its size limit ({exc}); "
            "the write was not stored. Free space, and write again."
        )
    if primary == sqlite3.SQLITE_READONLY or disk == "read_only":
        return StoreReadOnly(
            f"{path} can be read but not written ({exc}): its file, directory or disk is read-only. "
            "Make it writable again, and write again."
        )
    if _busy(exc):
        waited = f" for {timeout:g}s" if timeout is not None else ""
        return LockTimeout(
            f"{path} stayed locked by another writer{waited} ({exc}). Retry, or raise "
            "MemoryConfig.lock_timeout if writers are slow."
        )
    return StoreUnavailable(f"cannot use the database {path}: {exc}")


def _disk_state(path: Path) -> Literal["full", "read_only"] | None:
    """Whether the file system holding `path` is mounted read-only, or has no block left."""
    try:
        stat = os.statvfs(path.parent)
    except OSError:
        return None
    if stat.f_flag & os.ST_RDONLY or not os.access(path.parent, os.W_OK):
        return "read_only"
    return "full" if stat.f_bavail == 0 else None


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Create the schema in a new file; refuse files from a newer fourfold or another program."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    version: int | None = None
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
        try:
            version = int(row[0])
        except (TypeError, ValueError):
            raise StoreCorrupt(f"{path} has no readable schema version; restore it from a backup or move it aside.") from None
    elif tables:
        raise StoreCorrupt(
            f"{path} is a SQLite database but not fourfold's (tables: {', '.join(sorted(tables))}); "
            "move it aside or point fourfold at another data dir."
        )
    if version is not None and version > SCHEMA_VERSION:
        raise StoreCorrupt(
            f"{path} has schema version {version}, but this fourfold knows only up to {SCHEMA_VERSION}: "
            "the data dir is from a newer fourfold. Upgrade fourfold to open it."
        )
    for statement in _SCHEMA:
        conn.execute(statement)
    if "memories" in tables and "tokens" not in {r[1] for r in conn.execute("PRAGMA table_info(memories)")}:
        _keep_tokens(conn)
    if "episodes" in tables and "tokens" not in {r[1] for r in conn.execute("PRAGMA table_info(episodes)")}:
        _keep_episode_tokens(conn)
    if "episodes" in tables and "problem" not in {r[1] for r in conn.execute("PRAGMA table_info(episodes)")}:
        # Additive, as `tokens`: the episodes of before keep NULL (they recorded no problem or fix).
        conn.execute("ALTER TABLE episodes ADD COLUMN problem TEXT")
        conn.execute("ALTER TABLE episodes ADD COLUMN fix TEXT")
    if "keys" in tables and "role" not in {r[1] for r in conn.execute("PRAGMA table_info(keys)")}:
        # A key's role; the keys of before could do all an operator does, and keep that role.
        conn.execute("ALTER TABLE keys ADD COLUMN role TEXT NOT NULL DEFAULT 'operator'")
    if version is None:
        conn.execute("INSERT INTO meta (name, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


def _keep_tokens(conn: sqlite3.Connection, *, batch: int = 5000) -> None:
    """Add the `tokens` column to a file written before rows kept their tokens, and fill it
    (once: about a second per 100k memories), so that old scopes read as fast as new ones.

    The column is additive: an older fourfold still reads and writes the file, and the rows it
    adds have no tokens, which are then made when read (`SQLiteVectorStore.scan_tokens`)."""
    conn.execute("ALTER TABLE memories ADD COLUMN tokens TEXT")
    last = 0
    while rows := conn.execute(
        "SELECT rowid, text, extra FROM memories WHERE rowid > ? ORDER BY rowid LIMIT ?", (last, batch)
    ).fetchall():
        texts = [embedding_text(text, decode_stored(extra)) for _, text, extra in rows]  # as record_tokens reads them
        conn.executemany(
            "UPDATE memories SET tokens = ? WHERE rowid = ?",
            [(tokens_to_keep(tokens), row[0]) for tokens, row in zip(tokenize_many(texts), rows, strict=True)],
        )
        last = rows[-1][0]


def _keep_episode_tokens(conn: sqlite3.Connection, *, batch: int = 5000) -> None:
    """Add the `tokens` column to episodes written before successes kept their tokens, and fill
    it (once: about a second per 100k episodes), so that old scopes are searched as fast as new.

    The tokens are those of `fourfold.episodic.lexical_text` (goal, actions, outcome) as
    `EpisodeLog.insert` keeps them. As with memories the column is additive, and a success
    without tokens has them made from its text when a search reads it."""
    conn.execute("ALTER TABLE episodes ADD COLUMN tokens TEXT")
    last = 0
    while rows := conn.execute(
        "SELECT rowid, goal, actions, outcome FROM episodes WHERE rowid > ? AND success = 1 ORDER BY rowid LIMIT ?",
        (last, batch),
    ).fetchall():
        texts = [" ".join((goal, *json.loads(actions), outcome)) for _, goal, actions, outcome in rows]
        conn.executemany(
            "UPDATE episodes SET tokens = ? WHERE rowid = ?",
            [(tokens_to_keep(tokens), row[0]) for tokens, row in zip(tokenize_many(texts), rows, strict=True)],
        )
        last = rows[-1][0]


class SQLiteVectorStore(SQLVectorStore):
    """The memories table of a `SQLiteDatabase`: the embedded default store."""
