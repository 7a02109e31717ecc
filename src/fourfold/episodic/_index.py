"""The in-memory view of an episode log: every episode's place, and the searched groups' vectors and postings.

Every row (an episode, in log order) holds its id, scope, time and outcome from the start: that
is all a log needs to know to list, count and search. An episode's text (its body) is read when
something needs it, and a group of successful episodes (a scope's, or the unscoped ones) holds
vectors and postings once a search has read them, so opening a large log reads only its skeleton.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import compress
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from fourfold.embeddings import Vectors
from fourfold.ranking.bm25 import K1, bm25_idf, bm25_term_scores
from fourfold.stores.sql import scope_of
from fourfold.stores.vector import kept_tokens
from fourfold.text.tokenize import TOKENS_TAG, tokenize_many
from fourfold.types import Episode

__all__ = ["Body", "EpisodeIndex", "dense_text", "lexical_text"]

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
#: An episode's text as stored: goal, actions (JSON), outcome, tags (JSON), problem, fix (NULL
#: in rows written before episodes recorded them).
Body = tuple[str, str, str, str, str | None, str | None]
#: Where a read row's body ends: (id, *Body, ...), as `EpisodeLog` selects it.
_BODY_END = 7
#: A posting key is a term's id in its high 32 bits and a document's place in its group in the low ones.
_DOC_BITS = 32
_DOC_MASK = (1 << _DOC_BITS) - 1
#: Distinct tag lists decoded once each (a few labels used over and over), up to this many.
_TAG_SETS_LIMIT = 4096


def lexical_text(ep: Episode) -> str:
    """What BM25 sees: goal, actions and outcome."""
    return " ".join((ep.goal, *ep.actions, ep.outcome))


def dense_text(ep: Episode) -> str:
    """What the embedder sees: the situation and how it ended."""
    return f"{ep.goal}\n{ep.outcome}"


def _kept_many(kept: list[str | None]) -> list[list[str] | None]:
    """`kept_tokens` of each, with no call per row for the tokens of this tokenizer."""
    prefix = f"{TOKENS_TAG} "
    start = len(prefix)
    return [k[start:].split() if k is not None and k.startswith(prefix) else kept_tokens(k) for k in kept]


class _Column:
    """A 1-D array that grows by doubling; `view()` is its filled part (no copy)."""

    __slots__ = ("_data", "size")

    def __init__(self, dtype: type[np.generic]) -> None:
        self._data: npt.NDArray[Any] = np.zeros(0, dtype=dtype)
        self.size = 0

    def extend(self, values: Sequence[Any] | npt.NDArray[Any]) -> None:
        needed = self.size + len(values)
        if needed > len(self._data):
            grown = np.zeros(max(needed, 2 * len(self._data), 16), dtype=self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : needed] = values
        self.size = needed

    def view(self) -> npt.NDArray[Any]:
        return self._data[: self.size]


class _Group:
    """The successful episodes of one scope (or the unscoped ones): their rows in log order and,
    once a search read them, their vectors (a zero row where one is missing) and BM25 postings.

    Postings are term-sorted segments of posting keys (term id, place) with term frequencies:
    one segment per run of documents indexed together, two neighbours merged when the older is
    not twice the newer, so a growing group keeps few segments and never re-sorts all at once.
    """

    __slots__ = ("_has", "_places", "_vectors", "indexed", "lengths", "read", "rows", "segments", "total")

    def __init__(self, dimension: int) -> None:
        self.rows = _Column(np.intp)
        self.read = 0  # places [0, read) had their bodies, tokens and stored vectors read
        self._places: dict[int, int] = {}  # row -> place, made when first asked
        self._vectors: Vectors = np.zeros((0, dimension), dtype=np.float32)
        self._has = np.zeros(0, dtype=bool)
        self.lengths = _Column(np.float64)  # of the documents indexed so far, by place
        self.total = 0  # their summed length
        self.indexed = 0  # places [0, indexed) have postings
        self.segments: list[tuple[Ints, Ints]] = []

    def place(self, row: int) -> int:
        """The row's place in the group (the row is one of its rows)."""
        places = self._places
        if len(places) < self.rows.size:
            places.update(zip(self.rows.view()[len(places) :].tolist(), range(len(places), self.rows.size), strict=True))
        return places[row]

    def _fit(self) -> None:
        """Room for a vector at every place (the group's rows only ever append)."""
        n = self.rows.size
        if len(self._has) >= n:
            return
        capacity = max(n, 2 * len(self._has), 4)
        vectors = np.zeros((capacity, self._vectors.shape[1]), dtype=np.float32)
        has = np.zeros(capacity, dtype=bool)
        vectors[: len(self._has)] = self._vectors
        has[: len(self._has)] = self._has
        self._vectors, self._has = vectors, has

    def put(self, places: list[int] | slice, vectors: Vectors) -> None:
        self._fit()
        self._vectors[places] = vectors
        self._has[places] = True

    def vectors(self) -> Vectors:
        self._fit()
        found: Vectors = self._vectors[: self.rows.size]
        return found

    def rows_without_vector(self, *, below: int | None = None) -> list[int]:
        """Rows with no vector in memory (of places below `below`, if given)."""
        self._fit()
        end = self.rows.size if below is None else below
        missing: list[int] = self.rows.view()[:end][~self._has[:end]].tolist()
        return missing

    def add_segment(self, keys: Ints, tf: Ints) -> None:
        self.segments.append((keys, tf))
        while len(self.segments) > 1 and len(self.segments[-2][0]) <= 2 * len(self.segments[-1][0]):
            (older, older_tf), (newer, newer_tf) = self.segments[-2:]
            merged = np.concatenate([older, newer])
            order = np.argsort(merged, kind="stable")
            self.segments[-2:] = [(merged[order], np.concatenate([older_tf, newer_tf])[order])]


