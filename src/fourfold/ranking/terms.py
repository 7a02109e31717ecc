"""BM25 over a scope's records that lend each other words, built with array operations.

`ScopeIndex` indexes each memory with its own words and its neighbours' at reduced weight.
Building a map of weighted terms for every record and then the postings of every term, a
Python step per entry, cost more than the rest of a scope's index together (most of a
customer's first recall). Here every occurrence of a word is lent to the neighbours of its
record in a few numpy steps, and the weights of each (term, record) pair are summed in the
order a record's term map sums them, so the weights, and the scores, are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from fourfold.ranking.bm25 import K1, B, PositionalBM25

__all__ = [
    "ContextTerms", "RunContext", "Step", "neighbour_lists", "run_neighbour_arrays",
]

Ints = npt.NDArray[np.intp]
#: Up to this many (term, record) cells the weights are summed in a dense table (32 MB).
_DENSE_PAIRS = 1 << 22
Floats = npt.NDArray[np.float64]
#: One step of context along a run of consecutive records: the records of the first slice take
#: the words and vectors of those of the second (as many, shifted by a distance) at the share.
Step = tuple[slice, slice, float]
#: Past this many steps (many short runs) the neighbour arrays take fewer numpy calls.
_STEP_LIMIT = 16


class RunContext:
    """Which records lend each other context: `runs` (members in order, positions among `n`)
    and each run's shares at distance 1, 2, ... (cut at the first share <= 0).

    Two equal forms: `arrays`, each record's neighbours (`run_neighbour_arrays`, made on first
    use), and, when every run is of consecutive records and they are few (a customer's notes,
    one conversation), `steps`: a slice of records per run, distance and side, in the order a
    record adds its neighbours (nearest first, the one before first). A sum made step by step
    adds the same terms in the same order as one made neighbour by neighbour, with a few numpy
    calls in all instead of an index array per neighbour slot.
    """

    __slots__ = ("_arrays", "n", "runs", "shares", "steps")

    def __init__(self, runs: Sequence[Sequence[int]], shares: Sequence[Sequence[float]], n: int) -> None:
        self.runs, self.shares, self.n = runs, shares, n
        self._arrays: tuple[Ints, Floats, Ints] | None = None
        self.steps = _run_steps(runs, shares)

    @property
    def arrays(self) -> tuple[Ints, Floats, Ints]:
        """Row r's k-th neighbour and its share at [r, k] (a missing one: row 0, share 0), and how
        many each row has (`run_neighbour_arrays`)."""
        if self._arrays is None:
            self._arrays = run_neighbour_arrays(self.runs, self.shares, self.n)
        return self._arrays


def _run_steps(runs: Sequence[Sequence[int]], run_shares: Sequence[Sequence[float]]) -> list[Step] | None:
    """`RunContext.steps`, or None when a run is not of consecutive records or there would be
    more than `_STEP_LIMIT` steps."""
    steps: list[Step] = []
    for members, shares in zip(runs, run_shares, strict=True):
        reach = next((d for d, share in enumerate(shares) if share <= 0), len(shares))
        size = len(members)
        if size < 2 or not reach:
            continue
        first = members[0]
        if members[-1] - first != size - 1:  # members ascend: consecutive exactly then
            return None
        for d in range(1, min(reach, size - 1) + 1):
            share = float(shares[d - 1])
            steps.append((slice(first + d, first + size), slice(first, first + size - d), share))  # the one before
            steps.append((slice(first, first + size - d), slice(first + d, first + size), share))  # the one after
        if len(steps) > _STEP_LIMIT:
            return None
    return steps


def run_neighbour_arrays(runs: Sequence[Sequence[int]], run_shares: Sequence[Sequence[float]], n: int) -> tuple[Ints, Floats, Ints]:
    """`RunContext.arrays` of records that lend each other context along runs, in array steps.

    `runs` are the runs' members in order (positions among `n` records, each in at most one
    run), `run_shares` each run's share at distance 1, 2, ... (cut at the first share <= 0).
    Record i's neighbours are those of its run at distance 1, 2, ..., the one before it
    first, that exist: the lists `fourfold.longterm.retrieval._neighbours` makes, as arrays.
    """
    counts = np.zeros(n, dtype=np.intp)
    parts: list[tuple[Ints, Ints, Floats]] = []  # per run: its members, their neighbours, the shares
    for members, shares in zip(runs, run_shares, strict=True):
        reach = next((d for d, share in enumerate(shares) if share <= 0), len(shares))
        if not reach or len(members) < 2:
            continue
        offsets = np.repeat(np.arange(1, reach + 1), 2) * np.tile(np.array([-1, 1]), reach)  # -1, +1, -2, +2, ...
        candidates = np.arange(len(members))[:, None] + offsets[None, :]
        exists = (candidates >= 0) & (candidates < len(members))
        order = np.argsort(~exists, axis=1, kind="stable")  # those that exist first, in order
        row_counts = exists.sum(axis=1)
        width = int(row_counts.max())
        kept = np.take_along_axis(candidates, order, axis=1)[:, :width]
        near_shares = np.repeat(np.array(shares[:reach], dtype=np.float64), 2)[order][:, :width]
        filled = np.arange(width)[None, :] < row_counts[:, None]
        at_members = np.asarray(members, dtype=np.intp)
        parts.append((at_members, np.where(filled, at_members[np.where(filled, kept, 0)], 0),
                      np.where(filled, near_shares, 0.0)))
        counts[at_members] = row_counts
    width = max((p[1].shape[1] for p in parts), default=0)
    at = np.zeros((n, width), dtype=np.intp)
    out_shares = np.zeros((n, width), dtype=np.float64)
    for members_at, near, shares_at in parts:
        at[members_at, : near.shape[1]] = near
        out_shares[members_at, : near.shape[1]] = shares_at
    return at, out_shares, counts


def neighbour_lists(at: Ints, shares: Floats, counts: Ints) -> list[list[tuple[int, float]]]:
    """Each row's neighbours as (position, share), nearest first, from `RunContext.arrays`."""
    return [list(zip(row[:c], share[:c], strict=True)) for row, share, c in
            zip(at.tolist(), shares.tolist(), counts.tolist(), strict=True)]


