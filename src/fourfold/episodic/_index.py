"""The in-memory view of an episode log: episodes in file order, their vectors and a BM25 index."""

from __future__ import annotations

import numpy as np

from fourfold.embeddings import Vectors
from fourfold.text import BM25Index, tokenize
from fourfold.types import Episode

__all__ = ["EpisodeIndex", "dense_text", "lexical_text"]


def lexical_text(ep: Episode) -> str:
    """What BM25 sees: goal, actions and outcome."""
    return " ".join((ep.goal, *ep.actions, ep.outcome))


def dense_text(ep: Episode) -> str:
    """What the embedder sees: the situation and how it ended."""
    return f"{ep.goal}\n{ep.outcome}"


class EpisodeIndex:
    """Rows are positions in the log; vectors live in a matrix grown by doubling."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.episodes: list[Episode] = []
        self.rows: dict[str, int] = {}
        self.bm25 = BM25Index()  # successful episodes only: the only ones ever ranked
        self._success_rows: dict[str | None, list[int]] = {}
        self._matrix: Vectors = np.zeros((0, dimension), dtype=np.float32)
        self._has_vector = np.zeros(0, dtype=bool)
        self._orphans: dict[str, Vectors] = {}  # vectors whose episode line is not read yet

    def add(self, ep: Episode) -> None:
        """Append one episode read from the log."""
        row = len(self.episodes)
        self.episodes.append(ep)
        self.rows[ep.id] = row
        self._grow(row + 1)
        if ep.success:
            self._success_rows.setdefault(ep.scope, []).append(row)
            self.bm25.add(ep.id, tokenize(lexical_text(ep)))
        orphan = self._orphans.pop(ep.id, None)
        if orphan is not None:
            self._put(row, orphan)

    def _grow(self, needed: int) -> None:
        if needed <= len(self._matrix):
            return
        capacity = max(needed, 2 * len(self._matrix), 64)
        matrix = np.zeros((capacity, self.dimension), dtype=np.float32)
        matrix[: len(self._matrix)] = self._matrix
        has = np.zeros(capacity, dtype=bool)
        has[: len(self._has_vector)] = self._has_vector
        self._matrix, self._has_vector = matrix, has

    def _put(self, row: int, vector: Vectors) -> None:
        if vector.shape == (self.dimension,):
            self._matrix[row] = vector
            self._has_vector[row] = True

    def set_vectors(self, vectors: dict[str, Vectors]) -> None:
        """Attach vectors by episode id, keeping those of episodes not read yet for later."""
        for episode_id, vector in vectors.items():
            row = self.rows.get(episode_id)
            if row is None:
                self._orphans[episode_id] = vector
            else:
                self._put(row, vector)

    def success_rows(self, scope: str | None) -> list[int]:
        """Rows of successful episodes visible from scope: its own plus the unscoped ones."""
        rows = list(self._success_rows.get(None, []))
        if scope is not None:
            rows.extend(self._success_rows.get(scope, []))
        return rows

    def rows_without_vector(self, rows: list[int]) -> list[int]:
        return [row for row in rows if not self._has_vector[row]]

    def vectors(self, rows: list[int]) -> Vectors:
        return self._matrix[rows]

    def known_vectors(self) -> dict[str, Vectors]:
        """Every vector of an episode in the log, by id (for rewriting the sidecar)."""
        return {
            ep.id: self._matrix[row]
            for row, ep in enumerate(self.episodes)
            if self._has_vector[row]
        }
