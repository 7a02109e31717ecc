"""BM25 over a scope's records that lend each other words, worked out per query term.

`ScopeIndex` indexes each memory with its own words and its neighbours' at reduced weight.
Building every record's weighted term map and the postings of every term costs more than
the rest of a scope's index together (most of a customer's first recall). A query needs the
weights of its own few terms only, so this index keeps the records' own words and computes a
term's weights the first time a query asks for it: the same Okapi BM25 scores, the same
document frequencies, without touching the terms no query names.
"""

from __future__ import annotations

from collections.abc import Sequence

from fourfold.text.bm25 import K1, B, CollectionStats, bm25_idf

__all__ = ["ContextTerms", "Neighbours"]

#: Each record's neighbours as (position, share of weight); symmetric, as `_neighbours` makes them.
Neighbours = Sequence[Sequence[tuple[int, float]]]


class ContextTerms:
    """Okapi BM25 where record i holds its own tokens at weight 1 and each neighbour's at its share.

    A term's weight in a record is summed exactly as a map of the record's term weights sums
    it (its own occurrences, then each neighbour's in order, one share per occurrence), so
    `scores` equals `BM25Index.scores` over those maps. A record's length is its own token
    count plus each neighbour's count times its share: the sum of its weights, up to rounding.
    The index never changes; a scope that changes gets a new one.
    """

    __slots__ = ("_cache", "_lengths", "_neighbours", "_own", "_total", "b", "k1")

    def __init__(self, token_lists: Sequence[Sequence[str]], neighbours: Neighbours, *, k1: float = K1, b: float = B) -> None:
        self.k1, self.b = k1, b
        self._neighbours = neighbours
        # term -> {record: occurrences}, records in order
        own: dict[str, dict[int, int]] = {}
        for i, tokens in enumerate(token_lists):
            for token in tokens:
                found = own.get(token)
                if found is None:
                    own[token] = {i: 1}
                else:
                    found[i] = found.get(i, 0) + 1
        self._own = own
        sizes = [float(len(tokens)) for tokens in token_lists]
        lengths = list(sizes)
        for i, near in enumerate(neighbours):
            length = lengths[i]
            for j, share in near:
                length += share * sizes[j]
            lengths[i] = length
        self._lengths = lengths
        total = 0.0
        for length in lengths:
            total += length
        self._total = total
        self._cache: dict[str, dict[str, float]] = {}

    def __len__(self) -> int:
        return len(self._lengths)

    def posting(self, term: str) -> dict[str, float]:
        """The term's weight in every record that holds it (itself or through a neighbour), by str(position)."""
        cached = self._cache.get(term)
        if cached is not None:
            return cached
        own = self._own.get(term)
        out: dict[str, float] = {}
        if own:
            holders = set(own)
            for j in own:
                holders.update(i for i, _ in self._neighbours[j])
            for i in sorted(holders):
                weight = float(own.get(i, 0))
                for j, share in self._neighbours[i]:
                    for _ in range(own.get(j, 0)):
                        weight += share
                if weight > 0:
                    out[str(i)] = weight
        self._cache[term] = out
        return out

    def length(self, i: int) -> float:
        return self._lengths[i]

    def idf(self, term: str, *, stats: CollectionStats | None = None) -> float:
        """As `BM25Index.idf`: the term's inverse document frequency here, or in `stats`."""
        df: float = len(self.posting(term))
        if stats is None:
            return bm25_idf(len(self._lengths), df)
        return bm25_idf(stats.n_docs, max(stats.df.get(term, 0.0), df))

    def best_possible(self, query_tokens: Sequence[str], *, stats: CollectionStats | None = None) -> float:
        """As `BM25Index.best_possible`: every term matched, saturated."""
        return (self.k1 + 1.0) * sum(self.idf(term, stats=stats) for term in query_tokens)

    def scores(self, query_tokens: Sequence[str], *, stats: CollectionStats | None = None) -> dict[str, float]:
        """As `BM25Index.scores`: every record sharing a term with the query, by str(position)."""
        n_docs = len(self._lengths)
        if not n_docs or not self._total:
            return {}
        avgdl = self._total / n_docs if stats is None else stats.avgdl
        k1, b, lengths = self.k1, self.b, self._lengths
        out: dict[str, float] = {}
        for term in query_tokens:  # a repeated query term counts once per occurrence
            posting = self.posting(term)
            if not posting:
                continue
            idf = self.idf(term, stats=stats) if stats is not None else bm25_idf(n_docs, len(posting))
            for doc_id, tf in posting.items():
                norm = k1 * (1.0 - b + b * lengths[int(doc_id)] / avgdl)
                out[doc_id] = out.get(doc_id, 0.0) + idf * tf * (k1 + 1.0) / (tf + norm)
        return {doc_id: score for doc_id, score in out.items() if score > 0}
