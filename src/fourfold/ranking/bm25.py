"""An incremental, exact Okapi BM25 index: add and remove documents at any time."""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fourfold.errors import InvalidInput

__all__ = [
    "REST", "BM25Index", "BM25Table", "CollectionStats", "PositionalBM25", "bm25_idf", "bm25_term_scores", "term_idf",
]

#: A term no query can hold (tokens never contain NUL): in `BM25Table.to_index` it carries the
#: part of a document's length that its given weights leave out.
REST = "\x00rest"

#: Okapi BM25 parameters: term-frequency saturation and length normalisation.
K1, B = 0.9, 0.4


def bm25_idf(n_docs: float, df: float) -> float:
    """Okapi BM25's inverse document frequency, never negative (Lucene's form)."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25_term_scores(
    idf: float | npt.NDArray[np.float64], tf: npt.NDArray[np.float64], lengths: npt.NDArray[np.float64], avgdl: float,
    *, k1: float = K1, b: float = B,
) -> npt.NDArray[np.float64]:
    """One query term's Okapi BM25 score in each document holding it, in one numpy step: `tf` is
    its weight in each, `lengths` their lengths (`idf` may also be one per hit, for the hits of
    several terms at once). The operations are those of `BM25Index.scores` in its order, so the
    floats are the same as a score computed one posting at a time."""
    norm = k1 * (1.0 - b + b * lengths / avgdl)
    return idf * tf * (k1 + 1.0) / (tf + norm)


@dataclass(frozen=True, slots=True)
class CollectionStats:
    """A collection's BM25 statistics, for an index that holds only part of it (a large
    scope's candidates): scores then equal those of an index of the whole collection."""

    n_docs: int
    avgdl: float
    #: Documents holding each term (at least those of the index itself are counted).
    df: Mapping[str, float]


def term_idf(n_docs: int, df: float, term: str, stats: CollectionStats | None) -> float:
    """The idf of a term that `df` of `n_docs` documents hold; with `stats`, in their larger
    collection (which holds at least these documents)."""
    if stats is None:
        return bm25_idf(n_docs, df)
    return bm25_idf(stats.n_docs, max(stats.df.get(term, 0.0), df))


