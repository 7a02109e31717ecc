"""A large scope's candidates indexed for one query (`ScopeIndex.of_features` over `BM25Table`):
the same scores, bit for bit, as the `BM25Index` of term maps it replaced, and as BM25 itself."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from fourfold import InvalidInput
from fourfold.longterm.retrieval import ScopeIndex, Weights
from fourfold.ranking import MEMORIES, lexical_share, rank, typicality
from fourfold.ranking.bm25 import REST, BM25Index, BM25Table, CollectionStats
from fourfold.stores.vector import VectorRecord

WORDS = ["refund", "parcel", "login", "router", "invoice", "courier", "printer", "warranty"]


def _random_docs(rng: random.Random, n: int) -> tuple[list[dict[str, float]], list[float]]:
    """Term maps in differing key orders, some weights 0 or negative, and whole lengths that
    are sometimes shorter than the given weights (no rest then)."""
    docs, lengths = [], []
    for _ in range(n):
        terms = rng.sample(WORDS, rng.randint(0, 5))
        doc = {t: rng.choice([1.0, 2.0, 0.4, 0.28, 0.196, 0.0, -0.5, rng.random() * 3]) for t in terms}
        docs.append(doc)
        lengths.append(sum(doc.values()) + rng.choice([0.0, -0.1, rng.random() * 40]))
    return docs, lengths


def _reference(docs: list[dict[str, float]], lengths: list[float] | None) -> BM25Index:
    """What large scopes indexed before: one `add_weighted` per record, the rest under `REST`."""
    index = BM25Index()
    for i, doc in enumerate(docs):
        index.add_weighted(str(i), doc if lengths is None else {**doc, REST: lengths[i] - sum(doc.values())})
    return index


@pytest.mark.parametrize("seed", range(6))
def test_bm25_table_scores_equal_bm25_index_bit_for_bit(seed: int) -> None:
    rng = random.Random(seed)
    docs, lengths = _random_docs(rng, rng.randint(1, 300))
    stats = CollectionStats(n_docs=50_000, avgdl=17.25, df={w: float(rng.randint(1, 9000)) for w in WORDS[:6]})
    query = [*rng.sample(WORDS, 4), "unknown", WORDS[0]]  # a word no record has, one twice
    for given in (None, lengths):
        table, want = BM25Table(docs, lengths=given), _reference(docs, given)
        assert len(table) == len(docs)
        for with_stats in (None, stats):
            assert table.scores(query, stats=with_stats) == want.scores(query, stats=with_stats)  # exact floats
            assert table.best_possible(query, stats=with_stats) == want.best_possible(query, stats=with_stats)
            got = table.score_array(query, stats=with_stats)
            by_doc = want.scores(query, stats=with_stats)
            assert got.tolist() == [by_doc.get(str(i), 0.0) for i in range(len(docs))]
        assert [table.length(i) for i in range(len(docs))] == [want.length(str(i)) for i in range(len(docs))]
        assert table.to_index().scores(query) == want.scores(query)


def test_bm25_table_scores_a_fixed_collection_as_the_formula_gives() -> None:
    """Two documents, the collection's statistics given: Okapi BM25 (k1 0.9, b 0.4) by hand."""
    table = BM25Table([{"refund": 2.0, "parcel": 0.4}, {"parcel": 1.0}], lengths=[10.0, 4.0])
    stats = CollectionStats(n_docs=1000, avgdl=8.0, df={"refund": 10.0, "parcel": 100.0})

    def term(df: float, tf: float, length: float) -> float:
        idf = math.log(1 + (1000 - df + 0.5) / (df + 0.5))
        return idf * tf * 1.9 / (tf + 0.9 * (0.6 + 0.4 * length / 8.0))

    got = table.score_array(["refund", "parcel"], stats=stats)
    assert got[0] == pytest.approx(term(10, 2.0, 10.0) + term(100, 0.4, 10.0), rel=1e-12)
    assert got[1] == pytest.approx(term(100, 1.0, 4.0), rel=1e-12)
    assert table.scores(["login"], stats=stats) == {}
    # without statistics: the two documents are the collection (df 1 and 2, mean length 7)
    assert table.scores(["refund"]) == {"0": pytest.approx(math.log(1 + 1.5 / 1.5) * 2 * 1.9 / (2 + 0.9 * (0.6 + 0.4 * 10 / 7)))}


