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
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from fourfold.embeddings.base import Vectors
from fourfold.longterm.retrieval import ScopeIndex, Weights
from fourfold.stores.vector import VectorRecord
from fourfold.text import tokenize
from fourfold.text.bm25 import CollectionStats

__all__ = ["CandidateStore", "LargeScopes"]

#: Records in the sample a large scope's statistics are estimated from.
SAMPLE = 3_000
#: A sample is drawn again once the scope's size moved this much, or after this long.
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

    def sample(self, scope: str | None, size: int) -> Features:
        """About `size` records drawn at random, with their features."""

    def document_frequencies(self, scope: str | None, terms: Sequence[str]) -> dict[str, float]:
        """How many records of the scope hold each term (themselves or through neighbours)."""


#: Records, their blended vectors and their term weights (see `ScopeIndex.features`).
Features = tuple[list[VectorRecord], Vectors, list[dict[str, float]]]


class _Sample:
    def __init__(self, features: Features, size: int, weights: Weights) -> None:
        self.index = ScopeIndex.of_features(*features, weights=weights)
        self.rows = np.arange(len(self.index.records), dtype=np.int64)
        self.size = size  # the scope's size when drawn
        self.drawn = time.monotonic()
        lengths = [self.index.bm25.length(str(i)) for i in self.rows.tolist()]
        self.avgdl = float(np.mean(lengths)) if lengths else 0.0


class LargeScopes:
    """Searches large scopes of a `CandidateStore`, keeping a statistics sample per scope."""

    def __init__(self, store: CandidateStore, *, dense: int = 200, lexical: int = 200, sample: int = SAMPLE) -> None:
        self.store = store
        self.dense, self.lexical, self.sample_size = dense, lexical, sample
        self._samples: dict[tuple[str | None, Weights], _Sample] = {}
        self._lock = threading.Lock()

    def search(
        self,
        scope: str | None,
        query_vector: Vectors,
        query_text: str,
        *,
        k: int,
        keep: Callable[[VectorRecord], bool],
        weights: Weights,
    ) -> list[tuple[VectorRecord, float]]:
        size = self.store.scope_size(scope)
        sample = self._sample(scope, size, weights)
        features = self.store.candidates(scope, query_vector, query_text, dense=self.dense, lexical=self.lexical)
        if not features[0]:
            return []
        tokens = tokenize(query_text)
        stats = CollectionStats(
            n_docs=size, avgdl=sample.avgdl or 1.0, df=self.store.document_frequencies(scope, tokens)
        )
        index = ScopeIndex.of_features(*features, weights=weights)
        return index.search(query_vector, query_text, k=k, keep=keep, weights=weights, stats=stats)

    def _sample(self, scope: str | None, size: int, weights: Weights) -> _Sample:
        key = (scope, weights)
        with self._lock:
            sample = self._samples.get(key)
        fresh = (
            sample is not None
            and abs(size - sample.size) <= _RESAMPLE_DRIFT * max(sample.size, 1)
            and time.monotonic() - sample.drawn < _RESAMPLE_AFTER
        )
        if sample is not None and fresh:
            return sample
        sample = _Sample(self.store.sample(scope, self.sample_size), size, weights)
        with self._lock:
            self._samples[key] = sample
        return sample
