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
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from fourfold._files import FILE_MODE, private_dir
from fourfold._locks import FileLock
from fourfold.embeddings.base import Vectors
from fourfold.errors import (
    EmbedderMismatch,
    FourfoldError,
    LockTimeout,
    StoreCorrupt,
    StoreUnavailable,
)
from fourfold.stores.database import EPISODE_INDEXES, Database
from fourfold.stores.vector import (
    GLOBAL_SCOPE_KEY,
    NO_VECTOR,
    VERSION_KEY,
    VectorRecord,
    VectorStore,
    WriteTicket,
    chunked,
    embedding_text,
    record_tokens,
    scope_key,
    stored_record,
    tokens_of,
    tokens_to_keep,
)
from fourfold.text.tokenize import tokenize_many

__all__ = ["DATABASE", "SCHEMA_VERSION", "SQLiteDatabase", "SQLiteVectorStore", "chunked_ids", "scope_key", "scope_of"]

#: The database file of a data dir.
DATABASE = "fourfold.sqlite3"
SCHEMA_VERSION = 1
#: Rows per `IN (...)` list, well under SQLite's limit on bound parameters.
_CHUNK = 500
#: The rows whose metadata names a version entry (a superset: the exact test is made on read).
#: A literal, so that SQLite's planner matches it to the partial index of the same term.
_VERSIONED = f"metadata LIKE '%\"{VERSION_KEY}\"%'"
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
    f"CREATE INDEX IF NOT EXISTS memories_versioned ON memories (scope) WHERE {_VERSIONED}",
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
    " label TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL, revoked_at REAL)",
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
        with self.write() as conn:
            _migrate(conn, self.path)

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
        with self.errors():
            conn.execute("COMMIT")

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several statements."""
        with self._transaction("BEGIN"), self.errors():
            yield self._conn()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """The write lock, taken up front so a busy writer waits instead of failing later."""
        with self._transaction("BEGIN IMMEDIATE"), self.errors():
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
        for conn in connections:
            try:
                if not conn.in_transaction:
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass  # another process is using the log; its own checkpoints will fold it in
            conn.close()
        self._local = threading.local()


class SQLiteVectorStore(VectorStore):
    """Memories and document chunks in the `memories` table of a `Database`; a version per scope.

    fourfold ranks in its own index (`ScopeIndex`), so this store only stores, reads a
    scope, and deletes; the SQL is portable, so it serves any engine.
    """

    def __init__(self, db: Database, *, embedder_identity: str, dimension: int) -> None:
        self.db = db
        self.embedder_identity = embedder_identity
        self.dimension = dimension
        self._ticket = threading.local()
        self._check_embedder()

    def _check_embedder(self) -> None:
        """Record which embedder made the vectors, or refuse another one (mixed vectors rank nonsense)."""
        with self.db.write() as conn:
            row = conn.execute("SELECT value FROM meta WHERE name = 'embedder'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta (name, value) VALUES ('embedder', ?)", (self.embedder_identity,))
            elif row[0] != self.embedder_identity:
                raise EmbedderMismatch(
                    f"{self.db.where} holds vectors of embedder {row[0]!r}, not {self.embedder_identity!r}: "
                    "open it with the same embedder, or move it to the new one with "
                    "`fourfold reindex --embedder SPEC` (same --data-dir or --store)"
                )

    # -- writing ------------------------------------------------------------------------------

    @contextmanager
    def writing(self) -> Iterator[WriteTicket]:
        outer = getattr(self._ticket, "current", None)
        if outer is not None:
            yield outer
            return
        ticket = WriteTicket()
        self._ticket.current = ticket
        self._ticket.erased = False
        try:
            with self.db.write():
                yield ticket
        finally:
            self._ticket.current = None
        if self._ticket.erased:
            self.db.erased()

    def _record(self, changes: dict[str, tuple[int, int]]) -> None:
        """Note version changes in the ticket of the write block in progress, if any."""
        ticket: WriteTicket | None = getattr(self._ticket, "current", None)
        if ticket is None:
            return
        for name, (before, after) in changes.items():
            scope = _scope_of(name)
            first = ticket.scopes.get(scope)
            ticket.scopes[scope] = (first[0] if first else before, after)

    def add(self, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        # Each row keeps its tokens, so that a scope's first read need not tokenize its texts.
        rows = [(*_row(r, self.dimension), tokens_to_keep(tokens)) for r, tokens in zip(records, record_tokens(records), strict=True)]
        with self.writing(), self.db.write() as conn:
            conn.executemany(
                "INSERT INTO memories (id, scope, kind, text, metadata, extra, created_at, seq, embedding, tokens)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                rows,
            )
            self._record(self.db.bump(conn, (_name(r.scope) for r in records)))

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self.writing(), self.db.write() as conn:
            scopes: set[str] = set()
            for part in chunked_ids(ids):
                marks = ",".join("?" * len(part))
                scopes.update(r[0] for r in conn.execute(f"SELECT DISTINCT scope FROM memories WHERE id IN ({marks})", part))
                conn.execute(f"DELETE FROM memories WHERE id IN ({marks})", part)
            self._record(self.db.bump(conn, (_name(_unkey(s)) for s in scopes)))
            self._erased()

    def update_metadata(self, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        rows = [(json.dumps(dict(r.metadata), ensure_ascii=False, sort_keys=True), r.id) for r in records]
        with self.writing(), self.db.write() as conn:
            conn.executemany("UPDATE memories SET metadata = ? WHERE id = ?", rows)
            self._record(self.db.bump(conn, {_name(r.scope) for r in records}))

    def delete_scope(self, scope: str) -> int:
        with self.writing(), self.db.write() as conn:
            removed = conn.execute("DELETE FROM memories WHERE scope = ?", (scope_key(scope),)).rowcount
            self._record(self.db.bump(conn, [_name(scope)], drop=True))
            self._erased()
        return int(removed)

    def _erased(self) -> None:
        """Checkpoint once the write block that erased commits (an open transaction cannot)."""
        self._ticket.erased = True

    # -- reading ------------------------------------------------------------------------------

    def existing(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        with self.db.read() as conn:
            for part in chunked_ids(ids):
                marks = ",".join("?" * len(part))
                found.update(r[0] for r in conn.execute(f"SELECT id FROM memories WHERE id IN ({marks})", part))
        return found

    def get(self, ids: Sequence[str]) -> list[VectorRecord]:
        records: list[VectorRecord] = []
        with self.db.read() as conn:
            for part in chunked_ids(ids):
                marks = ",".join("?" * len(part))
                records.extend(self._records(conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE id IN ({marks})", part)))
        return records

    def versioned_many(self, wanted: Mapping[str | None, Sequence[str]]) -> dict[str | None, list[VectorRecord]]:
        """Every scope's versioned rows in a query per `_CHUNK` scopes, then the ids asked for
        by id: two queries for a batch over a thousand scopes, not two thousand."""
        found: dict[str | None, dict[str, VectorRecord]] = {scope: {} for scope in wanted}
        with self.db.read() as conn:  # one snapshot for both reads
            for part in chunked([scope_key(scope) for scope in found], _CHUNK):
                marks = ",".join("?" * len(part))
                rows = conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE scope IN ({marks}) AND {_VERSIONED}", part)
                for record in self._records(rows):
                    if VERSION_KEY in record.metadata:
                        found[record.scope][record.id] = record
            asked = {(scope, i) for scope, ids in wanted.items() for i in ids if i not in found[scope]}
            for record in self.get(list(dict.fromkeys(i for _, i in asked))):
                if (record.scope, record.id) in asked:
                    found[record.scope][record.id] = record
        return {scope: list(records.values()) for scope, records in found.items()}

    def scan(self, scope: str | None) -> list[VectorRecord]:
        return self.scan_versioned(scope)[0]

    def versioned(self, scope: str | None, ids: Sequence[str] = ()) -> list[VectorRecord]:
        return self.versioned_many({scope: ids})[scope]

    def scan_versioned(self, scope: str | None) -> tuple[list[VectorRecord], Hashable | None]:
        with self.db.read() as conn:
            version = self.db.version(_name(scope))
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE scope = ? ORDER BY created_at, seq", (scope_key(scope),)
            )
            return self._records(rows), version

    def scan_tokens(self, scope: str | None) -> tuple[list[VectorRecord], Vectors, list[list[str]], Hashable | None]:
        """One query in write order: the vectors joined into one matrix (one copy, no array per
        row), the records without them, and the tokens kept in each row; a row without them
        (written by a fourfold that kept none) or under another tokenizer's tag is tokenized now."""
        with self.db.read() as conn:
            version = self.db.version(_name(scope))
            # Not the scope, which every row shares: the query names it.
            rows = conn.execute(
                "SELECT id, kind, text, metadata, extra, created_at, seq, embedding, tokens FROM memories"
                " WHERE scope = ? ORDER BY created_at, seq", (scope_key(scope),)
            ).fetchall()
        width = 4 * self.dimension
        blobs = [row[7] for row in rows]
        if set(map(len, blobs)) - {width}:
            id_, blob = next((row[0], row[7]) for row in rows if len(row[7]) != width)
            raise self._wrong_vector(id_, len(blob) // 4)
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(rows), self.dimension)
        decode, read_scope = _decode_stored, _unkey(scope_key(scope))
        records = [
            stored_record(id_, text, NO_VECTOR, read_scope, kind, created_at, decode(metadata) if metadata != "{}" else {},
                          seq, tuple(decode(extra)) if extra != "[]" else ())
            for id_, kind, text, metadata, extra, created_at, seq, _, _ in rows
        ]
        return records, matrix, tokens_of(records, [row[8] for row in rows]), version

    def version(self, scope: str | None) -> Hashable | None:
        return self.db.version(_name(scope))

    def count(self) -> int:
        with self.db.read() as conn:
            return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])

    def scopes(self) -> list[str | None]:
        with self.db.read() as conn:
            return [_unkey(r[0]) for r in conn.execute("SELECT DISTINCT scope FROM memories")]

    def _records(self, rows: Iterable[tuple[Any, ...]], *, vectors: bool = True) -> list[VectorRecord]:
        """Records from rows of `_COLUMNS`; without their vectors (`NO_VECTOR`) unless `vectors`."""
        out = []
        decode = _decode_stored
        for id_, scope, kind, text, metadata, extra, created_at, seq, blob in rows:
            vector = np.frombuffer(blob, dtype=np.float32) if vectors else NO_VECTOR
            if vectors and vector.shape != (self.dimension,):
                raise self._wrong_vector(id_, vector.shape[0])
            out.append(
                stored_record(
                    id_, text, vector, _unkey(scope), kind, created_at,
                    decode(metadata) if metadata != "{}" else {}, seq, tuple(decode(extra)) if extra != "[]" else (),
                )
            )
        return out

    def _wrong_vector(self, memory_id: str, numbers: int) -> StoreCorrupt:
        return StoreCorrupt(
            f"{self.db.where}: memory {memory_id} has a vector of {numbers} numbers, not "
            f"{self.dimension}; the data dir was written with another embedder"
        )

    def close(self) -> None:
        """The database is shared with the other stores: `Memory.close` closes it."""