def test_bm25_table_rejects_what_add_weighted_rejects() -> None:
    for bad in ({"x": float("nan")}, {"x": "1"}, {"x": True}, {"x": float("inf")}):
        with pytest.raises(InvalidInput):
            BM25Table([{"y": 1.0}, bad])  # type: ignore[list-item]
    with pytest.raises(InvalidInput):
        BM25Table(["refund"])  # type: ignore[list-item]
    with pytest.raises(InvalidInput):
        BM25Table([{"y": 1.0}], lengths=[1.0, 2.0])
    assert BM25Table([{"x": 2, "y": 1.0}]).scores(["x"]) == BM25Table([{"x": 2.0, "y": 1.0}]).scores(["x"])
    assert BM25Table([]).scores(["x"]) == {} and BM25Table([{}]).score_array(["x"]).tolist() == [0.0]


def _record(i: int, **metadata: object) -> VectorRecord:
    return VectorRecord(id=f"m{i}", text=f"memory {i}", embedding=np.zeros(0, dtype=np.float32), scope="shared",
                        kind="note", created_at=1000.0 + i, metadata=metadata, seq=0)


def test_candidates_rank_with_the_scopes_statistics_exactly_as_before() -> None:
    """Fixed candidates: their order, and every part of their scores, equal what the index of
    `BM25Index.add_weighted` term maps gave (the previous implementation), bit for bit."""
    records = [_record(0), _record(1, speaker="Maria"), _record(2), _record(3)]
    matrix = np.array([[1.0, 0.0], [0.6, 0.8], [0.8, 0.6], [0.0, 1.0]], dtype=np.float32)
    counts: list[dict[str, float]] = [{"refund": 1.0}, {"parcel": 1.4, "refund": 0.4}, {}, {"parcel": 2.0}]
    lengths = [6.0, 9.5, 3.0, 12.0]
    stats = CollectionStats(n_docs=5000, avgdl=8.0, df={"refund": 40.0, "parcel": 900.0})
    total, size = np.array([3000.0, 2000.0]), 5000
    query, vector = "maria refund parcel", np.array([0.8, 0.6], dtype=np.float32)
    index = ScopeIndex.of_features(records, matrix, counts, lengths=lengths, scope_total=total, scope_size=size)
    got = index.explain(vector, query, k=4, keep=lambda r: r.id != "m3", stats=stats, null=0.1)
    assert [r.id for r, _ in got] == ["m1", "m0", "m2"]
    assert all(r is records[int(r.id[1:])] for r, _ in got)  # records read without vectors are kept as they are

    # The previous implementation: the ranker's inputs from a `BM25Index` of each record's term
    # map (the rest of its length under `REST`), ranked by the shared ranker.
    kept = np.array([0, 1, 2])
    reference = _reference(counts, lengths)
    tokens = ["maria", "refund", "parcel"]
    by_doc = reference.scores(tokens, stats=stats)
    lexical = lexical_share(np.array([by_doc.get(str(i), 0.0) for i in kept]), reference.best_possible(tokens, stats=stats))
    fusion = Weights().fusion
    want = rank((matrix[kept] @ vector).astype(np.float64), lexical, k=4, fusion=fusion, calibration=MEMORIES, boost=np.array([0.0, 1.0, 0.0]),
                newer=kept.astype(np.float64), null=0.1, typical=typicality(matrix, total=total, size=size)[kept])
    assert [(r.id, p.relevance) for r, p in got] == [(f"m{j}", score) for j, score in want]  # exact floats
    assert [p.lexical for _, p in got] == [float(lexical[j]) for j, _ in want]
    # the parts themselves: BM25 over the scope's statistics as a share of the query's best
    best = index.bm25.best_possible(["maria", "refund", "parcel"], stats=stats)
    idf = math.log(1 + (5000 - 40 + 0.5) / (40 + 0.5))
    assert got[1][1].lexical == pytest.approx(idf * 1.9 / (1.0 + 0.9 * (0.6 + 0.4 * 6.0 / 8.0)) / best, rel=1e-12)
    assert got[0][1].boost == 1.0 and got[2][1].lexical == 0.0
    assert index.bm25.scores(["parcel"], stats=stats) == _reference(counts, lengths).scores(["parcel"], stats=stats)