class ContextTerms(PositionalBM25):
    """Okapi BM25 where record i holds its own tokens at weight 1 and each neighbour's at its share.

    A term's weight in a record is summed exactly as a map of the record's term weights sums
    it (its own occurrences, then each neighbour's, nearest first, one share per occurrence),
    so `scores` equals `BM25Index.scores` over those maps. A record's length is its own token
    count plus each neighbour's count times its share: the sum of its weights, up to rounding.
    The index never changes; a scope that changes gets a new one.
    """

    __slots__ = ("_bounds", "_cache", "_holders", "_lengths", "_occurrences", "_sizes", "_total", "_vocab", "_weights",
                 "b", "k1")
    _vocab: dict[str, int]
    _sizes: Ints
    _occurrences: npt.NDArray[np.signedinteger[Any]]

    def __init__(
        self, token_lists: Sequence[Sequence[str]], *, arrays: tuple[Ints, Floats, Ints] | None = None,
        steps: Sequence[Step] | None = None, nearer_weighs_more: bool = True, k1: float = K1, b: float = B,
        dense_pairs: int = _DENSE_PAIRS, after: ContextTerms | None = None,
    ) -> None:
        """The records' neighbours in one of `RunContext`'s two equal forms: its `arrays` or
        its `steps`. `nearer_weighs_more` (with the arrays): whether shares shrink with distance
        (`Weights.context_decay` <= 1); up to `dense_pairs` (term, record) cells the weights are
        summed in a table, past it through a sort. `after`: a table of the records before
        these (the neighbours then cover both), whose term ids are taken as they are: the same
        table as one made of all their token lists, without reading the earlier words again."""
        if (arrays is None) == (steps is None):
            raise TypeError("ContextTerms takes the neighbours as arrays or as steps")
        self.k1, self.b = k1, b
        vocab: dict[str, int] = {} if after is None else dict(after._vocab)
        # A token's id: its vocabulary entry, made when first seen (setdefault reads len first).
        # The earlier records' entries were made first, so extending their vocabulary in order
        # gives every term the id a table of all the records would give it.
        term_ids = [vocab.setdefault(token, len(vocab)) for tokens in token_lists for token in tokens]
        sizes = np.fromiter(map(len, token_lists), dtype=np.intp, count=len(token_lists))
        terms = np.asarray(term_ids, dtype=np.intp)  # one entry per occurrence
        if after is not None:
            sizes = np.concatenate([after._sizes.astype(np.intp, copy=False), sizes])
            terms = np.concatenate([after._occurrences.astype(np.intp, copy=False), terms])
        n = len(sizes)
        docs = np.repeat(np.arange(n, dtype=np.intp), sizes)
        stride = max(n, 1)
        if steps is not None:
            keys, values, lengths = _lent_by_steps(terms * stride + docs, sizes, steps)
        else:
            assert arrays is not None
            at, shares, counts = arrays
            keys, values, lengths = _lent_by_slots(terms, docs, sizes, at, shares, counts, stride, nearer_weighs_more)
        if len(vocab) * stride <= dense_pairs:  # a (term, record) table small enough to hold whole
            # Summed in the order given, one addition at a time (as np.add.at adds, without its
            # per-item cost).
            table = np.bincount(keys, weights=values, minlength=len(vocab) * stride).astype(np.float64, copy=False)
            pairs = np.nonzero(table != 0)[0]  # every pair held; flatnonzero compares floats again
            weights = table[pairs]
        else:
            pairs, where = np.unique(keys, return_inverse=True)
            weights = np.zeros(len(pairs), dtype=np.float64)
            np.add.at(weights, where, values)
        self._vocab = vocab
        # The records' tokens as term ids (4 bytes an occurrence, not a str object each): `token_lists`.
        self._occurrences, self._sizes = terms.astype(np.int32 if len(vocab) < 1 << 31 else np.intp), sizes
        self._holders = (pairs % stride).astype(np.intp)
        self._weights = weights
        self._bounds = np.searchsorted(pairs // stride, np.arange(len(vocab) + 1))
        self._lengths = lengths
        total = 0.0
        for length in lengths.tolist():
            total += length
        self._total = total
        self._cache: dict[str, dict[str, float]] = {}

    def token_lists(self) -> list[list[str]]:
        """The token lists this index was made of, each record's in its order."""
        words = list(self._vocab)  # a term's id is its place in the vocabulary
        flat = [words[t] for t in self._occurrences.tolist()]
        ends = np.cumsum(self._sizes).tolist()
        return [flat[start:end] for start, end in zip([0, *ends][: len(ends)], ends, strict=True)]

    def _posting_arrays(self, term: str) -> tuple[Ints, Floats]:
        """The records holding the term (themselves or through a neighbour) and its weights there."""
        t = self._vocab.get(term)
        if t is None:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float64)
        start, end = int(self._bounds[t]), int(self._bounds[t + 1])
        return self._holders[start:end], self._weights[start:end]

    def posting(self, term: str) -> dict[str, float]:
        """The term's weight in every record that holds it, by str(position)."""
        cached = self._cache.get(term)
        if cached is None:
            holders, weights = self._posting_arrays(term)
            cached = self._cache[term] = dict(zip(map(str, holders.tolist()), weights.tolist(), strict=True))
        return cached

    def _df(self, term: str) -> int:
        t = self._vocab.get(term)
        return 0 if t is None else int(self._bounds[t + 1] - self._bounds[t])


