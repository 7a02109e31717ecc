"""Recall in a scope too large to read whole: fourfold's ranker over candidates from the store.

The store (PostgreSQL: `fourfold.stores.pgvector`) offers, for a query, the nearest records by
vector and the best by words, each with the records around it. fourfold ranks those exactly as
`ScopeIndex` ranks a whole scope (context from neighbours, dates, speakers), scoring with the
whole scope's statistics instead of the candidates' own: BM25's collection size, mean length
and document frequencies, and the mean and spread of each signal that its z-scores use, all
estimated from a random sample of the scope that is kept between queries.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from fourfold.embeddings.base import Vectors
from fourfold.longterm.retrieval import ScopeIndex, Weights
from fourfold.stores.vector import VectorRecord
from fourfold.text import tokenize
from fourfold.text.bm25 import CollectionStats

__all__ = ["DENSE", "LEXICAL", "CandidateStore", "LargeScopes"]

#: Candidates taken by vector and by words. The exact top 10 that a large scope's candidates
#: missed were records a little farther by vector (at 30k records of MiniLM vectors: 0.975 of
#: the exact top 10 offered with 400 nearest, 0.993 with 800; benchmarks/results/scale.md).
DENSE, LEXICAL = 800, 200
#: A scope's mean length is measured again once its size moved this much, or after this long.
_RESAMPLE_DRIFT = 0.05
_RESAMPLE_AFTER = 600.0


@runtime_checkable
class CandidateStore(Protocol):
    """A store that can offer candidates for a query in a scope too large to read whole."""

    def is_large(self, scope: str | None) -> bool: ...

    def scope_size(self, scope: str | None) -> int: ...

    def candidates(
        self, scope: str | None, query_vector: Vectors, query_text: str, *, dense: int, lexical: int
    ) -> Features:
        """Records near the query by vector or by words, with their `ScopeIndex.features`."""

    def mean_length(self, scope: str | None) -> float:
        """The mean length (sum of term weights) of the scope's records."""

    def document_frequencies(self, scope: str | None, terms: Sequence[str]) -> dict[str, float]:
        """How many records of the scope hold each term (themselves or through neighbours)."""


#: Records, their blended vectors, their weights of the query's terms, and their lengths (the
#: sum of all their term weights; see `ScopeIndex.features`).
Features = tuple[list[VectorRecord], Vectors, list[dict[str, float]], list[float]]
#: A term no query can hold: it carries the rest of a record's length, so BM25's length
#: normalisation sees the whole record while only the query's terms are indexed.
_REST = "\x00rest"


class LargeScopes:
    """Searches large scopes of a `CandidateStore`, keeping each scope's mean length a while."""

    def __init__(self, store: CandidateStore, *, dense: int = DENSE, lexical: int = LEXICAL) -> None:
        self.store = store
        self.dense, self.lexical = dense, lexical
        self._lengths: dict[str | None, tuple[float, int, float]] = {}  # scope -> (when, size, mean)
        self._lock = threading.Lock()

    def candidate_index(
        self, scope: str | None, query_vector: Vectors, query_text: str, *, weights: Weights
    ) -> tuple[ScopeIndex, CollectionStats] | None:
        """An index of the query's candidates in a large scope, with the scope's statistics to
        score them as in an index of the whole scope; None when there is no candidate."""
        size = self.store.scope_size(scope)
        records, matrix, counts, lengths = self.store.candidates(
            scope, query_vector, query_text, dense=self.dense, lexical=self.lexical
        )
        if not records:
            return None
        tokens = tokenize(query_text)
        stats = CollectionStats(
            n_docs=size, avgdl=self._mean_length(scope, size), df=self.store.document_frequencies(scope, tokens)
        )
        weighted = [{**c, _REST: length - sum(c.values())} for c, length in zip(counts, lengths, strict=True)]
        return ScopeIndex.of_features(records, matrix, weighted, weights=weights), stats

    def _mean_length(self, scope: str | None, size: int) -> float:
        """The scope's mean record length, measured again once its size moved or after a while."""
        now = time.monotonic()
        with self._lock:
            cached = self._lengths.get(scope)
        if cached is not None and abs(size - cached[1]) <= _RESAMPLE_DRIFT * max(cached[1], 1) \
                and now - cached[0] < _RESAMPLE_AFTER:
            return cached[2]
        mean = self.store.mean_length(scope)
        with self._lock:
            self._lengths[scope] = (now, size, mean)
        return mean