_DECODER = json.JSONDecoder()


def _decode_stored(text: str) -> Any:
    """JSON as `json.dumps` stored it (no surrounding whitespace): `raw_decode` skips the
    whitespace scans of `json.loads`, a third of its time on short metadata."""
    try:
        value, end = _DECODER.raw_decode(text)
    except json.JSONDecodeError:
        return json.loads(text)  # surrounding whitespace, or the error a damaged value deserves
    return value if end == len(text) else json.loads(text)


_COLUMNS = "id, scope, kind, text, metadata, extra, created_at, seq, embedding"
_PREFIX = "memories/"


def _name(scope: str | None) -> str:
    """The version name of a scope's memories."""
    return _PREFIX + scope_key(scope)


def memories_version_name(scope: str | None) -> str:
    """The version name of a scope's memories, which every write to the scope moves on."""
    return _name(scope)


def _scope_of(name: str) -> str | None:
    return _unkey(name[len(_PREFIX) :])


def _unkey(stored: str) -> str | None:
    return None if stored == GLOBAL_SCOPE_KEY else stored


def scope_of(stored: str) -> str | None:
    """A scope as read back from a row (the unscoped space is stored as an empty string)."""
    return _unkey(stored)


def chunked_ids(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    """Storable ids in lists short enough for one `IN (...)`."""
    yield from chunked(_storable(ids), _CHUNK)


def _storable(ids: Sequence[str]) -> list[str]:
    """Ids that can be stored at all: one that is not valid Unicode names nothing here."""
    out = []
    for i in ids:
        try:
            i.encode("utf-8")
        except UnicodeEncodeError:
            continue
        out.append(i)
    return out


def _row(record: VectorRecord, dimension: int) -> tuple[Any, ...]:
    vector = np.ascontiguousarray(record.embedding, dtype=np.float32)
    if vector.shape != (dimension,):
        raise FourfoldError(f"memory {record.id} has a vector of shape {vector.shape}, not ({dimension},)")
    return (
        record.id,
        scope_key(record.scope),
        record.kind,
        record.text,
        json.dumps(dict(record.metadata), ensure_ascii=False, sort_keys=True),
        json.dumps(list(record.extra), ensure_ascii=False),
        float(record.created_at),
        int(record.seq),
        vector.tobytes(),
    )


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
    if _busy(exc):
        waited = f" for {timeout:g}s" if timeout is not None else ""
        return LockTimeout(
            f"{path} stayed locked by another writer{waited} ({exc}). Retry, or raise "
            "MemoryConfig.lock_timeout if writers are slow."
        )
    return StoreUnavailable(f"cannot use the database {path}: {exc}")


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
        texts = [embedding_text(text, _decode_stored(extra)) for _, text, extra in rows]  # as record_tokens reads them
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
