"""Recall in a scope too large to read whole: fourfold's ranker over candidates from the store.

The store (PostgreSQL: `fourfold.stores.pgvector`) offers, for a query, the nearest records by
vector and the best by words, each with the records around it. fourfold ranks those exactly as
`ScopeIndex` ranks a whole scope (context from neighbours, dates, speakers), scoring with the
whole scope's statistics instead of the candidates' own: BM25's collection size, mean length
and document frequencies, which the store keeps at write time and reads with the candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from fourfold.embeddings.base import Vectors
from fourfold.longterm.retrieval import ScopeIndex, Weights
from fourfold.ranking.bm25 import CollectionStats
from fourfold.stores.vector import VectorRecord

__all__ = ["DENSE", "LEXICAL", "CandidateStore", "Candidates", "LargeScopes", "ScopeStats"]

#: Candidates taken by vector and by words (each of the store's word queries). With the records
#: holding (nearly) every query word among the word candidates, the exact top 10 that a large
#: scope's candidates missed were not far by vector: at 200k records of MiniLM vectors,
#: 0.993 of the exact top 10 offered with the 200 nearest, 0.987 with 100, where 800 nearest
#: without them offered 0.940 (benchmarks/results/scale.md).
DENSE, LEXICAL = 200, 200


@runtime_checkable
class CandidateStore(Protocol):
    """A store that can offer candidates for a query in a scope too large to read whole."""

    def is_large(self, scope: str | None) -> bool: ...

    def scope_size(self, scope: str | None) -> int: ...

    def candidates(
        self, scope: str | None, query_vector: Vectors, query_text: str, *, dense: int, lexical: int
    ) -> Candidates:
        """Records near the query by vector or by words, with their `ScopeIndex.features`, and
        how many records of the scope hold each of the query's words."""

    def matching(
        self, scope: str | None, keep: Callable[[VectorRecord], bool], query_text: str
    ) -> Iterator[Features]:
        """The scope's records that pass `keep`, with their features, a batch at a time in write order."""


#: Records, their blended vectors, their weights of the query's terms, and their lengths (the
#: sum of all their term weights; see `ScopeIndex.features`).
Features = tuple[list[VectorRecord], Vectors, list[dict[str, float]], list[float]]


class Candidates(NamedTuple):
    """A large scope's candidates for a query (`Features`), and its words' document frequencies."""

    records: list[VectorRecord]
    matrix: Vectors
    counts: list[dict[str, float]]
    lengths: list[float]
    df: dict[str, float]
    #: The scope's mean record length (BM25's avgdl), read with `df`.
    mean_length: float
    #: The sum of the scope's blended vectors, read with `df` (None: typicality is not taken off).
    total: Vectors | None = None


@dataclass(frozen=True, slots=True)
class ScopeStats(CollectionStats):
    """A large scope's statistics, read with a query's candidates: BM25's, and the sum of its
    blended vectors that its records' typicality needs (None: typicality is not taken off)."""

    total: Vectors | None = field(default=None, compare=False)


class LargeScopes:
    """Searches large scopes of a `CandidateStore`."""

    def __init__(self, store: CandidateStore, *, dense: int = DENSE, lexical: int = LEXICAL) -> None:
        self.store = store
        self.dense, self.lexical = dense, lexical

    def candidate_index(
        self, scope: str | None, query_vector: Vectors, query_text: str, *, weights: Weights
    ) -> tuple[ScopeIndex, ScopeStats] | None:
        """An index of the query's candidates in a large scope, with the scope's statistics to
        score them as in an index of the whole scope; None when there is no candidate."""
        size = self.store.scope_size(scope)
        records, matrix, counts, lengths, df, mean_length, total = self.store.candidates(
            scope, query_vector, query_text, dense=self.dense, lexical=self.lexical
        )
        if not records:
            return None
        stats = ScopeStats(n_docs=size, avgdl=mean_length, df=df, total=total)
        index = ScopeIndex.of_features(records, matrix, counts, lengths=lengths, weights=weights,
                                       scope_total=total, scope_size=size)
        return index, stats

    def matching_index(
        self, scope: str | None, query_vector: Vectors, query_text: str, *,
        keep: Callable[[VectorRecord], bool], k: int, stats: ScopeStats, weights: Weights,
    ) -> ScopeIndex | None:
        """An index of the k records that rank best, with the scope's `stats` (read with its
        candidates: no round trip of its own), among all of a large scope's records that pass
        `keep`; None when none does.

        For a filter so narrow that the candidates hold fewer than k records passing it: every
        passing record is scored, a batch at a time, and only the best k so far are kept. A
        record's score depends on its own features and the scope's statistics alone, and batches
        come in write order (ties go to the later record), so this is the ranking an index of
        every passing record would give.
        """
        total = stats.total
        records: list[VectorRecord] = []
        matrix: Vectors = np.zeros((0, 0), dtype=np.float32)
        counts: list[dict[str, float]] = []
        lengths: list[float] = []
        for more, more_matrix, more_counts, more_lengths in self.store.matching(scope, keep, query_text):
            records, counts, lengths = [*records, *more], [*counts, *more_counts], [*lengths, *more_lengths]
            matrix = np.concatenate([matrix, more_matrix]) if len(matrix) else more_matrix
            index = ScopeIndex.of_features(records, matrix, counts, lengths=lengths, weights=weights,
                                           scope_total=total, scope_size=stats.n_docs)
            best = {r.id for r, _ in index.search(query_vector, query_text, k=k, keep=_everything, stats=stats)}
            chosen = [i for i, r in enumerate(records) if r.id in best]  # still in write order
            records, counts, lengths = [records[i] for i in chosen], [counts[i] for i in chosen], [lengths[i] for i in chosen]
            matrix = matrix[chosen]
        if not records:
            return None
        return ScopeIndex.of_features(records, matrix, counts, lengths=lengths, weights=weights,
                                      scope_total=total, scope_size=stats.n_docs)


def _everything(_record: VectorRecord) -> bool:
    return True