class BM25Index:
    """Okapi BM25 over token lists, always scored with the current collection statistics.

    Postings are kept per term, so a query touches only the documents that share a term
    with it; scores equal those of an index rebuilt from scratch over the same documents.
    """

    def __init__(self, *, k1: float = K1, b: float = B) -> None:
        if not (math.isfinite(k1) and k1 >= 0):
            raise InvalidInput(f"k1 must be a finite number >= 0, got {k1!r}")
        if not (math.isfinite(b) and 0 <= b <= 1):
            raise InvalidInput(f"b must be between 0 and 1, got {b!r}")
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[str, float]] = {}
        self._doc_terms: dict[str, dict[str, float]] = {}
        self._doc_len: dict[str, float] = {}
        self._total_len = 0.0

    def __len__(self) -> int:
        return len(self._doc_len)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._doc_len

    def add(self, doc_id: str, tokens: Sequence[str]) -> None:
        """Index a document, replacing any earlier document with the same id."""
        if isinstance(tokens, str):
            raise InvalidInput("tokens must be a sequence of strings, not one string")
        self._store(doc_id, dict(Counter(tokens)))

    def add_weighted(self, doc_id: str, weights: Mapping[str, float]) -> None:
        """Index a document given as term weights (fractional counts); its length is their sum.

        This lets a document carry words from elsewhere at reduced weight, such as the
        neighbouring messages of a chat turn. `add(doc, tokens)` equals `add_weighted` of the
        token counts. Non-positive weights are ignored.
        """
        if isinstance(weights, str) or not isinstance(weights, Mapping):
            raise InvalidInput("weights must be a mapping of term to weight")
        values = weights.values()
        # Fast path (an index builds a scope from thousands of these): all floats whose sum is
        # finite are all finite. Anything else takes the checking loop below.
        if all(type(w) is float for w in values) and math.isfinite(sum(values)):
            self._store(doc_id, {term: w for term, w in weights.items() if w > 0})
            return
        counts: dict[str, float] = {}
        for term, weight in weights.items():
            if (checked := _checked_weight(term, weight)) > 0:
                counts[term] = checked
        self._store(doc_id, counts)

    def _store(self, doc_id: str, counts: dict[str, float]) -> None:
        self.remove(doc_id)
        for term, tf in counts.items():
            self._postings.setdefault(term, {})[doc_id] = tf
        self._doc_terms[doc_id] = counts
        length = sum(counts.values())
        self._doc_len[doc_id] = length
        self._total_len += length

    def copy(self) -> BM25Index:
        """An independent copy (documents' term maps are shared: they are never changed in place)."""
        out = BM25Index(k1=self.k1, b=self.b)
        out._postings = {term: dict(posting) for term, posting in self._postings.items()}
        out._doc_terms = dict(self._doc_terms)
        out._doc_len = dict(self._doc_len)
        out._total_len = self._total_len
        return out

    def recount_in_order(self, doc_ids: Sequence[str]) -> None:
        """Recompute the total length by adding the documents' lengths in this order.

        Floating-point sums depend on their order: after replacing documents, this makes the
        statistics (and so the scores) bit-identical to an index built in that order.
        """
        total = 0.0
        for doc_id in doc_ids:
            total += self._doc_len[doc_id]
        self._total_len = total

    def remove(self, doc_id: str) -> None:
        """Drop a document; nothing happens if it is not indexed."""
        counts = self._doc_terms.pop(doc_id, None)
        if counts is None:
            return
        for term in counts:
            posting = self._postings[term]
            del posting[doc_id]
            if not posting:
                del self._postings[term]
        self._total_len -= self._doc_len.pop(doc_id)

    def idf(self, term: str, *, stats: CollectionStats | None = None) -> float:
        """The term's inverse document frequency (as high as it gets for a term no document has)."""
        return term_idf(len(self._doc_len), len(self._postings.get(term, ())), term, stats)

    def best_possible(self, query_tokens: Sequence[str], *, stats: CollectionStats | None = None) -> float:
        """An upper bound of any document's score for this query: every term matched, saturated.

        Scores divided by it are shares in [0, 1) that mean the same for long and short queries.
        """
        return (self.k1 + 1.0) * sum(self.idf(term, stats=stats) for term in query_tokens)

    def length(self, doc_id: str) -> float:
        """A document's length (the sum of its term weights); 0 if it is not indexed."""
        return self._doc_len.get(doc_id, 0.0)

    def scores(self, query_tokens: Sequence[str], *, stats: CollectionStats | None = None) -> dict[str, float]:
        """BM25 score of every document sharing a term with the query (all scores > 0).

        `stats` scores with a larger collection's statistics (its size, mean length, document
        frequencies) instead of this index's own.
        """
        n_docs = len(self._doc_len)
        if not n_docs or not self._total_len:
            return {}
        avgdl = self._total_len / n_docs if stats is None else stats.avgdl
        k1, b = self.k1, self.b
        out: dict[str, float] = {}
        for term in query_tokens:  # a repeated query term counts once per occurrence
            posting = self._postings.get(term)
            if not posting:
                continue
            idf = self.idf(term, stats=stats) if stats is not None else bm25_idf(n_docs, len(posting))
            n = len(posting)
            tf = np.fromiter(posting.values(), dtype=np.float64, count=n)
            lengths = np.fromiter(map(self._doc_len.__getitem__, posting), dtype=np.float64, count=n)
            for doc_id, score in zip(posting, bm25_term_scores(idf, tf, lengths, avgdl, k1=k1, b=b).tolist(), strict=True):
                out[doc_id] = out.get(doc_id, 0.0) + score
        return {doc_id: score for doc_id, score in out.items() if score > 0}

    def top(self, query_tokens: Sequence[str], k: int) -> list[tuple[str, float]]:
        """The k best (doc_id, score) pairs, best first, ties broken by doc_id."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidInput(f"k must be an integer >= 0, got {k!r}")
        ranked = heapq.nsmallest(
            k, self.scores(query_tokens).items(), key=lambda kv: (-kv[1], kv[0])
        )
        return ranked


class PositionalBM25:
    """Okapi BM25 over documents numbered 0 to n-1 whose postings are arrays: what `BM25Table`
    and a scope's `ContextTerms` share. A subclass holds `k1`, `b`, the documents' `_lengths` and
    their `_total` (summed in document order), and gives each term's postings and count."""

    __slots__ = ()

    k1: float
    b: float
    _lengths: npt.NDArray[np.float64]
    _total: float

    def _posting_arrays(self, term: str) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        """The documents holding the term and its weights there."""
        raise NotImplementedError

    def _df(self, term: str) -> int:
        """How many documents hold the term."""
        return len(self._posting_arrays(term)[0])

    def __len__(self) -> int:
        return len(self._lengths)

    def length(self, i: int) -> float:
        """Document i's length."""
        return float(self._lengths[i])

    def idf(self, term: str, *, stats: CollectionStats | None = None) -> float:
        """As `BM25Index.idf`."""
        return term_idf(len(self._lengths), self._df(term), term, stats)

    def best_possible(self, query_tokens: Sequence[str], *, stats: CollectionStats | None = None) -> float:
        """As `BM25Index.best_possible`: every term matched, saturated."""
        return (self.k1 + 1.0) * sum(self.idf(term, stats=stats) for term in query_tokens)

    def score_array(
        self, query_tokens: Sequence[str], *, stats: CollectionStats | None = None
    ) -> npt.NDArray[np.float64]:
        """Every document's BM25 score (0 where `BM25Index.scores` has none), by position.

        Each term's hits are scored in one step of the kernel, and a document adds its terms'
        scores in query order: the same floats as `BM25Index.scores`."""
        n_docs = len(self._lengths)
        out = np.zeros(n_docs, dtype=np.float64)
        if not n_docs or not self._total:
            return out
        avgdl = self._total / n_docs if stats is None else stats.avgdl
        for term in query_tokens:  # a repeated query term counts once per occurrence
            holders, tf = self._posting_arrays(term)
            if not len(holders):
                continue
            idf = self.idf(term, stats=stats) if stats is not None else bm25_idf(n_docs, len(holders))
            out[holders] += bm25_term_scores(idf, tf, self._lengths[holders], avgdl, k1=self.k1, b=self.b)
        out[~(out > 0)] = 0.0  # as `BM25Index.scores` leaves them out
        return out

    def scores(self, query_tokens: Sequence[str], *, stats: CollectionStats | None = None) -> dict[str, float]:
        """As `BM25Index.scores`: every document sharing a term with the query, by str(position)."""
        out = self.score_array(query_tokens, stats=stats)
        hit = np.flatnonzero(out > 0)
        return dict(zip(map(str, hit.tolist()), out[hit].tolist(), strict=True))


