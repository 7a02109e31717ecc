"""The in-memory view of an episode log: episodes in file order, their vectors and a BM25 index."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from fourfold.embeddings import Vectors
from fourfold.text.bm25 import K1, bm25_idf, bm25_term_scores
from fourfold.text.tokenize import tokenize_many
from fourfold.types import Episode

__all__ = ["EpisodeIndex", "dense_text", "lexical_text"]

Floats = npt.NDArray[np.float64]
#: Groups of at least this many successful episodes keep their vectors as a matrix of their own.
KEPT_GROUP_ROWS = 256

def lexical_text(ep: Episode) -> str:
    """What BM25 sees: goal, actions and outcome."""
    return " ".join((ep.goal, *ep.actions, ep.outcome))


def dense_text(ep: Episode) -> str:
    """What the embedder sees: the situation and how it ended."""
    return f"{ep.goal}\n{ep.outcome}"


class _Postings:
    """term -> (positions in the group, term frequencies), plus document lengths."""

    __slots__ = ("_arrays", "_lengths_array", "lengths", "postings", "total")

    def __init__(self) -> None:
        self.postings: dict[str, tuple[list[int], list[int]]] = {}
        self.lengths: list[int] = []
        self.total = 0
        self._lengths_array: Floats = np.zeros(0, dtype=np.float64)
        # term -> its posting as arrays, for the documents the group had when they were made
        self._arrays: dict[str, tuple[npt.NDArray[np.intp], Floats]] = {}

    def lengths_array(self) -> Floats:
        """`lengths` as an array (rebuilt only when documents were added since)."""
        if len(self._lengths_array) != len(self.lengths):
            self._lengths_array = np.array(self.lengths, dtype=np.float64)
            self._arrays.clear()  # a posting may have grown with them
        return self._lengths_array

    def arrays(self, term: str) -> tuple[npt.NDArray[np.intp], Floats] | None:
        """The term's positions and frequencies as arrays (made once while the group holds
        the same documents: a group is searched far more often than it grows), or None."""
        self.lengths_array()
        found = self._arrays.get(term)
        if found is None:
            posting = self.postings.get(term)
            if posting is None:
                return None
            found = self._arrays[term] = (np.array(posting[0], dtype=np.intp), np.array(posting[1], dtype=np.float64))
        return found


class EpisodeIndex:
    """Rows are positions in the log; vectors live in a matrix grown by doubling."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.episodes: list[Episode] = []
        self.rows: dict[str, int] = {}
        # BM25 postings per group of successful episodes, built the first time a search
        # needs that group: opening a big log does not tokenize 100k episodes.
        self._groups: dict[str | None, _Postings] = {}
        self._success_rows: dict[str | None, list[int]] = {}
        # A group's rows and their vectors as arrays of their own (made on a search, dropped
        # when the group grows or a vector of it arrives): a search reads them without copying.
        self._group_rows: dict[str | None, npt.NDArray[np.intp]] = {}
        self._group_matrix: dict[str | None, Vectors] = {}
        self._matrix: Vectors = np.zeros((0, dimension), dtype=np.float32)
        self._has_vector = np.zeros(0, dtype=bool)
        self._ts: Floats = np.zeros(0, dtype=np.float64)  # each row's timestamp, for ranking
        self._orphans: dict[str, Vectors] = {}  # vectors whose episode line is not read yet

    def add(self, ep: Episode) -> None:
        """Append one episode read from the log."""
        row = len(self.episodes)
        self.episodes.append(ep)
        self.rows[ep.id] = row
        self._grow(row + 1)
        self._ts[row] = ep.ts
        if ep.success:
            self._success_rows.setdefault(ep.scope, []).append(row)
        orphan = self._orphans.pop(ep.id, None)
        if orphan is not None:
            self._put(row, orphan)

    def add_many(self, episodes: list[Episode]) -> None:
        """Append episodes known to be valid and distinct (a snapshot's), in one step."""
        start = len(self.episodes)
        self.episodes.extend(episodes)
        self.rows.update(zip((ep.id for ep in episodes), range(start, start + len(episodes)), strict=True))
        self._grow(len(self.episodes))
        self._ts[start : len(self.episodes)] = [ep.ts for ep in episodes]
        for row, ep in enumerate(episodes, start):
            if ep.success:
                self._success_rows.setdefault(ep.scope, []).append(row)
        if self._orphans:
            self.set_vectors({i: self._orphans.pop(i) for i in list(self._orphans) if i in self.rows})

    def _grow(self, needed: int) -> None:
        if needed <= len(self._matrix):
            return
        capacity = max(needed, 2 * len(self._matrix), 64)
        matrix = np.zeros((capacity, self.dimension), dtype=np.float32)
        matrix[: len(self._matrix)] = self._matrix
        has = np.zeros(capacity, dtype=bool)
        has[: len(self._has_vector)] = self._has_vector
        ts = np.zeros(capacity, dtype=np.float64)
        ts[: len(self._ts)] = self._ts
        self._matrix, self._has_vector, self._ts = matrix, has, ts

    def _put(self, row: int, vector: Vectors) -> None:
        if vector.shape == (self.dimension,):
            self._matrix[row] = vector
            self._has_vector[row] = True
            self._group_matrix.pop(self.episodes[row].scope, None)

    def set_vectors(self, vectors: dict[str, Vectors]) -> None:
        """Attach vectors by episode id, keeping those of episodes not read yet for later."""
        rows: list[int] = []
        known: list[Vectors] = []
        for episode_id, vector in vectors.items():
            row = self.rows.get(episode_id)
            if row is None:
                self._orphans[episode_id] = vector
            elif vector.shape == (self.dimension,):
                rows.append(row)
                known.append(vector)
        if rows:
            self._matrix[rows] = np.stack(known)
            self._has_vector[rows] = True
            for scope in {self.episodes[row].scope for row in rows}:
                self._group_matrix.pop(scope, None)

    def set_group_vectors(self, scope: str | None, ids: Sequence[str], blobs: Sequence[bytes]) -> None:
        """Attach stored vectors (float32 bytes) of episodes all of one group, a scope's read by
        scope; those of episodes not in the index, or of another length, are dropped.

        One matrix from the joined bytes, not an array per episode, and the group's kept matrix
        dropped without looking up each episode's scope: a scope's first search reads them all."""
        width = 4 * self.dimension
        found = [(row, i) for i, (episode_id, blob) in enumerate(zip(ids, blobs, strict=True))
                 if len(blob) == width and (row := self.rows.get(episode_id)) is not None]
        if not found:
            return
        rows = [row for row, _ in found]
        kept = blobs if len(found) == len(blobs) else [blobs[i] for _, i in found]
        self._matrix[rows] = np.frombuffer(b"".join(kept), dtype=np.float32).reshape(len(rows), self.dimension)
        self._has_vector[rows] = True
        self._group_matrix.pop(scope, None)

    def success_rows(self, scopes: Sequence[str | None]) -> npt.NDArray[np.intp]:
        """Rows of successful episodes of `scopes` (None is the unscoped group), group by group."""
        return np.concatenate([self.group_rows(scope) for scope in scopes]) if scopes else np.zeros(0, dtype=np.intp)

    def group_rows(self, scope: str | None) -> npt.NDArray[np.intp]:
        """The group's rows of `success_rows` as an array."""
        rows = self._success_rows.get(scope, [])
        found = self._group_rows.get(scope)
        if found is None or len(found) != len(rows):  # rows only ever append to a group
            found = self._group_rows[scope] = np.array(rows, dtype=np.intp)
            self._group_matrix.pop(scope, None)
        return found

    def group_vectors(self, scope: str | None) -> Vectors:
        """The vectors of the group's rows (a zero row where one is missing), in row order.

        A large group's are kept as a matrix of their own (the unscoped group, the shared
        cases: searched by every query); a small one's are copied out on each search, which
        costs microseconds and keeps a log's vectors in memory once, not twice.
        """
        rows = self.group_rows(scope)
        if len(rows) < KEPT_GROUP_ROWS:
            small: Vectors = self._matrix[rows]
            return small
        found = self._group_matrix.get(scope)
        if found is None:
            found = self._group_matrix[scope] = self._matrix[rows]
        return found

    def lexical_scores(self, scopes: Sequence[str | None], query_tokens: list[str]) -> tuple[Floats, float]:
        """Okapi BM25 of each of `success_rows(scopes)`, with statistics over exactly those rows,
        and the best score the query could reach (see `BM25Index.best_possible`).

        Each group of rows (the unscoped ones, one scope's) keeps postings that grow as
        episodes arrive, so a query touches only the rows that share a term with it.
        """
        groups = [self._postings(scope) for scope in scopes]
        n_docs = sum(len(g.lengths) for g in groups)
        if not n_docs:
            return np.zeros(0, dtype=np.float64), 0.0
        avgdl = sum(g.total for g in groups) / n_docs or 1.0
        scores = np.zeros(n_docs, dtype=np.float64)
        best = 0.0
        # Each term's hits are scored in one numpy step (the same floats as one hit at a time);
        # a document gets its terms' scores added in query order, as `BM25Index.scores` adds them.
        for term in query_tokens:  # a repeated query term counts once per occurrence
            hits = [(g, g.arrays(term)) for g in groups]
            idf = bm25_idf(n_docs, sum(len(h[0]) for _, h in hits if h is not None))
            best += (K1 + 1.0) * idf
            base = 0
            for group, posting in hits:
                if posting is not None:
                    pos, tf = posting
                    scores[base + pos] += bm25_term_scores(idf, tf, group.lengths_array()[pos], avgdl)
                base += len(group.lengths)
        return scores, best

    def _postings(self, scope: str | None) -> _Postings:
        rows = self._success_rows.get(scope, [])
        group = self._groups.get(scope)
        if group is None:
            group = self._groups[scope] = _Postings()
        new = rows[len(group.lengths) :]  # rows only ever append to a group
        postings = group.postings
        for pos, tokens in enumerate(tokenize_many([lexical_text(self.episodes[row]) for row in new]), len(group.lengths)):
            counts: dict[str, int] = {}  # a plain dict counts a few words faster than a Counter
            for token in tokens:
                counts[token] = counts.get(token, 0) + 1
            for term, tf in counts.items():
                found = postings.get(term)
                if found is None:
                    postings[term] = ([pos], [tf])
                else:
                    found[0].append(pos)
                    found[1].append(tf)
            group.lengths.append(len(tokens))
            group.total += len(tokens)
        return group

    def rows_without_vector(self, rows: npt.NDArray[np.intp] | list[int]) -> list[int]:
        if not len(rows):
            return []
        at = np.asarray(rows, dtype=np.intp)
        missing: list[int] = at[~self._has_vector[at]].tolist()
        return missing

    def timestamps(self, rows: npt.NDArray[np.int64]) -> Floats:
        """The rows' episode timestamps."""
        ts: Floats = self._ts[rows]
        return ts

    def known_vectors(self) -> dict[str, Vectors]:
        """Every vector of an episode in the log, by id (for rewriting the sidecar)."""
        return {
            ep.id: self._matrix[row]
            for row, ep in enumerate(self.episodes)
            if self._has_vector[row]
        }