def _lent_by_slots(
    terms: Ints, docs: Ints, sizes: Ints, at: Ints, shares: Floats, counts: Ints, stride: int, nearer_weighs_more: bool,
) -> tuple[Ints, Floats, Floats]:
    """The (term, record) keys and weights to sum, own occurrences first, then every occurrence
    lent to each neighbour of its record at its share, nearest first; and the records' lengths."""
    width = at.shape[1]
    lent = np.arange(width)[None, :] < counts[docs][:, None]
    lent_terms = np.broadcast_to(terms[:, None], lent.shape)[lent]
    lent_to = at[docs][lent]
    lent_shares = shares[docs][lent]
    # A record adds its own occurrences first, then its neighbours' nearest first: sorting by
    # share sorts by distance (equal shares are equal terms, whose order cannot matter).
    # The few distinct shares are ranked, so the stable sort is a radix sort of small ints.
    distinct = np.unique(lent_shares)
    if nearer_weighs_more:
        distinct = distinct[::-1]
    rank = np.searchsorted(-distinct if nearer_weighs_more else distinct,
                           -lent_shares if nearer_weighs_more else lent_shares)
    order = np.argsort(rank.astype(np.int16 if len(distinct) < 1 << 15 else np.int64), kind="stable")
    keys = np.concatenate([terms * stride + docs, (lent_terms * stride + lent_to)[order]])
    values = np.concatenate([np.ones(len(terms)), lent_shares[order]])
    lengths = sizes.astype(np.float64)
    for slot in range(width):  # shares are 0 past a row's neighbours
        lengths += shares[:, slot] * sizes[at[:, slot]]
    return keys, values, lengths


def _lent_by_steps(own: Ints, sizes: Ints, steps: Sequence[Step]) -> tuple[Ints, Floats, Floats]:
    """What `_lent_by_slots` gives, from `RunContext.steps`: `own` holds each occurrence's key
    (term * stride + record) in record order, so a step's lent keys are the keys of its source
    records' occurrences (one slice of `own`) shifted by the distance; the steps' order is each
    record's order of neighbours, so every (term, record) sum adds the same weights in turn."""
    starts = np.zeros(len(sizes) + 1, dtype=np.intp)
    np.cumsum(sizes, out=starts[1:])
    bounds = starts.tolist()
    keys, values = [own], [np.ones(len(own))]
    lengths = sizes.astype(np.float64)
    for to, source, share in steps:
        lent = own[bounds[source.start] : bounds[source.stop]]
        keys.append(lent + (to.start - source.start))
        values.append(np.full(len(lent), share))
        lengths[to] += share * sizes[source]
    return np.concatenate(keys), np.concatenate(values), lengths
