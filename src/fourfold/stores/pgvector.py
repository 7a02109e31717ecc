"""Memories in PostgreSQL, with candidates for large scopes from pgvector and full-text search.

Small scopes are read whole and ranked exactly by fourfold (`ScopeIndex`), as on SQLite. A
scope that reaches `large_at` records is *promoted*: each of its rows gets the features
fourfold ranks it by, computed among its neighbours in the scope (`ScopeIndex.features`): its
vector blended with its neighbours' (`ann`, pgvector, in an HNSW index), its weighted terms
(`context`, JSONB, kept uncompressed in the row: a query reads a few from each candidate), those terms as full text (`terms`, in a GIN index) and its own words
without its neighbours' (`own_terms`, GIN). Only promoted rows are in those indexes, so small
scopes' writes never pay for them; a write to a large scope recomputes the features of the
rows it becomes a neighbour of. A recall in a large scope then reads candidates, not the
scope, in one statement: the nearest blended vectors (HNSW with the scope as a filter,
iterative scans), the records whose own words hold all of the query's words (and optionally
those holding all but one), and the best matches of its rarest words, which `fourfold.longterm.large`
ranks with the scope's statistics. Each large scope's document frequencies (how many of its
rows hold each term in their features) are kept in `large_terms`, its total length and its sum
of blended vectors (typicality's) in `large_scopes`, updated in the transaction that changes
the features, so a query reads the ranker's statistics exactly with one indexed lookup
instead of counting or sampling.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from fourfold.embeddings.base import Vectors
from fourfold.errors import StoreUnavailable
from fourfold.longterm.large import Candidates, Features
from fourfold.longterm.retrieval import ScopeIndex
from fourfold.ranking.bm25 import bm25_idf
from fourfold.stores.postgres import PostgresDatabase
from fourfold.stores.sql import COLUMNS, SQLVectorStore
from fourfold.stores.vector import VectorRecord, scope_key
from fourfold.text import memory_date, time_words, tokenize

__all__ = ["LARGE_AT", "PostgresVectorStore"]

log = logging.getLogger("fourfold.stores")
Floats = npt.NDArray[np.float64]

#: Records from which a scope is searched through its candidates rather than read whole: a
#: scope this large does not fit the reader's cache (`LongTermMemory.max_cached_records`).
LARGE_AT = 50_000
#: Records read on each side of a candidate: its neighbours lend it context (`Weights`).
WINDOW = 4
_PROMOTE_BATCH = 2_000
#: At most this many records are read (their term weights summed) for full-text candidates by
#: the query's rarest words. At 200k records 1,000 offered as much of the exact top 10 as 3,000
#: (0.993; 0.987 with none), since the records holding every word come by coordination.
LEXICAL_ROWS = 1_000
#: At most this many records holding all of a query's own words are scored for candidates.
COORDINATION_ROWS = 2_000
#: At most this many records holding all but one of a query's own words (three or more) are
#: scored for candidates too; none by default: with the records holding all of them scored
#: apart, they add little to the exact top 10 offered and much server CPU to every query.
PARTIAL_ROWS = 0
#: Records read at a time when a filter too narrow for the candidates is ranked over the scope.
MATCHING_BATCH = 5_000
#: Bytes a row of memories may reach before its long values are compressed or moved out.
_ROW_TARGET = 8160
#: How long a large scope's size stays trusted while others write to it.
_STATS_TTL = 30.0
#: The columns of `memories` a large scope's rows keep their features in.
_FEATURES = frozenset({"ann", "terms", "context", "length", "own_terms"})
#: The totals `large_scopes` keeps of each large scope, and their types.
_TOTALS = {"total_length": "DOUBLE PRECISION", "total_ann": "DOUBLE PRECISION[]"}


class PostgresVectorStore(SQLVectorStore):
    """Memories and document chunks in a `PostgresDatabase`; large scopes get ANN candidates."""

    def __init__(
        self, db: PostgresDatabase, *, embedder_identity: str, dimension: int, large_at: int = LARGE_AT
    ) -> None:
        super().__init__(db, embedder_identity=embedder_identity, dimension=dimension)
        self.pg = db
        self.large_at = large_at
        self.lexical_rows = LEXICAL_ROWS
        self.matching_batch = MATCHING_BATCH
        self.coordination_rows = COORDINATION_ROWS
        self.partial_rows = PARTIAL_ROWS
        self.ef_search: int | None = None  # HNSW's search breadth (None: twice the candidates, 40 to 1000)
        self._large: dict[str | None, bool | Hashable] = {}  # True, or the version found small at
        self._stats: dict[str | None, tuple[float, int]] = {}
        self._guard = threading.Lock()
        self.ann = self._prepare_ann()

    # -- schema -------------------------------------------------------------------------------

    def _prepare_ann(self) -> bool:
        """Add the ANN column and indexes once; without pgvector every scope is ranked exactly.
        A store made by this fourfold reads the catalog (one statement) and changes nothing."""
        with self.db.write() as conn:
            catalog = self._catalog(conn)
            columns = catalog[0].get("memories", set())
            if _FEATURES <= columns:
                self._prepare(conn, *catalog)
                return True
            stale = "ann" in columns  # promoted before own_terms existed: promoted again below
            if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
                conn.execute("SAVEPOINT ext")
                try:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except StoreUnavailable as exc:
                    conn.execute("ROLLBACK TO SAVEPOINT ext")
                    log.warning("pgvector is not available in %s (%s): large scopes are read whole", self.db.where, exc)
                    return False
            conn.execute(f"ALTER TABLE memories ADD COLUMN IF NOT EXISTS ann vector({self.dimension})")
            conn.execute("ALTER TABLE memories ADD COLUMN IF NOT EXISTS terms tsvector")
            conn.execute("ALTER TABLE memories ADD COLUMN IF NOT EXISTS context JSONB")
            conn.execute("ALTER TABLE memories ADD COLUMN IF NOT EXISTS length DOUBLE PRECISION")
            conn.execute("ALTER TABLE memories ADD COLUMN IF NOT EXISTS own_terms tsvector")
            conn.execute("CREATE TABLE IF NOT EXISTS large_scopes (scope TEXT PRIMARY KEY, since DOUBLE PRECISION NOT NULL,"
                         " total_length DOUBLE PRECISION, total_ann DOUBLE PRECISION[])")
            conn.execute("CREATE INDEX IF NOT EXISTS memories_ann ON memories USING hnsw (ann vector_cosine_ops)")
            conn.execute("CREATE INDEX IF NOT EXISTS memories_terms ON memories USING gin (terms) WHERE terms IS NOT NULL")
            conn.execute(
                "CREATE INDEX IF NOT EXISTS memories_own_terms ON memories USING gin (own_terms) WHERE own_terms IS NOT NULL"
            )
            self._prepare(conn, *self._catalog(conn))
            large = [r[0] for r in conn.execute("SELECT scope FROM large_scopes")] if stale else []
        for key in large:
            self._promote_key(key)
        return True

    def _prepare(self, conn: Any, tables: dict[str, set[str]], storage: str | None, options: list[str] | None) -> None:
        """Bring the large scopes' tables of an older fourfold up to date (`_catalog` says what they hold)."""
        self._prepare_terms(conn, exists="large_terms" in tables)
        self._prepare_totals(conn, tables.get("large_scopes", set()))
        self._prepare_storage(conn, storage, options)

    def _catalog(self, conn: Any) -> tuple[dict[str, set[str]], str | None, list[str] | None]:
        """The columns of the tables large scopes use, `memories.context`'s storage and
        `memories`' options: what opening checks, in one statement."""
        tables: dict[str, set[str]] = {}
        storage, options = None, None
        for table, column, kept, table_options in conn.execute(
            "SELECT c.relname, a.attname, a.attstorage, c.reloptions FROM pg_class AS c JOIN pg_attribute AS a"
            " ON a.attrelid = c.oid WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = ?)"
            " AND c.relkind = 'r' AND c.relname IN ('memories', 'large_scopes', 'large_terms') AND a.attnum > 0"
            " AND NOT a.attisdropped", (self.pg.schema,),
        ).fetchall():
            tables.setdefault(table, set()).add(column)
            if table == "memories":
                options = table_options
                if column == "context":
                    storage = kept
        return tables, storage, options

    @staticmethod
    def _prepare_terms(conn: Any, *, exists: bool) -> None:
        """The per-scope document frequencies; a database whose large scopes predate the table
        gets it filled from their rows' features once."""
        if exists:
            return
        conn.execute("CREATE TABLE IF NOT EXISTS large_terms (scope TEXT NOT NULL, term TEXT NOT NULL,"
                     " df INTEGER NOT NULL, PRIMARY KEY (scope, term))")
        conn.execute(
            "INSERT INTO large_terms (scope, term, df) SELECT m.scope, t.term, count(*) FROM memories AS m,"
            " jsonb_object_keys(m.context) AS t(term) WHERE m.context IS NOT NULL"
            " AND m.scope IN (SELECT scope FROM large_scopes) GROUP BY m.scope, t.term ON CONFLICT DO NOTHING"
        )

    def _prepare_totals(self, conn: Any, columns: set[str]) -> None:
        """Each large scope's totals, kept at write time: its record length (BM25's mean length
        times its size) and its sum of blended vectors (typicality's). A database whose large
        scopes predate either gets both summed from their rows once (`_totals`)."""
        missing = {name: kind for name, kind in _TOTALS.items() if name not in columns}
        if not missing:
            return
        for name, kind in missing.items():
            conn.execute(f"ALTER TABLE large_scopes ADD COLUMN {name} {kind}")
        keys = [r[0] for r in conn.execute("SELECT scope FROM large_scopes")]
        conn.executemany(
            "UPDATE large_scopes SET total_length = ?, total_ann = ? WHERE scope = ?",
            [(length, ann, key) for key, (length, ann) in self._totals(conn, keys).items()],
        )

    @staticmethod
    def _prepare_storage(conn: Any, storage: str | None, options: list[str] | None) -> None:
        """Keep a row's term weights uncompressed in the row: a query reads a few of them from
        each of a few hundred candidates, and a compressed `context` would be decompressed
        for every word, which costs a query many times the uncompressed read.

        `toast_tuple_target` lets a row reach 8 KB (a page) before its long values are
        compressed or moved out (the two vectors, 1.5 KB each, go first), and `STORAGE MAIN`
        keeps `context` in the row, compressed only if the row is still too long. Rows written
        before keep their form until their features are written again (a promotion, a
        neighbour's write): correct, only slower.
        """
        if storage != "m":
            conn.execute("ALTER TABLE memories ALTER COLUMN context SET STORAGE MAIN")
        if f"toast_tuple_target={_ROW_TARGET}" not in (options or ()):
            conn.execute(f"ALTER TABLE memories SET (toast_tuple_target = {_ROW_TARGET})")

    # -- writing ------------------------------------------------------------------------------

    def add(self, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        with self.writing(), self.db.write() as conn:
            super().add(records)
            if self.ann:
                scopes = sorted({scope_key(r.scope) for r in records})
                marks = ",".join("?" * len(scopes))
                large = {r[0] for r in conn.execute(f"SELECT scope FROM large_scopes WHERE scope IN ({marks})", scopes)}
                for key in large:
                    added = sorted(r.id for r in records if scope_key(r.scope) == key)
                    # The new rows and those within WINDOW of them: their neighbours changed.
                    near = {r.id for r in self._windows(conn, key, added, span=WINDOW)}
                    self._index_rows(conn, self._windows(conn, key, sorted(near), span=WINDOW), near)

    def _index_rows(self, conn: Any, window: Sequence[VectorRecord], targets: set[str]) -> None:
        """Store the ranking features of the `targets` among `window` (which holds their neighbours),
        move the scope's document frequencies by the terms they gained and lost and its totals
        (length, blended vectors) by what they gained."""
        index = ScopeIndex(window, self.dimension)
        rows = []
        delta: dict[tuple[str, str], int] = {}
        moved: dict[str, tuple[float, Floats]] = {}  # scope -> how much its total length and vector sum moved
        before = {r[0]: (r[1], r[2] or (), r[3] or 0.0, r[4]) for r in conn.execute(
            "SELECT id, scope, (SELECT array_agg(k) FROM jsonb_object_keys(context) AS k), length, ann FROM memories"
            " WHERE id = ANY(CAST(? AS text[]))", (sorted(targets),),
        )}
        for i, record in enumerate(index.records):
            if record.id in targets and record.id in before:
                blended, counts = index.features(i)
                # The terms as lexemes verbatim: a query names them exactly (no parser in between).
                rows.append((_vector_text(blended), list(counts), _own_words(record), json.dumps(counts),
                             sum(counts.values()), record.id))
                key, old, old_length, old_ann = before[record.id]
                length, shift = moved.get(key, (0.0, np.zeros(self.dimension, dtype=np.float64)))
                shift += blended
                if old_ann is not None:
                    shift -= _vector_of(old_ann)
                moved[key] = (length + sum(counts.values()) - old_length, shift)
                for term in set(counts).symmetric_difference(old):
                    delta[key, term] = delta.get((key, term), 0) + (1 if term in counts else -1)
        self._move_frequencies(conn, delta)
        self._move_totals(conn, moved)
        if len(rows) < 100:
            conn.executemany(
                "UPDATE memories SET ann = CAST(? AS vector), terms = array_to_tsvector(CAST(? AS text[])),"
                " own_terms = array_to_tsvector(CAST(? AS text[])), context = CAST(? AS jsonb), length = ? WHERE id = ?",
                rows,
            )
            return
        # Many rows (a promotion): COPY them into a temporary table and update in one statement.
        conn.execute("CREATE TEMPORARY TABLE IF NOT EXISTS promoted (ann TEXT, words TEXT[], own TEXT[],"
                     " context TEXT, length DOUBLE PRECISION, id TEXT) ON COMMIT DELETE ROWS")
        with conn.raw.cursor().copy("COPY promoted (ann, words, own, context, length, id) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        conn.execute(
            "UPDATE memories AS m SET ann = CAST(p.ann AS vector), terms = array_to_tsvector(p.words),"
            " own_terms = array_to_tsvector(p.own), context = CAST(p.context AS jsonb), length = p.length"
            " FROM promoted AS p WHERE m.id = p.id"
        )

    @staticmethod
    def _move_frequencies(conn: Any, delta: dict[tuple[str, str], int]) -> None:
        """Add `delta` to large_terms, in key order (concurrent writers lock rows in one order)."""
        moved = sorted((scope, term, n) for (scope, term), n in delta.items() if n)
        if not moved:
            return
        conn.execute(
            "INSERT INTO large_terms (scope, term, df) SELECT * FROM unnest(CAST(? AS text[]), CAST(? AS text[]),"
            " CAST(? AS integer[])) ON CONFLICT (scope, term) DO UPDATE SET df = large_terms.df + excluded.df",
            ([m[0] for m in moved], [m[1] for m in moved], [m[2] for m in moved]),
        )

    @staticmethod
    def _move_totals(conn: Any, moved: dict[str, tuple[float, Floats]]) -> None:
        """Add (length, vector sum) to large scopes' total lengths and sums of blended vectors (a
        scope being promoted has no row yet: its promotion writes both when it ends)."""
        for key, (length, vector) in sorted(moved.items(), key=lambda item: item[0]):
            conn.execute(
                "UPDATE large_scopes SET total_length = total_length + ?, total_ann = (SELECT array_agg(t + d"
                " ORDER BY i) FROM unnest(total_ann, CAST(? AS float8[])) WITH ORDINALITY AS u(t, d, i))"
                " WHERE scope = ?",
                (length, vector.tolist(), key),
            )

    def delete(self, ids: Sequence[str]) -> None:
        if not ids or not self.ann:
            super().delete(ids)
            return
        with self.writing(), self.db.write() as conn:
            delta: dict[tuple[str, str], int] = {}
            for scope, term in conn.execute(
                "SELECT m.scope, t.term FROM memories AS m, jsonb_object_keys(m.context) AS t(term)"
                " WHERE m.id = ANY(CAST(? AS text[])) AND m.context IS NOT NULL", (list(ids),),
            ):
                delta[scope, term] = delta.get((scope, term), 0) - 1
            moved: dict[str, tuple[float, Floats]] = {}
            for key, length, ann in conn.execute(
                "SELECT scope, length, ann FROM memories WHERE id = ANY(CAST(? AS text[])) AND ann IS NOT NULL",
                (list(ids),),
            ):
                total, vector = moved.get(key, (0.0, np.zeros(self.dimension, dtype=np.float64)))
                moved[key] = (total - float(length or 0.0), vector - _vector_of(ann))
            super().delete(ids)
            self._move_frequencies(conn, delta)
            self._move_totals(conn, moved)

    def delete_scope(self, scope: str) -> int:
        with self.writing(), self.db.write() as conn:
            removed = super().delete_scope(scope)
            if self.ann:
                conn.execute("DELETE FROM large_scopes WHERE scope = ?", (scope_key(scope),))
                conn.execute("DELETE FROM large_terms WHERE scope = ?", (scope_key(scope),))
        with self._guard:
            self._large.pop(scope, None)
            self._stats.pop(scope, None)
        return removed

    # -- large scopes -------------------------------------------------------------------------

    def is_large(self, scope: str | None) -> bool:
        """Whether the scope is searched through candidates; a scope that just grew past
        `large_at` is promoted now (once, by whichever process sees it first)."""
        if not self.ann:
            return False
        with self._guard:
            known = self._large.get(scope)
        if known is True:
            return True  # a large scope stays large until this store erases it: no version to read
        version = self.version(scope)
        if known is not None and known == version:
            return False
        key = scope_key(scope)
        with self.db.read() as conn:
            large = conn.execute("SELECT 1 FROM large_scopes WHERE scope = ?", (key,)).fetchone() is not None
            if not large:
                n = conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM memories WHERE scope = ? LIMIT ?) AS s", (key, self.large_at)
                ).fetchone()[0]
        if not large and n >= self.large_at:
            self.promote(scope)
            large = True
        with self._guard:
            self._large[scope] = True if large else version
        return large

    def promote(self, scope: str | None) -> None:
        """Compute and index a scope's ranking features, in write order, a batch per transaction
        (each batch read with WINDOW rows on either side: their neighbours)."""
        self._promote_key(scope_key(scope))

    def _promote_key(self, key: str) -> None:
        after: tuple[float, int] = (float("-inf"), -1)
        while True:
            with self.db.write() as conn:
                batch = self._records(conn.execute(
                    f"SELECT {COLUMNS} FROM memories WHERE scope = ? AND (created_at, seq) > (?, ?)"
                    " ORDER BY created_at, seq LIMIT ?", (key, *after, _PROMOTE_BATCH),
                ).fetchall())
                if not batch:  # done: from now on, writes index their own rows
                    length, ann = self._totals(conn, [key])[key]
                    conn.execute(
                        "INSERT INTO large_scopes (scope, since, total_length, total_ann) VALUES (?, ?, ?, ?)"
                        " ON CONFLICT (scope) DO NOTHING", (key, time.time(), length, ann),
                    )
                    return
                ends = [batch[0].id, batch[-1].id]
                window = {r.id: r for r in [*self._windows(conn, key, ends, span=WINDOW), *batch]}
                self._index_rows(conn, list(window.values()), {r.id for r in batch})
                after = (batch[-1].created_at, batch[-1].seq)

    def _totals(self, conn: Any, keys: list[str]) -> dict[str, tuple[float, list[float]]]:
        """Scopes' totals summed from their indexed rows: length, and blended vectors (pgvector's
        mean, accumulated in double precision, times their number). Read from the rows, so they
        hold whatever wrote them: an earlier, unfinished promotion, a write or a forget meanwhile."""
        totals = {key: (0.0, [0.0] * self.dimension) for key in keys}
        for key, length, mean, n in conn.execute(
            "SELECT scope, sum(length), avg(ann), count(ann) FROM memories WHERE scope = ANY(CAST(? AS text[]))"
            " AND ann IS NOT NULL GROUP BY scope", (keys,),
        ).fetchall():
            totals[key] = (float(length or 0.0), (_vector_of(mean) * n).tolist())
        return totals

    def _statistics(
        self, conn: Any, scope: str | None, terms: Sequence[str], *, settings: dict[str, str] | None = None
    ) -> tuple[dict[str, float], float, Vectors | None]:
        """How many records of a large scope hold each term, themselves or through their
        neighbours (exactly BM25's document frequency), its total length and its sum of blended
        vectors, all kept at write time: one read, which also makes `settings` for the rest of
        the transaction (a branch that returns no row, evaluated once: no round trip of its own)."""
        settings = settings or {}
        setting = " UNION ALL SELECT NULL, NULL, NULL WHERE set_config(?, ?, true) IS NULL" * len(settings)
        rows = conn.execute(
            "SELECT term, CAST(df AS float8), NULL FROM large_terms WHERE scope = ? AND term = ANY(CAST(? AS text[]))"
            " UNION ALL SELECT NULL, total_length, total_ann FROM large_scopes WHERE scope = ?" + setting,
            (scope_key(scope), sorted(set(terms)), scope_key(scope), *(v for item in settings.items() for v in item)),
        ).fetchall()
        found = {term: value for term, value, _ in rows if term is not None}
        length, ann = next(((value, ann) for term, value, ann in rows if term is None), (None, None))
        # float32, as typicality multiplies the rows by it (its float64 sum only moved its mean, by ~1e-8)
        total = np.asarray(ann, dtype=np.float32) if ann is not None else None
        return {term: float(found.get(term, 0)) for term in terms}, float(length or 0.0), total

    def scope_size(self, scope: str | None) -> int:
        """How many records the scope holds (recounted at most every few seconds)."""
        now = time.monotonic()
        with self._guard:
            cached = self._stats.get(scope)
        if cached is not None and now - cached[0] < _STATS_TTL:
            return cached[1]
        with self.db.read() as conn:
            n = int(conn.execute("SELECT count(*) FROM memories WHERE scope = ?", (scope_key(scope),)).fetchone()[0])
        with self._guard:
            self._stats[scope] = (now, n)
        return n

    def candidates(
        self, scope: str | None, query_vector: Vectors, query_text: str, *, dense: int, lexical: int
    ) -> Candidates:
        """The `dense` nearest records (by blended vector) and the `lexical` best word matches of
        a large scope, with their ranking features (term weights of the query's words only) and
        the query's words' document frequencies, all read in one snapshot."""
        key = scope_key(scope)
        tokens = tokenize(query_text)
        with self.pg.read() as conn:
            # A plan for this scope: a generic plan (chosen once psycopg prepares a statement run
            # five times) does not know the scope's size, and sorted the whole scope by distance.
            # Twice the candidates: at 1M rows (200k in the scope) the fused top 10 matched an
            # exact search in 0.995 of results with ef_search 400, 0.982 with 200 (another build).
            ef = int(self.ef_search or min(max(2 * int(dense), 40), 1000))
            settings = {"plan_cache_mode": "force_custom_plan", "hnsw.ef_search": str(ef),
                        "hnsw.iterative_scan": "relaxed_order"}
            df, total, ann_total = self._statistics(conn, scope, tokens, settings=settings)
            n = max(self.scope_size(scope), 1)
            present = {w: bm25_idf(n, df[w]) for w in dict.fromkeys(tokens) if df[w] > 0}
            parts = [("SELECT id FROM memories WHERE scope = ? AND ann IS NOT NULL ORDER BY ann <=> CAST(? AS vector)"
                      " LIMIT ?", (key, _vector_text(query_vector), int(dense)))]
            # The records whose own words hold all of the query's words (and, with `partial_rows`,
            # those holding all but one, scored apart so that they never crowd out the former):
            # the best by words when every word is common, which the telling words below cannot
            # reach (own words only: with their neighbours' most records hold them).
            if present:
                held = list(present)
                parts.append(_lexical(key, " & ".join(map(_lexeme, held)), "own_terms", present, lexical,
                                      cap=self.coordination_rows))
                if len(held) >= 3 and self.partial_rows:
                    parts.append(_lexical(key, _all_but_one(held), "own_terms", present, lexical, cap=self.partial_rows))
            idf = self._telling(scope, tokens, df)
            if idf:
                parts.append(_lexical(key, " | ".join(_lexeme(w) for w in idf), "terms", idf, lexical))
            # One statement: the candidates' ids and their features in one round trip.
            among = " UNION ".join(f"SELECT id FROM ({sql}) AS c{i}" for i, (sql, _) in enumerate(parts))
            found = self._features(conn, among, [v for _, params in parts for v in params], sorted(set(tokens)))
        return Candidates(*found, df=df, mean_length=total / n if total else 1.0, total=ann_total)

    def matching(
        self, scope: str | None, keep: Callable[[VectorRecord], bool], query_text: str
    ) -> Iterator[Features]:
        """A large scope's records that pass `keep`, with their ranking features (as `candidates`
        gives them), `matching_batch` rows read at a time in write order. Each batch is read
        without vectors and filtered here (the filter is fourfold's predicate, not SQL); only the
        rows that pass are read with their features."""
        key = scope_key(scope)
        words = sorted(set(tokenize(query_text)))
        unread = bytes(4 * self.dimension)  # the vector of a row read for its filter only
        after: tuple[float, int] = (float("-inf"), -1)
        while True:
            with self.db.read() as conn:
                rows = conn.execute(
                    f"SELECT {_FEATURE_COLUMNS} FROM memories WHERE scope = ? AND ann IS NOT NULL"
                    " AND (created_at, seq) > (?, ?) ORDER BY created_at, seq LIMIT ?",
                    (key, *after, int(self.matching_batch)),
                ).fetchall()
                batch = self._records([(*row[:_VECTOR_AT], unread, *row[_VECTOR_AT:]) for row in rows])
                passing = [r.id for r in batch if keep(r)]
                found = self._features(conn, "SELECT unnest(CAST(? AS text[]))", (passing,), words) if passing else None
            if not batch:
                return
            after = (batch[-1].created_at, batch[-1].seq)
            if found is not None:
                yield found

    def _telling(self, scope: str | None, words: list[str], df: dict[str, float]) -> dict[str, float]:
        """The query's words that can tell records apart, with their BM25 weights (idf): the
        rarest first, as long as the records holding them (`df`) number at most `lexical_rows`
        in all. Ranking every record that holds a common word would read much of the scope for
        candidates that word hardly ranks (the nearest vectors and the records holding every
        word find those)."""
        if not words:
            return {}
        n = max(self.scope_size(scope), 1)
        chosen, read = [], 0.0
        for w in sorted((w for w in dict.fromkeys(words) if df[w] > 0), key=lambda w: df[w]):
            if read + df[w] > self.lexical_rows:
                break
            chosen.append(w)
            read += df[w]
        weights: dict[str, float] = {}
        for w in words:  # a repeated query word counts once per occurrence, as in BM25
            if w in chosen:
                weights[w] = weights.get(w, 0.0) + bm25_idf(n, df[w])
        return weights

    def _features(self, conn: Any, among: str, params: Sequence[Any], words: list[str]) -> Features:
        """The features of the records whose ids the query `among` (with `params`) gives."""
        # The blended vector in pgvector's binary form (a header of 4 bytes, then big-endian
        # floats), and of the term weights only the query's words: nothing else of them is
        # scored. The record's own vector is not read: ranking candidates uses the blended one
        # (`ScopeIndex.of_features` drops the records' own), and it is the widest column.
        # The weights come as an array in the order of `words` (NULL where the record has none):
        # read in binary, no JSON to parse.
        rows = conn.execute(
            f"SELECT {_FEATURE_COLUMNS}, ann, length, ARRAY(SELECT CAST(context ->> w AS float8)"
            " FROM unnest(CAST(? AS text[])) AS w) FROM memories"
            f" WHERE id IN ({among}) AND ann IS NOT NULL ORDER BY created_at, seq",
            (words, *params),
        ).fetchall()
        if not rows:
            return [], np.zeros((0, self.dimension), dtype=np.float32), [], []
        # All vectors in one buffer, each row's header one float wide: one conversion, not one a row.
        blended = np.frombuffer(b"".join([row[-3] for row in rows]), dtype=">f4")
        matrix = blended.reshape(len(rows), self.dimension + 1)[:, 1:].astype(np.float32)
        records = self._records([(*row[:_VECTOR_AT], b"", *row[_VECTOR_AT:-3]) for row in rows], vectors=False)
        counts = [{w: x for w, x in zip(words, row[-1], strict=True) if x is not None} for row in rows]
        return records, matrix, counts, [float(row[-2]) for row in rows]

    def _windows(self, conn: Any, key: str, ids: list[str], *, span: int) -> list[VectorRecord]:
        """These records and the `span` records before and after each in write order."""
        if not ids:
            return []
        rows = conn.execute(
            f"SELECT {_OUTER} FROM unnest(CAST(? AS text[])) AS c(cid) JOIN memories m0 ON m0.id = c.cid,"
            f" LATERAL ((SELECT {COLUMNS} FROM memories m WHERE m.scope = ?"
            " AND (m.created_at, m.seq) < (m0.created_at, m0.seq) ORDER BY m.created_at DESC, m.seq DESC LIMIT ?)"
            f" UNION ALL (SELECT {COLUMNS} FROM memories m WHERE m.scope = ?"
            " AND (m.created_at, m.seq) >= (m0.created_at, m0.seq) ORDER BY m.created_at, m.seq LIMIT ?)) AS w",
            (ids, key, span, key, span + 1),
        ).fetchall()
        unique = list({row[0]: row for row in rows}.values())
        return self._records(unique)


