"""The memories table in portable SQL: one vector store for every `Database` engine.

SQLite (the embedded default) and PostgreSQL run the same statements through the `Database` seam;
what differs per engine (connections, locks, migrations, PostgreSQL's large-scope candidates)
stays in `fourfold.stores.sqlite`, `fourfold.stores.postgres` and `fourfold.stores.pgvector`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from fourfold.embeddings.base import Vectors
from fourfold.errors import EmbedderMismatch, FourfoldError, StoreCorrupt
from fourfold.stores.database import Database
from fourfold.stores.vector import (
    GLOBAL_SCOPE_KEY,
    NO_VECTOR,
    VERSION_KEY,
    VectorRecord,
    VectorStore,
    WriteTicket,
    chunked,
    record_tokens,
    scope_key,
    stored_record,
    tokens_of,
    tokens_to_keep,
)

__all__ = ["COLUMNS", "VERSIONED", "SQLVectorStore", "chunked_ids", "memories_version_name", "scope_key", "scope_of"]

#: Rows per `IN (...)` list, well under SQLite's limit on bound parameters.
CHUNK = 500
#: The rows whose metadata names a version entry (a superset: the exact test is made on read).
#: A literal, so that SQLite's planner matches it to the partial index of the same term.
VERSIONED = f"metadata LIKE '%\"{VERSION_KEY}\"%'"


class SQLVectorStore(VectorStore):
    """Memories and document chunks in the `memories` table of a `Database`; a version per scope.

    fourfold ranks in its own index (`ScopeIndex`), so this store only stores, reads a
    scope, and deletes; the SQL is portable, so it serves any engine (`SQLiteVectorStore`,
    `PostgresVectorStore`).
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
                records.extend(self._records(conn.execute(f"SELECT {COLUMNS} FROM memories WHERE id IN ({marks})", part)))
        return records

    def versioned_many(self, wanted: Mapping[str | None, Sequence[str]]) -> dict[str | None, list[VectorRecord]]:
        """Every scope's versioned rows in a query per `CHUNK` scopes, then the ids asked for
        by id: two queries for a batch over a thousand scopes, not two thousand."""
        found: dict[str | None, dict[str, VectorRecord]] = {scope: {} for scope in wanted}
        with self.db.read() as conn:  # one snapshot for both reads
            for part in chunked([scope_key(scope) for scope in found], CHUNK):
                marks = ",".join("?" * len(part))
                rows = conn.execute(f"SELECT {COLUMNS} FROM memories WHERE scope IN ({marks}) AND {VERSIONED}", part)
                for record in self._records(rows):
                    if VERSION_KEY in record.metadata:
                        found[record.scope][record.id] = record
            asked = {(scope, i) for scope, ids in wanted.items() for i in ids if i not in found[scope]}
            for record in self.get(list(dict.fromkeys(i for _, i in asked))):
                if (record.scope, record.id) in asked:
                    found[record.scope][record.id] = record
        return {scope: list(records.values()) for scope, records in found.items()}

    def last_written(self, scopes: Iterable[str | None]) -> dict[str | None, float]:
        """A query per `CHUNK` scopes; each scope's newest row is the last entry of its part of
        the (scope, created_at, seq) index, read without touching the scope's other rows."""
        found: dict[str | None, float] = {}
        with self.db.read() as conn:
            for part in chunked([scope_key(scope) for scope in dict.fromkeys(scopes)], CHUNK):
                newest = " UNION ALL ".join(
                    f"SELECT * FROM (SELECT scope, created_at FROM memories WHERE scope = ?"
                    f" ORDER BY created_at DESC LIMIT 1) AS n{i}" for i in range(len(part))
                )
                found.update((_unkey(scope), float(last)) for scope, last in conn.execute(newest, part))
        return found

    def scan(self, scope: str | None) -> list[VectorRecord]:
        return self.scan_versioned(scope)[0]

    def versioned(self, scope: str | None, ids: Sequence[str] = ()) -> list[VectorRecord]:
        return self.versioned_many({scope: ids})[scope]

    def scan_versioned(self, scope: str | None) -> tuple[list[VectorRecord], Hashable | None]:
        with self.db.read() as conn:
            version = self.db.version(_name(scope))
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE scope = ? ORDER BY created_at, seq", (scope_key(scope),)
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
        decode, read_scope = decode_stored, _unkey(scope_key(scope))
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
        """Records from rows of `COLUMNS`; without their vectors (`NO_VECTOR`) unless `vectors`."""
        out = []
        decode = decode_stored
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


def decode_stored(text: str) -> Any:
    """JSON as `json.dumps` stored it (no surrounding whitespace): `raw_decode` skips the
    whitespace scans of `json.loads`, a third of its time on short metadata."""
    try:
        value, end = _DECODER.raw_decode(text)
    except json.JSONDecodeError:
        return json.loads(text)  # surrounding whitespace, or the error a damaged value deserves
    return value if end == len(text) else json.loads(text)


COLUMNS = "id, scope, kind, text, metadata, extra, created_at, seq, embedding"
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
    yield from chunked(_storable(ids), CHUNK)


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