class BM25Table(PositionalBM25):
    """Okapi BM25 over a fixed set of documents given as term weights, held as one table.

    What `BM25Index` gives for documents `str(0)`, `str(1)`, ... added with `add_weighted`,
    bit for bit, without a Python step per posting: a large scope's candidates (a few hundred
    records, a few query words each) are indexed for one query and dropped. With `lengths`,
    `weights` hold only some of each document's terms and `lengths[i]` is document i's whole
    length: the remainder counts as the weight of `REST`, as if it were one more term.
    """

    __slots__ = ("_bounds", "_holders", "_lengths", "_maps", "_rest", "_table", "_total", "_vocab", "b", "k1")

    def __init__(
        self, weights: Sequence[Mapping[str, float]], *, lengths: Sequence[float] | None = None,
        k1: float = K1, b: float = B,
    ) -> None:
        self.k1, self.b = k1, b
        n = len(weights)
        if lengths is not None and len(lengths) != n:
            raise InvalidInput(f"{n} documents but {len(lengths)} lengths")
        terms: list[str] = []
        given: list[float] = []
        if not all(type(doc) is dict for doc in weights):  # dicts are Mappings: no ABC check each
            if any(isinstance(doc, str) or not isinstance(doc, Mapping) for doc in weights):
                raise InvalidInput("weights must be mappings of term to weight")
        for doc in weights:
            terms.extend(doc)
            given.extend(doc.values())
        if not all(type(w) is float for w in given):
            given = [_checked_weight(t, w) for t, w in zip(terms, given, strict=True)]
        sizes = np.fromiter(map(len, weights), dtype=np.intp, count=n)
        values = np.asarray(given, dtype=np.float64)
        if not np.isfinite(values).all():
            bad = int(np.flatnonzero(~np.isfinite(values))[0])
            raise InvalidInput(f"weight of {terms[bad]!r} must be a finite number, got {given[bad]!r}")
        # Each document's weights in its own order (row i, slot s), summed one slot at a time
        # as `sum(map.values())` sums them: the same floats. Non-positive weights count for
        # nothing, as `add_weighted` drops them (x + 0.0 == x).
        width = int(sizes.max()) if n else 0
        rows = np.repeat(np.arange(n, dtype=np.intp), sizes)
        slots = np.arange(len(values), dtype=np.intp) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        in_order = np.zeros((n, width), dtype=np.float64)
        rest: npt.NDArray[np.float64] | None = None
        if lengths is not None:
            in_order[rows, slots] = values
            summed = np.zeros(n, dtype=np.float64)
            for slot in range(width):
                summed += in_order[:, slot]
            rest = np.asarray(lengths, dtype=np.float64) - summed
        positive = np.where(values > 0, values, 0.0)
        in_order[rows, slots] = positive
        doc_len = np.zeros(n, dtype=np.float64)
        for slot in range(width):
            doc_len += in_order[:, slot]
        if rest is not None:
            doc_len += np.where(rest > 0, rest, 0.0)
        vocab = {term: t for t, term in enumerate(dict.fromkeys(terms))}
        table = np.zeros((len(vocab), n), dtype=np.float64)  # a term's weights in one row
        table[np.fromiter(map(vocab.__getitem__, terms), dtype=np.intp, count=len(terms)), rows] = positive
        self._vocab, self._table, self._lengths, self._rest = vocab, table, doc_len, rest
        self._maps = weights
        self._holders: dict[int, npt.NDArray[np.intp]] = {}
        total = 0.0
        for length in doc_len.tolist():  # in document order, as `BM25Index` adds them
            total += length
        self._total = total

    def _posting_arrays(self, term: str) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        """The documents holding the term (a positive weight) and its weights there."""
        t = self._vocab.get(term)
        if t is None:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float64)
        holders = self._holders.get(t)
        if holders is None:
            holders = self._holders[t] = np.flatnonzero(self._table[t] > 0)
        return holders, self._table[t, holders]

    def to_index(self) -> BM25Index:
        """The same documents in a `BM25Index` (ids `str(i)`; with `lengths`, the rest of each
        document's length as the weight of `REST`), for tools that read its postings."""
        index = BM25Index(k1=self.k1, b=self.b)
        for i, doc in enumerate(self._maps):
            if self._rest is None:
                index.add_weighted(str(i), doc)
            else:
                index.add_weighted(str(i), {**doc, REST: float(self._rest[i])})
        return index


def _checked_weight(term: str, weight: object) -> float:
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight):
        raise InvalidInput(f"weight of {term!r} must be a finite number, got {weight!r}")
    return float(weight)
