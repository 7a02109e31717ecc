"""One BM25: every lexical score fourfold gives comes from one kernel (`bm25_term_scores`), and
each index built on it (the incremental `BM25Index`, the fixed `BM25Table`, a scope's
`ContextTerms`) gives the same floats as Okapi BM25 computed by hand, posting by posting."""

from __future__ import annotations

import math
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from fourfold.ranking.bm25 import K1, B, BM25Index, BM25Table, CollectionStats
from fourfold.ranking.terms import ContextTerms

WORDS = st.sampled_from(["refund", "invoice", "late", "parcel", "email", "a", "b"])
DOCS = st.lists(st.lists(WORDS, max_size=8), max_size=8)
QUERY = st.lists(st.sampled_from(["refund", "invoice", "late", "unseen", "b"]), max_size=5)


def by_hand(docs: list[list[str]], query: list[str], stats: CollectionStats | None = None) -> dict[str, float]:
    """Okapi BM25 (Lucene's idf, k1 0.9, b 0.4) as the textbook writes it, one posting at a time."""
    counts = [Counter(doc) for doc in docs]
    total = 0.0
    for doc in docs:
        total += len(doc)
    if not docs or not total:
        return {}
    n, avgdl = (len(docs), total / len(docs)) if stats is None else (stats.n_docs, stats.avgdl)
    out: dict[str, float] = {}
    for term in query:
        holders = [i for i, c in enumerate(counts) if term in c]
        if not holders:
            continue
        df = float(len(holders)) if stats is None else max(stats.df.get(term, 0.0), len(holders))
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for i in holders:
            tf = float(counts[i][term])
            norm = K1 * (1.0 - B + B * len(docs[i]) / avgdl)
            out[str(i)] = out.get(str(i), 0.0) + idf * tf * (K1 + 1.0) / (tf + norm)
    return {doc: score for doc, score in out.items() if score > 0}


def indexes(docs: list[list[str]]) -> tuple[BM25Index, BM25Table, ContextTerms]:
    incremental = BM25Index()
    for i, doc in enumerate(docs):
        incremental.add(str(i), doc)
    table = BM25Table([{t: float(c) for t, c in Counter(doc).items()} for doc in docs])
    return incremental, table, ContextTerms(docs, steps=[])  # no neighbours: a record's own words


@settings(max_examples=200, deadline=None)
@given(DOCS, QUERY)
def test_every_index_scores_as_bm25_by_hand(docs: list[list[str]], query: list[str]) -> None:
    expected = by_hand(docs, query)
    for index in indexes(docs):
        assert index.scores(query) == expected, type(index).__name__
    bests = {index.best_possible(query) for index in indexes(docs)}
    assert len(bests) == 1


@settings(max_examples=100, deadline=None)
@given(DOCS, QUERY, st.integers(min_value=0, max_value=50), st.floats(min_value=0.5, max_value=20))
def test_every_index_scores_with_a_larger_collections_statistics_as_by_hand(
    docs: list[list[str]], query: list[str], more: int, avgdl: float
) -> None:
    stats = CollectionStats(n_docs=len(docs) + more, avgdl=avgdl, df={"refund": float(more), "late": 1.0})
    expected = by_hand(docs, query, stats)
    for index in indexes(docs):
        assert index.scores(query, stats=stats) == expected, type(index).__name__


def test_the_hand_computation_is_bm25() -> None:
    """A rare word a document holds scores it; a word every document holds scores less."""
    scores = by_hand([["refund", "late"], ["late"], ["late", "parcel"]], ["refund", "late"])
    assert scores["0"] > scores["1"] > 0 and set(scores) == {"0", "1", "2"}