_OUTER = ", ".join(f"w.{column}" for column in COLUMNS.split(", "))
#: A record's columns but its own vector, which `_features` puts back where COLUMNS has it.
_VECTOR_AT = COLUMNS.split(", ").index("embedding")
_FEATURE_COLUMNS = ", ".join(c for c in COLUMNS.split(", ") if c != "embedding")


def _lexical(
    key: str, tsquery: str, column: str, idf: dict[str, float], limit: int, *, cap: int | None = None
) -> tuple[str, tuple[Any, ...]]:
    """A query for the `limit` records of the scope matching `tsquery` on `column` that score
    best by each word's BM25 weight times its saturated weight in the record (its own and its
    neighbours' occurrences), length aside: one lookup in the record's weights per word. With
    `cap`, only that many matching records are scored (a bound on the work)."""
    words = list(idf)
    score = " + ".join(["coalesce(? * (context ->> ?)::float8 / ((context ->> ?)::float8 + 0.9), 0)"] * len(words))
    matching = f"SELECT id, context FROM memories WHERE scope = ? AND {column} @@ CAST(? AS tsquery)"
    if cap is not None:
        matching += f" LIMIT {int(cap)}"
    return (f"SELECT id FROM ({matching}) AS s ORDER BY {score} DESC LIMIT ?",
            (key, tsquery, *(v for w in words for v in (idf[w], w, w)), int(limit)))


def _own_words(record: VectorRecord) -> list[str]:
    """A record's own words (its text, extra texts and date words, as `ScopeIndex` reads them),
    without its neighbours': what the coordination candidates match."""
    words = tokenize(" ".join((record.text, *record.extra)))
    when = memory_date(record.metadata)
    if when is not None:
        words += tokenize(" ".join(time_words(when)))
    return sorted(set(words))


def _all_but_one(words: Sequence[str]) -> str:
    """A tsquery for records holding all of `words` but (at most) one."""
    return " | ".join(
        "(" + " & ".join(_lexeme(w) for j, w in enumerate(words) if j != skip) + ")" for skip in range(len(words))
    )


def _lexeme(term: str) -> str:
    """A term as a tsquery lexeme (quoted, so no character of it is read as an operator)."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def _vector_of(binary: bytes) -> Floats:
    """A vector from pgvector's binary form (a header of 4 bytes, then big-endian floats)."""
    return np.frombuffer(binary, dtype=">f4", offset=4).astype(np.float64)


def _vector_text(vector: Vectors) -> str:
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"