class EpisodeIndex:
    """Rows are positions in the log; bodies, vectors and postings are filled in as they are read."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.ids: list[str] = []
        self.rows: dict[str, int] = {}
        self._scopes: list[str | None] = []
        self._success: list[int] = []
        self._ts = _Column(np.float64)  # each row's timestamp, for ranking
        self._bodies: list[Episode | Body | None] = []
        # kept tokens read with rows not yet in postings (None: none kept, to be made from the text)
        self._tokens: dict[int, list[str] | None] = {}
        self._groups: dict[str | None, _Group] = {}
        self._vocab: dict[str, int] = {}  # term -> id, for every group's postings
        self._tag_sets: dict[str, tuple[str, ...]] = {}

    def __len__(self) -> int:
        return len(self.ids)

    # -- the skeleton ----------------------------------------------------------------------

    def add_rows(self, rows: Sequence[Sequence[Any]]) -> None:
        """Append rows (id, stored scope, ts, success, ...) in log order; ids already held are skipped."""
        known = self.rows
        if known and any(r[0] in known for r in rows):
            rows = [r for r in rows if r[0] not in known]
        if not rows:
            return
        start = len(self.ids)
        ids, stored, ts, success = (list(map(itemgetter(i), rows)) for i in range(4))  # columns, half zip(*rows)'s time
        unkeyed = {key: scope_of(key) for key in dict.fromkeys(stored)}
        scopes = list(map(unkeyed.__getitem__, stored))
        self.ids.extend(ids)
        self.rows.update(zip(ids, range(start, start + len(ids)), strict=True))
        self._scopes.extend(scopes)
        self._success.extend(success)
        self._ts.extend(ts)
        self._bodies.extend([None] * len(ids))
        added: dict[str | None, list[int]] = {}  # each group's new rows (a cold open: 70k successes)
        for row, scope in zip(compress(range(start, start + len(ids)), success), compress(scopes, success)):  # noqa: B905
            batch = added.get(scope)
            if batch is None:
                batch = added[scope] = []
            batch.append(row)
        for scope, batch in added.items():
            group = self._groups.get(scope)
            if group is None:
                group = self._groups[scope] = _Group(self.dimension)
            group.rows.extend(batch)

    def rows_of(self, *, scope: str | None, any_scope: bool, success: bool | None) -> list[int]:
        """Rows in log order: of `scope` (every scope with `any_scope`), of that outcome unless None."""
        scopes, outcomes = self._scopes, self._success
        return [
            row for row in range(len(self.ids))
            if (any_scope or scopes[row] == scope) and (success is None or bool(outcomes[row]) is success)
        ]

    # -- bodies ----------------------------------------------------------------------------

    def rows_without_body(self, rows: Iterable[int]) -> list[int]:
        bodies = self._bodies
        return [row for row in rows if bodies[row] is None]

    def set_bodies(self, found: Iterable[Sequence[Any]]) -> None:
        """Keep bodies read as (id, goal, actions, outcome, tags, problem, fix, ...) of rows held;
        others are dropped."""
        rows, bodies = self.rows, self._bodies
        for r in found:
            row = rows.get(r[0])
            if row is not None and bodies[row] is None:
                bodies[row] = tuple(r[1:_BODY_END])  # type: ignore[assignment]

    def episode(self, row: int) -> Episode:
        """The episode of a row whose body was read (`set_bodies`)."""
        body = self._bodies[row]
        if isinstance(body, Episode):
            return body
        if body is None:
            raise LookupError(f"the body of row {row} was not read")
        goal, actions, outcome, tags, problem, fix = body
        tag_set = self._tag_sets.get(tags)
        if tag_set is None:
            tag_set = tuple(json.loads(tags))
            if len(self._tag_sets) < _TAG_SETS_LIMIT:
                self._tag_sets[tags] = tag_set
        ep = self._bodies[row] = Episode(
            goal=goal, actions=tuple(json.loads(actions)), outcome=outcome, success=bool(self._success[row]),
            ts=float(self._ts.view()[row]), id=self.ids[row], scope=self._scopes[row], tags=tag_set,
            problem=problem or "", fix=fix or "",
        )
        return ep

    # -- what a search reads ---------------------------------------------------------------

    def to_read(self, scopes: Sequence[str | None]) -> tuple[list[str | None], list[int]]:
        """What a search of `scopes` must read first: the groups never read (a query by scope
        each), and the rows of the others that arrived since or still have no vector (by id)."""
        whole: list[str | None] = []
        rows: list[int] = []
        for scope in scopes:
            group = self._groups.get(scope)
            if group is None or not group.rows.size:
                continue
            if not group.read:
                whole.append(scope)
                continue
            rows += group.rows_without_vector(below=group.read)
            rows += group.rows.view()[group.read :].tolist()
        return whole, rows

    def set_group(self, scope: str | None, found: Sequence[Sequence[Any]], *, identity: str) -> None:
        """Keep a never-read group's read by scope, in log order, as `set_loaded` takes rows.

        A read that holds exactly the group's rows (every read in the snapshot of the rows it
        completes does) is kept a group at a time: one matrix from the joined vectors, not a
        step per episode, since a scope's first search reads them all."""
        group = self._groups[scope]
        rows = group.rows.view().tolist()
        ids = self.ids
        if len(found) != len(rows) or [r[0] for r in found] != [ids[row] for row in rows]:
            self.set_loaded(found, identity=identity)
        else:
            bodies = self._bodies
            for row, r in zip(rows, found, strict=True):
                if bodies[row] is None:
                    bodies[row] = tuple(r[1:_BODY_END])  # type: ignore[assignment]
            self._tokens.update(zip(rows, _kept_many([r[_BODY_END] for r in found]), strict=True))
            width = 4 * self.dimension
            if all(r[-1] == identity and r[-2] is not None and len(r[-2]) == width for r in found):
                matrix = np.frombuffer(b"".join([r[-2] for r in found]), dtype=np.float32)
                group.put(slice(0, len(rows)), matrix.reshape(len(rows), self.dimension))
            else:
                self._put_stored(found, identity)
        group.read = len(rows)

    def set_loaded(self, found: Sequence[Sequence[Any]], *, identity: str) -> None:
        """Keep what a read of successful rows gave, as (id, goal, actions, outcome, tags, problem,
        fix, kept tokens, embedding, embedder): bodies, kept tokens (of this tokenizer), and the
        vectors the embedder of `identity` stored. Rows not held, or failures, are dropped."""
        self.set_bodies(found)
        for episode_id, *_, kept, _blob, _embedder in found:
            row = self.rows.get(episode_id)
            if row is not None and self._success[row]:
                group = self._groups[self._scopes[row]]
                if group.place(row) >= group.indexed:  # a row re-read for its vector has postings
                    self._tokens[row] = kept_tokens(kept)
        self._put_stored(found, identity)

    def mark_read(self, scopes: Sequence[str | None]) -> None:
        """Every row the groups of `scopes` hold has been read (`to_read`'s rows were)."""
        for scope in scopes:
            group = self._groups.get(scope)
            if group is not None:
                group.read = group.rows.size

    def _put_stored(self, found: Sequence[Sequence[Any]], identity: str) -> None:
        width = 4 * self.dimension
        by_group: dict[str | None, tuple[list[int], list[bytes]]] = {}
        for episode_id, *_, blob, embedder in found:
            row = self.rows.get(episode_id)
            if row is not None and self._success[row] and embedder == identity and blob is not None and len(blob) == width:
                rows, blobs = by_group.setdefault(self._scopes[row], ([], []))
                rows.append(row)
                blobs.append(blob)
        for scope, (rows, blobs) in by_group.items():
            group = self._groups[scope]
            matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(rows), self.dimension)
            group.put([group.place(row) for row in rows], matrix)

    def set_vectors(self, vectors: dict[str, Vectors]) -> None:
        """Attach vectors by episode id (of successful rows held; others are dropped)."""
        by_group: dict[str | None, tuple[list[int], list[Vectors]]] = {}
        for episode_id, vector in vectors.items():
            row = self.rows.get(episode_id)
            if row is not None and self._success[row] and vector.shape == (self.dimension,):
                rows, found = by_group.setdefault(self._scopes[row], ([], []))
                rows.append(row)
                found.append(vector)
        for scope, (rows, found) in by_group.items():
            group = self._groups[scope]
            group.put([group.place(row) for row in rows], np.stack(found))

    def rows_without_vector(self, scopes: Sequence[str | None]) -> list[int]:
        """The successful rows of `scopes` that have no vector in memory, group by group."""
        return [row for scope in scopes if (group := self._groups.get(scope)) for row in group.rows_without_vector()]

    # -- searching -------------------------------------------------------------------------

    def success_rows(self, scopes: Sequence[str | None]) -> npt.NDArray[np.intp]:
        """Rows of successful episodes of `scopes` (None is the unscoped group), group by group."""
        found = [self.group_rows(scope) for scope in scopes]
        return np.concatenate(found) if found else np.zeros(0, dtype=np.intp)

    def group_rows(self, scope: str | None) -> npt.NDArray[np.intp]:
        group = self._groups.get(scope)
        rows: npt.NDArray[np.intp] = group.rows.view() if group is not None else np.zeros(0, dtype=np.intp)
        return rows

    def group_vectors(self, scope: str | None) -> Vectors:
        """The vectors of the group's rows (a zero row where one is missing), in row order, without a copy."""
        group = self._groups.get(scope)
        return group.vectors() if group is not None else np.zeros((0, self.dimension), dtype=np.float32)

    def timestamps(self, rows: npt.NDArray[np.intp]) -> Floats:
        """The rows' episode timestamps."""
        ts: Floats = self._ts.view()[rows]
        return ts

    def lexical_scores(self, scopes: Sequence[str | None], query_tokens: list[str]) -> tuple[Floats, float]:
        """Okapi BM25 of each of `success_rows(scopes)`, with statistics over exactly those rows,
        and the best score the query could reach (see `BM25Index.best_possible`).

        All hits of all query terms are scored in one numpy step with the per-hit formula's
        operations in its order, and each document adds its terms' scores in query order (as
        `BM25Index.scores` adds them): the same floats as scoring one posting at a time.
        """
        groups = [self._indexed(scope) for scope in scopes]
        n_docs = sum(g.indexed for g in groups)
        if not n_docs:
            return np.zeros(0, dtype=np.float64), 0.0
        avgdl = sum(g.total for g in groups) / n_docs or 1.0
        vocab = self._vocab
        terms = np.array([vocab.get(t, -1) for t in query_tokens], dtype=np.int64)
        low, high = terms << _DOC_BITS, (terms + 1) << _DOC_BITS
        df = np.zeros(len(terms), dtype=np.int64)
        hits: list[tuple[Ints, Ints, Ints]] = []  # (query position, document, tf)
        lengths: list[Floats] = []
        base = 0
        for group in groups:
            lengths.append(group.lengths.view())
            for keys, tf in group.segments:
                first, last = np.searchsorted(keys, low), np.searchsorted(keys, high)
                counts = last - first
                df += counts
                n_hits = int(counts.sum())
                if n_hits:
                    ends = np.cumsum(counts)
                    at = np.arange(n_hits) + np.repeat(first - (ends - counts), counts)
                    where = np.repeat(np.arange(len(terms)), counts)
                    hits.append((where, (keys[at] & _DOC_MASK) + base, tf[at]))
            base += group.indexed
        idfs = [bm25_idf(n_docs, float(d)) for d in df.tolist()]
        best = 0.0
        for idf in idfs:  # a repeated query term counts once per occurrence
            best += (K1 + 1.0) * idf
        if not hits:
            return np.zeros(n_docs, dtype=np.float64), best
        where, docs, tf = (np.concatenate(parts) for parts in zip(*hits, strict=True))
        scored = bm25_term_scores(np.asarray(idfs, dtype=np.float64)[where], tf.astype(np.float64),
                                  np.concatenate(lengths)[docs], avgdl)
        scores: Floats = np.bincount(docs, weights=scored, minlength=n_docs).astype(np.float64, copy=False)
        return scores, best  # bincount adds each document's hits in input order: query order

    def _indexed(self, scope: str | None) -> _Group:
        """The group with postings for all its rows (their kept tokens, else tokens of their text)."""
        group = self._groups.get(scope)
        if group is None:
            group = self._groups[scope] = _Group(self.dimension)
        new = group.rows.view()[group.indexed :].tolist()
        if not new:
            return group
        kept = [self._tokens.pop(row, None) for row in new]
        lacking = [row for row, tokens in zip(new, kept, strict=True) if tokens is None]
        made = iter(tokenize_many([lexical_text(self.episode(row)) for row in lacking]))
        token_lists = [tokens if tokens is not None else next(made) for tokens in kept]
        sizes = [len(tokens) for tokens in token_lists]
        flat = [token for tokens in token_lists for token in tokens]
        ids = self._term_ids(flat)
        places = np.repeat(np.arange(group.indexed, group.indexed + len(new), dtype=np.int64), sizes)
        keys, tf = np.unique((ids << _DOC_BITS) | places, return_counts=True)
        group.add_segment(keys, tf)
        group.lengths.extend(sizes)
        group.total += sum(sizes)
        group.indexed += len(new)
        return group

    def _term_ids(self, tokens: list[str]) -> Ints:
        """Each token's id in the vocabulary, new tokens taking the next ids."""
        vocab = self._vocab
        ids: list[int | None] = list(map(vocab.get, tokens))
        if None in ids:
            for i, token in enumerate(tokens):
                if ids[i] is None:
                    ids[i] = vocab.setdefault(token, len(vocab))
        return np.array(ids, dtype=np.int64)
