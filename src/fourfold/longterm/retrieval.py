"""Hybrid ranking over one scope: dense cosine and BM25 evidence, with context and filters.

The evidence is ranked and scored by the ranker every kind of memory shares
(`fourfold.ranking`): each result carries a relevance in [0, 1] that means the same in every
query, scope and store size.

A memory is rarely self-contained: "Yes, every Sunday!" answers the message before it. So
each memory is indexed together with its neighbours, the memories written just before and
after it in the same thread, whose words and vectors count at reduced weight (see
`ScopeIndex`). A memory's own date (metadata `occurred_at` or `date`, see
`fourfold.text.dates`) adds its month, year and weekday as words, so "what did she do in May
2023?" can match by date. A query that names a memory's `speaker` lifts that memory.

On the LoCoMo dev split (categories 1-4, R@10) neighbours took recall from 69.5 to 79.8, the
speaker lift to 81.0, dates 1.5 points before that; see benchmarks/README.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from fourfold.embeddings.base import Vectors
from fourfold.ranking import MEMORIES, Fusion, Parts, evidence_of, lexical_share, rank, typicality
from fourfold.ranking.bm25 import BM25Index, BM25Table, CollectionStats
from fourfold.ranking.terms import (
    ContextTerms,
    Ints,
    RunContext,
    Step,
    neighbour_lists,
)
from fourfold.stores.vector import DOC_KIND, VectorRecord, record_tokens
from fourfold.text import memory_date, time_words, tokenize

__all__ = ["THREAD_KEYS", "RecordFilter", "ScopeIndex", "Weights"]

Floats = npt.NDArray[np.float64]

#: Metadata keys naming the conversation or thread a memory belongs to, read in this order.
THREAD_KEYS = ("thread", "session")

#: The ranker's own defaults, which `lexical`, `speaker` and `typical` take: one set of tuned values.
_RANKER = Fusion()


@dataclass(frozen=True, slots=True)
class Weights:
    """How much each signal counts.

    `lexical` weighs the lexical share (BM25 as a share of the query's best possible score)
    against the cosine; `speaker` is added to memories whose `speaker` metadata the query names.
    A memory's neighbour at distance 1 lends its words (BM25) and its vector (dense) at weight
    `context`, each further one `context_decay` times less, up to `context_window` on each side.
    Memories without thread metadata are neighbours when written less than `context_gap`
    seconds apart, at weight `context_unthreaded` instead: they are more often separate notes
    (a customer's plan, language and last order, written after one call) than turns that answer
    each other. `dates` adds the words of a memory's own date. `typical` weighs a memory's
    typicality in its scope (`fourfold.ranking.typicality`, over the context-blended vectors),
    which is taken off its evidence.

    `typical` was chosen by cross-validation on both dev sets (benchmarks/recall_cv.py, step 1b).
    `context_unthreaded` was chosen on the paraphrase set (benchmarks/results/paraphrase.md:
    all on-topic hit@3 0.920 at 0.4, 0.931 at 0.1, 0.925 at 0); LoCoMo's turns have threads.
    """

    lexical: float = _RANKER.lexical
    speaker: float = _RANKER.boost
    context: float = 0.4
    context_unthreaded: float = 0.1
    context_decay: float = 0.7
    context_window: int = 4
    context_gap: float = 3600.0
    dates: bool = True
    typical: float = _RANKER.typical

    @property
    def fusion(self) -> Fusion:
        return Fusion(lexical=self.lexical, boost=self.speaker, typical=self.typical)


@dataclass(frozen=True, slots=True)
class _Signals:
    """The ranker's inputs for a scope's candidates (positions into `ScopeIndex.records`)."""

    candidates: npt.NDArray[np.int64]
    dense: Floats
    lexical: Floats
    named: Floats | None
    typical: Floats
    query_tokens: list[str]
    best: float  # the query's best possible BM25 score


_NO_VECTOR: Vectors = np.zeros(0, dtype=np.float32)


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """Which records a search keeps (`test`). Filters with the same `key` keep the same records
    of any one list of records, so an index remembers the positions they kept for as long as
    it holds that list (`ScopeIndex._kept`). None: not remembered (a `where`, an `as_of`)."""

    test: Callable[[VectorRecord], bool]
    key: object = None

    def __call__(self, record: VectorRecord) -> bool:
        return self.test(record)


#: Filters whose kept positions one index remembers (kinds x superseded: a handful in practice).
_KEPT_PER_INDEX = 8


class ScopeIndex:
    """Everything recall needs for one scope, built from the store's records.

    Records are kept in write order (`created_at`, then `seq`). Neighbours are found along that
    order within one thread: memories sharing a `THREAD_KEYS` value; memories without one form
    runs broken by gaps longer than `Weights.context_gap`; document chunks (which overlap
    already) have no neighbours. Each memory is indexed with its neighbours' words and vectors
    at reduced weight, so the index is rebuilt (exactly, statistics included) when its scope
    changes, never patched: `with_added` rebuilds it from its own records plus new ones, which
    gives exactly what a scan of the store would.
    """

    #: The records list `_kept` last read, and the positions it kept there per filter key
    #: (the class's value until a first read: no list, and a dict nothing writes to).
    _kept_by_key: tuple[list[VectorRecord] | None, dict[object, npt.NDArray[np.int64]]] = (None, {})

    def __init__(
        self, records: Sequence[VectorRecord], dimension: int, *, weights: Weights | None = None
    ) -> None:
        ordered = sorted(records, key=_order)
        own: Vectors = (
            np.stack([r.embedding for r in ordered]).astype(np.float32, copy=False)
            if ordered
            else np.zeros((0, dimension), dtype=np.float32)
        )
        self._build([replace(r, embedding=_NO_VECTOR) for r in ordered], own, dimension, weights or Weights())

    @classmethod
    def of_scan(
        cls, records: Sequence[VectorRecord], matrix: Vectors, dimension: int, *, weights: Weights | None = None,
        tokens: Sequence[list[str]] | None = None,
    ) -> ScopeIndex:
        """The index of a scope read by `VectorStore.scan_tokens` (or `scan_matrix`): its records in write order
        without their vectors, and those vectors as one matrix (row i for record i). The same
        index `ScopeIndex(records with vectors, ...)` builds, without a vector per record.
        `tokens`: the records' `record_tokens`, as `VectorStore.scan_tokens` reads them."""
        if len(matrix) != len(records) or (tokens is not None and len(tokens) != len(records)):
            raise ValueError(f"{len(records)} records but {len(matrix)} vectors or other token lists")
        own: Vectors = matrix if len(records) else np.zeros((0, dimension), dtype=np.float32)
        out = cls.__new__(cls)
        out._build(list(records), own.astype(np.float32, copy=False), dimension, weights or Weights(), tokens)
        return out

    def _build(
        self, records: list[VectorRecord], own: Vectors, dimension: int, weights: Weights,
        tokens: Sequence[list[str]] | None = None,
    ) -> None:
        """Index records in write order (without vectors) whose own vectors are `own`'s rows
        (and whose `record_tokens` are `tokens`, when given)."""
        self.weights = weights
        # Search needs only the blended matrix; the records' own vectors stay as one matrix
        # (not ~1.5 KB per record object) so `with_added` can rebuild without the store.
        self._own = own
        self._dimension = dimension
        self.records = records
        self._ids = {r.id for r in records}
        # Neighbours as runs (slices of them, or arrays); their lists (`_neighbours`) are made
        # only when asked for.
        plan = self._plan = _neighbour_plan(records, weights)
        self._neighbour_lists: list[list[tuple[int, float]]] | None = None
        self.matrix = _blend_vectors(own, plan)
        self._lexical: ContextTerms | BM25Table = _context_terms(self._tokens_of(records, tokens), plan, weights)
        self._token_list_cache: list[list[str]] | None = None  # kept by the term table
        self._bm25: BM25Index | None = None
        self._typical: Floats | None = None
        self._by_speaker: dict[str, list[int]] = {}
        for i, record in enumerate(records):
            if "speaker" in record.metadata:
                self._index_speaker(i, record)

    @classmethod
    def of_features(
        cls, records: Sequence[VectorRecord], matrix: Vectors, counts: Sequence[Mapping[str, float]], *,
        weights: Weights | None = None, scope_total: Vectors | None = None, scope_size: int = 0,
        lengths: Sequence[float] | None = None,
    ) -> ScopeIndex:
        """An index of records whose `features` were computed in their whole scope (a large
        scope's candidates): searched with the scope's `stats`, they score as in its index.

        `counts` are the records' term weights; with `lengths`, only some of them (the query's
        words) and `lengths[i]` record i's whole length (the sum of all its weights).
        Their typicality needs the whole scope's `scope_total` (the sum of its records'
        blended unit vectors) and `scope_size`; without them it is 0 (not taken off).

        Built in array steps (`BM25Table`), for the few hundred candidates of one query."""
        out = cls.__new__(cls)
        out.weights = weights or Weights()
        out._dimension = matrix.shape[1]
        # Records read without their vectors (as a store's candidates are) are kept as they are.
        out.records = [r if not len(r.embedding) else replace(r, embedding=_NO_VECTOR) for r in records]
        out._ids = {r.id for r in records}
        out._own = matrix
        out._neighbours = [[] for _ in records]
        out.matrix = matrix
        out._typical = (
            typicality(matrix, total=scope_total, size=scope_size)
            if scope_total is not None and scope_size >= 2
            else np.zeros(len(records), dtype=np.float64)
        )
        out._token_list_cache = []
        out._bm25 = None
        out._lexical = BM25Table(counts, lengths=lengths)
        out._by_speaker = {}
        for i, record in enumerate(out.records):
            out._index_speaker(i, record)
        return out

    @property
    def _neighbours(self) -> list[list[tuple[int, float]]]:
        """Each record's neighbours as (position, share), nearest first (made from `_plan`)."""
        if self._neighbour_lists is None:
            self._neighbour_lists = neighbour_lists(*self._plan.arrays)
        return self._neighbour_lists

    @_neighbours.setter
    def _neighbours(self, lists: list[list[tuple[int, float]]]) -> None:
        self._neighbour_lists = lists

    @property
    def _token_lists(self) -> list[list[str]]:
        """Each record's words, its date's included (`_tokens_of`), as lists when asked for (a
        write's `with_added`, a record's `features`): the term table keeps them as term ids, in
        a twentieth of the memory, which a customer's first read would otherwise fill afresh."""
        if self._token_list_cache is None:
            assert isinstance(self._lexical, ContextTerms)
            self._token_list_cache = self._lexical.token_lists()
        return self._token_list_cache

    @property
    def bm25(self) -> BM25Index:
        """The records' weighted terms as a complete `BM25Index` (built on first use, for tools
        that read every term): its scores are the ranking's, up to rounding of lengths."""
        if self._bm25 is None:
            if isinstance(self._lexical, BM25Table):
                self._bm25 = self._lexical.to_index()
                return self._bm25
            bm25 = BM25Index()
            for i in range(len(self.records)):
                bm25.add_weighted(str(i), self._counts(i))
            self._bm25 = bm25
        return self._bm25

    @property
    def typical(self) -> Floats:
        """Each record's typicality in the scope (`fourfold.ranking.typicality`), computed on the
        first search rather than on every write (two threads may both compute it: same result)."""
        if self._typical is None:
            self._typical = typicality(self.matrix)
        return self._typical

    def total(self) -> Vectors:
        """The sum of the scope's blended unit vectors (what `of_features` needs for typicality)."""
        out: Vectors = self.matrix.astype(np.float64).sum(axis=0)
        return out

    def features(self, i: int) -> tuple[Vectors, dict[str, float]]:
        """Record i's vector with its neighbours' context and its term weights, as ranked."""
        return self.matrix[i], self._counts(i)

    def _counts(self, i: int) -> dict[str, float]:
        """Record i's term weights: its own words, and its neighbours' at their shares."""
        counts: dict[str, float] = {}
        for token in self._token_lists[i]:
            counts[token] = counts.get(token, 0.0) + 1.0
        for j, share in self._neighbours[i]:
            for token in self._token_lists[j]:
                counts[token] = counts.get(token, 0.0) + share
        return counts

    def _index_speaker(self, i: int, record: VectorRecord) -> None:
        speaker = record.metadata.get("speaker")
        if not speaker:
            return
        for token in set(tokenize(str(speaker))):
            self._by_speaker.setdefault(token, []).append(i)

    def with_added(self, added: Sequence[VectorRecord]) -> ScopeIndex:
        """This index with `added` too (records it holds already are skipped), exactly as a
        rebuild would give.

        New memories are usually the newest of their scope: then only they, and the records
        whose neighbours they become, are indexed (a new index object; this one is unchanged,
        as recalls may be reading it). Otherwise the index is rebuilt from its own records.
        """
        new = sorted({r.id: r for r in added if r.id not in self._ids}.values(), key=_order)
        if not new:
            return self
        if self.records and _order(new[0]) <= _order(self.records[-1]):
            records = [replace(r, embedding=self._own[i]) for i, r in enumerate(self.records)]
            return ScopeIndex([*records, *new], self._dimension, weights=self.weights)
        out = ScopeIndex.__new__(ScopeIndex)
        out.weights, out._dimension = self.weights, self._dimension
        n_old = len(self.records)
        out.records = [*self.records, *(replace(r, embedding=_NO_VECTOR) for r in new)]
        out._ids = self._ids | {r.id for r in new}
        out._own = np.concatenate([self._own, np.stack([r.embedding for r in new]).astype(np.float32, copy=False)])
        out._plan, out._neighbour_lists = _neighbour_plan(out.records, out.weights), None
        out.matrix = np.concatenate([self.matrix, np.empty((len(new), self.matrix.shape[1]), dtype=np.float32)])
        steps = out._plan.steps
        if steps is not None:  # runs of consecutive records: the rows changed are read off the steps
            changed = _lent_new(steps, n_old, len(out.records))
            out.matrix[changed] = _blend_steps(out._own, steps, changed)
        else:
            changed = _new_neighbours(self._plan.arrays, out._plan.arrays, n_old)
            at, shares, _ = out._plan.arrays
            out.matrix[changed] = _blend_rows(out._own, changed, at[changed], shares[changed])
        out._typical = None  # every member's moves with the scope's sum: recomputed on first search
        assert isinstance(self._lexical, ContextTerms)  # a scope's index (a large scope's candidates are never extended)
        out._lexical = _context_terms(out._tokens_of(new), out._plan, out.weights, after=self._lexical)
        out._token_list_cache = None
        out._bm25 = None
        out._by_speaker = {token: list(rows) for token, rows in self._by_speaker.items()}
        for i in range(n_old, len(out.records)):
            out._index_speaker(i, out.records[i])
        return out

    def _tokens_of(self, records: Sequence[VectorRecord], own: Sequence[list[str]] | None = None) -> list[list[str]]:
        """Each record's words (text and enriched facts: `own` when read with the records, left
        as they are), and its own date's when it has one."""
        token_lists = record_tokens(records) if own is None else list(own)
        if self.weights.dates:
            for i, record in enumerate(records):
                when = memory_date(record.metadata)
                if when is not None:
                    token_lists[i] = token_lists[i] + tokenize(" ".join(time_words(when)))
        return token_lists

    def __len__(self) -> int:
        return len(self.records)

    def search(
        self,
        query_vector: Vectors,
        query_text: str,
        *,
        k: int,
        keep: Callable[[VectorRecord], bool],
        weights: Weights | None = None,
        stats: CollectionStats | None = None,
        null: float = 0.0,
    ) -> list[tuple[VectorRecord, float]]:
        """The k best records that pass `keep`, best first, with their relevance in [0, 1].

        `weights` may change the fusion (lexical, speaker); the context and date fields take
        effect when the index is built. An index of candidates from a larger scope scores them
        with that scope's BM25 `stats`, so they score as in an index of the whole scope. `null`
        is the query's background similarity (`fourfold.ranking.Background.null`).
        """
        hits = self.explain(query_vector, query_text, k=k, keep=keep, weights=weights, stats=stats, null=null)
        return [(record, parts.relevance) for record, parts in hits]

    def explain(  # search's parameters
        self, query_vector: Vectors, query_text: str, *, k: int, keep: Callable[[VectorRecord], bool],
        weights: Weights | None = None, stats: CollectionStats | None = None, null: float = 0.0,
    ) -> list[tuple[VectorRecord, Parts]]:
        """What `search` returns, each result with the parts of its relevance (`Parts`).

        An index of a large scope's candidates (`of_features`) holds only the blended vectors,
        so there `own` equals `dense` and the context part reads 0.
        """
        w = weights or self.weights
        signals = self._signals(query_vector, query_text, keep=keep, weights=w, stats=stats)
        if signals is None:
            return []
        fusion = w.fusion
        ranked = rank(
            signals.dense, signals.lexical, k=k, fusion=fusion, calibration=MEMORIES, boost=signals.named,
            newer=signals.candidates.astype(np.float64), null=null, typical=signals.typical,
        )
        evidence = evidence_of(signals.dense, signals.lexical, fusion, boost=signals.named, typical=signals.typical)
        out: list[tuple[VectorRecord, Parts]] = []
        for j, score in ranked:
            i = int(signals.candidates[j])
            boost = float(signals.named[j]) if signals.named is not None else 0.0
            dense, lexical = float(signals.dense[j]), float(signals.lexical[j])
            typical = float(signals.typical[j])
            own = float(self._own[i] @ query_vector) if i < len(self._own) else dense
            parts = Parts(
                dense=dense, own=own, lexical=lexical, date=self._date_share(i, signals, stats),
                boost=boost, null=null, evidence=float(evidence[j]), relevance=score, typical=typical,
            )
            out.append((self.records[i], parts))
        return out

    def _date_share(self, i: int, signals: _Signals, stats: CollectionStats | None) -> float:
        """The share of record i's lexical score that its own date's words earned."""
        when = memory_date(self.records[i].metadata) if self.weights.dates else None
        if when is None or signals.best <= 0:
            return 0.0
        words = set(tokenize(" ".join(time_words(when))))
        matched = [t for t in signals.query_tokens if t in words]
        if not matched:
            return 0.0
        return min(1.0, float(self._lexical.score_array(matched, stats=stats)[i]) / signals.best)

    def _kept(self, keep: Callable[[VectorRecord], bool]) -> npt.NDArray[np.int64]:
        """The positions of the records `keep` keeps, remembered per `RecordFilter.key`
        (testing every record on every read costs time in proportion to the scope)."""
        key = keep.key if isinstance(keep, RecordFilter) else None
        records = self.records
        # Remembered with the list they were read from: a copy of the index given other
        # records (`copy.copy` with new metadata, as a superseding write makes) starts afresh.
        of, remembered = self._kept_by_key
        if of is not records:
            remembered = {}
            self._kept_by_key = (records, remembered)
        if key is not None and (hit := remembered.get(key)) is not None:
            return hit
        kept = np.fromiter((i for i, r in enumerate(records) if keep(r)), dtype=np.int64)
        kept.flags.writeable = False
        if key is not None and len(remembered) < _KEPT_PER_INDEX:
            remembered[key] = kept
        return kept

    def _signals(
        self, query_vector: Vectors, query_text: str, *, keep: Callable[[VectorRecord], bool],
        weights: Weights, stats: CollectionStats | None,
    ) -> _Signals | None:
        candidates = self._kept(keep)
        if candidates.size == 0:
            return None
        query_tokens = tokenize(query_text)
        dense = (self.matrix[candidates] @ query_vector).astype(np.float64)
        lexical = self._lexical.score_array(query_tokens, stats=stats)[candidates]
        named: Floats | None = None
        if weights.speaker:
            named = np.zeros(len(self.records), dtype=np.float64)
            for token in set(query_tokens):
                named[self._by_speaker.get(token, [])] = 1.0
            named = named[candidates]
        best = self._lexical.best_possible(query_tokens, stats=stats)
        typical = self.typical[candidates] if weights.typical else np.zeros(candidates.size, dtype=np.float64)
        return _Signals(candidates, dense, lexical_share(lexical, best), named, typical, query_tokens, best)


def _thread(record: VectorRecord) -> tuple[str, ...] | None:
    """The thread a memory belongs to; None when its metadata names none."""
    for key in THREAD_KEYS:
        if key in record.metadata:
            return ("thread", key, json.dumps(record.metadata[key], sort_keys=True))
    return None


def _context_terms(
    token_lists: list[list[str]], plan: RunContext, weights: Weights, *, after: ContextTerms | None = None,
) -> ContextTerms:
    """The records' term weights with their neighbours' context, in array steps (not a term
    map per record): by slices of runs when the plan has them. `after`: the table of the
    records before these (`ContextTerms`)."""
    if plan.steps is not None:
        return ContextTerms(token_lists, steps=plan.steps, after=after)
    return ContextTerms(token_lists, arrays=plan.arrays, nearer_weighs_more=weights.context_decay <= 1, after=after)


def _lent_new(steps: Sequence[Step], n_old: int, n: int) -> list[int]:
    """The rows of the first `n_old` that a step lends a later row to (records appended after
    them became their neighbours), and every row after them."""
    changed: set[int] = set()
    for to, source, _ in steps:
        shift = source.start - to.start  # the neighbour of row r is row r + shift
        changed.update(range(max(to.start, n_old - shift), min(to.stop, n_old)))
    return [*sorted(changed), *range(n_old, n)]


def _new_neighbours(old: tuple[Ints, Floats, Ints], new: tuple[Ints, Floats, Ints], n_old: int) -> list[int]:
    """The rows whose neighbours differ between two `RunContext.arrays` (the first `n_old`
    rows held in both), and every row after them (new in `new`)."""
    width = max(old[0].shape[1], new[0].shape[1])

    def padded(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return np.pad(a[:n_old], ((0, 0), (0, width - a.shape[1])))  # a missing neighbour: row 0, share 0

    differ = ((old[2][:n_old] != new[2][:n_old]) | (padded(old[0]) != padded(new[0])).any(axis=1)
              | (padded(old[1]) != padded(new[1])).any(axis=1))
    return [*np.nonzero(differ)[0].tolist(), *range(n_old, len(new[2]))]


def _neighbour_plan(records: Sequence[VectorRecord], weights: Weights) -> RunContext:
    """Each record's neighbours in its thread or run, nearest first (`RunContext`)."""
    runs, shares = _runs(records, weights)
    return RunContext(runs, shares, len(records))


def _runs(records: Sequence[VectorRecord], weights: Weights) -> tuple[list[list[int]], list[list[float]]]:
    """The runs of records that lend each other context (members in order), and each run's
    shares at distance 1, 2, ...: a thread, or memories without one written close in time."""
    runs: dict[tuple[str, ...], list[int]] = {}
    run, last_at, gap = -1, 0.0, weights.context_gap  # the current run of memories without a thread
    members: list[int] = []  # its members
    for i, record in enumerate(records):
        if record.kind == DOC_KIND:
            continue  # document chunks overlap already: each stands alone
        key = _thread(record) if record.metadata else None
        if key is not None:
            runs.setdefault(key, []).append(i)
            continue
        created = record.created_at
        if run < 0 or created - last_at > gap:
            run += 1
            members = runs[("run", str(run))] = []
        last_at = created
        members.append(i)
    reach = range(max(0, weights.context_window))
    shares = {
        kind: [weight * weights.context_decay**d for d in reach]
        for kind, weight in (("run", weights.context_unthreaded), ("thread", weights.context))
    }
    return list(runs.values()), [shares[key[0]] for key in runs]


def _order(record: VectorRecord) -> tuple[float, int]:
    return (record.created_at, record.seq)


def _blend_vectors(own: Vectors, plan: RunContext) -> Vectors:
    """Each vector plus its neighbours' at their shares, renormalised to unit length: by the
    plan's `steps` when it has them, else by its arrays (the same floats)."""
    if plan.steps is None:
        return _blend_rows(own, None, *plan.arrays[:2])
    return _blend_steps(own, plan.steps)


def _blend_steps(own: Vectors, steps: Sequence[Step], rows: Sequence[int] | None = None) -> Vectors:
    """`_blend_rows` of `rows` (None: all) from `RunContext.steps`: each step adds one
    neighbour to a slice of rows, in each row's order of neighbours, with the same products."""
    if rows is None:
        blended = own.astype(np.float32)  # a copy, summed into in place
        # A run's two steps at one distance (before, after) lend the same products of its rows
        # at that share: each is made once, and added from slices of it.
        span, share_of, products = slice(0, 0), None, own[:0]
        for to, source, share in steps:
            if share != share_of or source.start < span.start or source.stop > span.stop:
                span, share_of = slice(min(to.start, source.start), max(to.stop, source.stop)), share
                products = own[span] * np.float32(share)
            blended[to] += products[source.start - span.start : source.stop - span.start]
        return _unit(blended)
    wanted = np.asarray(rows, dtype=np.intp)
    blended = own[wanted].astype(np.float32, copy=False)  # indexing copied them
    for to, source, share in steps:
        hit = (wanted >= to.start) & (wanted < to.stop)
        blended[hit] += own[wanted[hit] + (source.start - to.start)] * np.float32(share)
    return _unit(blended)


def _blend_rows(own: Vectors, rows: Sequence[int] | None, at: npt.NDArray[np.intp], shares: Floats) -> Vectors:
    """The blended vectors of `rows` (None: all), whose k-th neighbours and shares are
    `at[:, k]`, `shares[:, k]` (`RunContext.arrays` of those rows); a row comes out the same
    whichever other rows are computed with it.

    The k-th neighbours of all rows are added in one step, so each row still adds its own in
    order, with the same float32 products and sums (a missing neighbour adds +0.0, which
    changes nothing): bit for bit the sum of one row at a time, without a Python step per
    neighbour. The sums are float32, like the vectors: summing into float64 (a cast of every
    product) made the blend, the largest part of building a customer's index, several times
    slower, for differences float32 vectors hardly hold (1e-7).
    """
    blended = own.astype(np.float32) if rows is None else own[list(rows)].astype(np.float32, copy=False)
    shares32 = shares.astype(np.float32)  # the products are float32, as share * own[j] makes them
    for slot in range(at.shape[1]):
        blended += own[at[:, slot]] * shares32[:, slot, None]
    return _unit(blended)


def _unit(blended: Vectors) -> Vectors:
    """The rows of `blended` (float32, a copy of the caller's own) at unit length, in place."""
    # np.linalg.norm's own steps for rows, without the copy its conjugate of real numbers makes
    norms = np.sqrt(np.add.reduce(blended * blended, axis=1, keepdims=True))
    norms[norms == 0] = 1.0
    blended /= norms
    return blended
