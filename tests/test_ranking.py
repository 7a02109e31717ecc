"""The shared ranker: what it ranks first and what its relevance means, for memories, episodes
and documents alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fourfold import InvalidInput
from fourfold.embeddings import HashEmbedder
from fourfold.episodic import EpisodeLog
from fourfold.longterm import LongTermMemory
from fourfold.ranking import (
    MEMORIES,
    RELEVANCE_FLOOR,
    Background,
    Calibration,
    Fusion,
    lexical_share,
    rank,
    relevance,
    typicality,
)
from fourfold.ranking.bm25 import BM25Index
from fourfold.stores import InMemoryVectorStore
from fourfold.text import tokenize


def _lt() -> LongTermMemory:
    embedder = HashEmbedder()
    return LongTermMemory(InMemoryVectorStore(embedder_identity=embedder.identity), embedder)


def test_a_clear_dense_match_beats_ordinary_words_shared_with_other_memories() -> None:
    # "how can we notify this customer?" against "prefers SMS" (no shared word, close in
    # meaning) and four memories that only share the desk's ordinary word "customer".
    dense = np.array([0.45, 0.12, 0.10, 0.15, 0.11])
    index = BM25Index()
    texts = ["prefers SMS", "customer on Pro plan", "customer in Oslo", "customer uses Android", "customer hates hold music"]
    for i, text in enumerate(texts):
        index.add(str(i), tokenize(text))
    query = tokenize("how can we notify this customer about the fix?")
    by_doc = index.scores(query)
    lexical = lexical_share(np.array([by_doc.get(str(i), 0.0) for i in range(5)]), index.best_possible(query))
    assert rank(dense, lexical, k=3, fusion=Fusion(), calibration=MEMORIES)[0][0] == 0


def test_a_rare_word_of_the_query_lifts_its_memory_over_a_slightly_closer_one() -> None:
    dense = np.array([0.30, 0.27])
    lexical = np.array([0.0, 0.5])  # half of the query's best possible BM25 score
    assert [i for i, _ in rank(dense, lexical, k=2, fusion=Fusion(), calibration=MEMORIES)] == [1, 0]


def test_relevance_lies_in_zero_one_and_grows_with_the_evidence() -> None:
    evidence = np.array([-1.0, 0.0, 0.2, 0.5, 1.0, 3.0])
    scores = relevance(evidence, MEMORIES)
    assert np.all((scores > 0) & (scores < 1))
    assert np.all(np.diff(scores) > 0)


def test_lexical_share_is_zero_when_the_query_has_no_word_to_match() -> None:
    assert lexical_share(np.array([0.0, 0.0]), 0.0).tolist() == [0.0, 0.0]
    assert lexical_share(np.array([1.0, 3.0]), 2.0).tolist() == [0.5, 1.0]


def test_best_possible_bounds_every_score() -> None:
    index = BM25Index()
    for i, text in enumerate(["refund refund refund to the card", "refund", "card blocked", "hello there"]):
        index.add(str(i), tokenize(text))
    query = tokenize("refund card refund")
    assert max(index.scores(query).values()) < index.best_possible(query)


def test_a_tie_break_asked_of_the_contenders_only_gives_the_same_top_k_as_one_over_all() -> None:
    """`newer` as a function of positions (the episode log's places among the asked rows,
    costly over a whole log) is asked only about the candidates that can reach the top k."""
    rng = np.random.default_rng(7)
    for _ in range(50):
        n, k = int(rng.integers(1, 300)), int(rng.integers(1, 12))
        dense = np.round(rng.uniform(-0.2, 0.8, n), 2)  # rounded: many ties at the k-th place
        lexical = np.where(rng.random(n) < 0.2, np.round(rng.random(n), 1), 0.0)
        ts = rng.permutation(n).astype(np.float64)
        asked: list[int] = []

        def places(part: np.ndarray, ts: np.ndarray = ts, asked: list[int] = asked) -> np.ndarray:
            asked.append(len(part))
            out = np.empty(len(part))
            out[np.argsort(ts[part])] = np.arange(len(part))  # ranks among the asked rows only
            return out

        assert rank(dense, lexical, k=k, fusion=Fusion(), calibration=MEMORIES, newer=places) == rank(
            dense, lexical, k=k, fusion=Fusion(), calibration=MEMORIES, newer=ts)
        if n > 4 * k:
            evidence = dense + Fusion().lexical * lexical
            assert asked == [int((evidence >= np.sort(evidence)[-k]).sum())]


def test_equal_scores_go_to_the_newer_candidate() -> None:
    ranked = rank(np.array([0.5, 0.5, 0.1]), np.zeros(3), k=2, fusion=Fusion(), calibration=MEMORIES)
    assert [i for i, _ in ranked] == [1, 0]


@pytest.mark.parametrize(("kind", "field"), [
    (Fusion, "lexical"), (Fusion, "boost"), (Fusion, "typical"),
    (Calibration, "null"), (Calibration, "slope"), (Calibration, "offset"),
])
def test_fusion_and_calibration_refuse_values_that_are_not_finite(kind: type[Fusion | Calibration], field: str) -> None:
    with pytest.raises(InvalidInput):
        kind(**{field: float("nan")})
    with pytest.raises(InvalidInput):
        kind(**{field: True})


def test_a_calibration_refuses_a_slope_that_does_not_grow() -> None:
    with pytest.raises(InvalidInput):
        Calibration(slope=0.0)


def test_a_lone_memory_scores_its_relevance_not_zero() -> None:
    lt = _lt()
    lt.remember("Invoice PDF download fails with error 502", scope="c1")
    (hit,) = lt.recall("invoice PDF download fails", scope="c1")
    assert hit.score > 0.5


def test_a_memory_scores_about_the_same_alone_and_among_many() -> None:
    alone, crowded = _lt(), _lt()
    alone.remember("Invoice PDF download fails with error 502", scope="c1")
    crowded.remember_many(
        [{"text": f"Order {n} shipped to warehouse {n % 7} by courier", "scope": "c1"} for n in range(40)]
        + [{"text": "Invoice PDF download fails with error 502", "scope": "c1"}]
    )
    (a,) = alone.recall("invoice PDF download fails", scope="c1", k=1)
    (b,) = crowded.recall("invoice PDF download fails", scope="c1", k=1)
    assert a.text == b.text
    assert abs(a.score - b.score) < 0.1


def test_min_score_drops_what_is_irrelevant_and_keeps_what_is_not() -> None:
    lt = _lt()
    # two tickets: memories of one thread would lend each other their words
    lt.remember("Prefers email over phone calls", scope="c1", metadata={"thread": "T-1"})
    lt.remember("Lives in Oslo", scope="c1", metadata={"thread": "T-2"})
    assert lt.recall("who painted the Mona Lisa?", scope="c1", min_score=RELEVANCE_FLOOR) == []
    hits = lt.recall("email or phone calls", scope="c1", min_score=RELEVANCE_FLOOR)
    assert [h.text for h in hits] == ["Prefers email over phone calls"]
    assert all(0.0 <= h.score <= 1.0 for h in lt.recall("email", scope="c1", k=2))


@pytest.mark.parametrize("bad", [-0.1, 1.5, True, "0.5", float("nan")])
def test_min_score_must_be_a_relevance(bad: object) -> None:
    lt = _lt()
    lt.remember("Prefers email", scope="c1")
    with pytest.raises(InvalidInput):
        lt.recall("email", scope="c1", min_score=bad)  # type: ignore[arg-type]


def test_similar_successes_share_the_scale_of_recall(tmp_path: Path) -> None:
    log = EpisodeLog(tmp_path / "episodes.jsonl", HashEmbedder())
    fix = log.record(goal="deploy returns 502 bad gateway", actions=["restarted worker"], outcome="deploy healthy", success=True)
    log.record(goal="refund not received", actions=["reissued refund"], outcome="refund arrived", success=True)
    assert log.similar_successes("deploy returns 502", min_score=RELEVANCE_FLOOR) == [fix]
    assert log.similar_successes("who painted the Mona Lisa?", min_score=RELEVANCE_FLOOR) == []
    with pytest.raises(InvalidInput):
        log.similar_successes("deploy", min_score=2.0)


def test_document_search_shares_the_scale_of_recall() -> None:
    from fourfold.semantic.docs import DocumentStore

    docs = DocumentStore(_lt())
    docs.ingest_text("# Refunds\nRefunds reach the card within 5 business days.", source="refunds.md")
    (hit,) = docs.search("when do refunds reach the card", min_score=RELEVANCE_FLOOR)
    assert hit.source == "refunds.md" and 0.5 < hit.score <= 1.0
    assert docs.search("how tall is Mount Everest?", min_score=RELEVANCE_FLOOR) == []


def test_a_query_close_to_background_prose_needs_more_evidence_for_the_same_relevance() -> None:
    evidence = np.array([0.3])
    assert relevance(evidence, MEMORIES, null=0.4)[0] < relevance(evidence, MEMORIES, null=0.0)[0]
    # one number per query: the order within a query never changes
    dense, lexical = np.array([0.2, 0.5, 0.35]), np.array([0.3, 0.0, 0.1])
    plain = [i for i, _ in rank(dense, lexical, k=3, fusion=Fusion(), calibration=MEMORIES)]
    assert [i for i, _ in rank(dense, lexical, k=3, fusion=Fusion(), calibration=MEMORIES, null=0.6)] == plain


def test_the_background_null_is_a_queries_closeness_to_unrelated_prose() -> None:
    background = Background.of(HashEmbedder())
    embedder = HashEmbedder()
    near = background.null(embedder.embed("The river floods the valley every spring when the snow melts"))
    far = background.null(embedder.embed("invoice PDF download error 502 on checkout"))
    assert near > far
    assert Background.of(HashEmbedder()) is background  # made once per embedder identity


def test_explain_gives_each_results_parts_and_the_same_scores_as_recall() -> None:
    lt = _lt()
    lt.remember_many([
        {"text": "Asked about the invoice PDF", "scope": "c1", "metadata": {"thread": "T-1", "speaker": "Ana"}},
        {"text": "Yes, it fails with error 502", "scope": "c1",
         "metadata": {"thread": "T-1", "speaker": "Ana", "occurred_at": "2023-05-08"}},
        {"text": "Lives in Oslo", "scope": "c1", "metadata": {"thread": "T-2"}},
    ])
    query = "what did Ana say about error 502 in May?"
    explained = lt.explain(query, scope="c1", k=3)
    assert [r for r, _ in explained] == lt.recall(query, scope="c1", k=3)
    top, parts = explained[0]
    assert top.text == "Yes, it fails with error 502"
    fusion = Fusion()
    assert parts.evidence == pytest.approx(
        parts.dense + fusion.lexical * parts.lexical + fusion.boost * parts.boost - fusion.typical * parts.typical
    )
    assert parts.typical != 0  # three memories: each stands apart from the others' average differently
    assert parts.relevance == pytest.approx(float(relevance(np.array([parts.evidence]), MEMORIES, null=parts.null)[0]))
    assert parts.boost == 1.0 and 0 < parts.date < parts.lexical
    assert parts.context == pytest.approx(parts.dense - parts.own) and parts.context != 0  # its thread's neighbour
    oslo = next(p for r, p in explained if r.text == "Lives in Oslo")
    assert oslo.context == pytest.approx(0.0, abs=1e-6) and oslo.boost == 0.0 and oslo.date == 0.0


@pytest.mark.slow
def test_the_shipped_minilm_background_is_the_models_own() -> None:
    from fourfold._background import CHATTER, TEXTS
    from fourfold.embeddings.default import default_embedder

    embedder = default_embedder()
    background = Background.of(embedder)
    assert np.abs(background.vectors - embedder.embed_many(list(TEXTS))).max() < 2e-3  # float16 on disk
    assert np.abs(background.chatter - embedder.embed_many(list(CHATTER))).max() < 2e-3


def _unit_rows(seed: int, n: int, d: int = 16) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, d))
    out: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return out


@pytest.mark.parametrize("n", [2, 3, 7])
def test_typicality_is_each_rows_mean_cosine_to_the_others_centred_on_the_scope(n: int) -> None:
    rows = _unit_rows(n, n)
    cos = rows @ rows.T
    brute = np.array([np.delete(cos[i], i).mean() for i in range(n)])
    got = typicality(rows)
    assert got == pytest.approx(brute - brute.mean(), abs=1e-9)
    assert got.sum() == pytest.approx(0.0, abs=1e-9)
    # a subset of the scope, scored with the whole scope's sum and size, scores as in the whole
    assert typicality(rows[:2], total=rows.sum(axis=0), size=n) == pytest.approx(got[:2], abs=1e-9)


def test_a_scope_of_one_has_no_typicality() -> None:
    assert typicality(_unit_rows(0, 1)).tolist() == [0.0]
    assert typicality(np.zeros((0, 16))).tolist() == []


def test_a_memory_close_to_all_its_scope_loses_a_tie_with_one_that_stands_apart() -> None:
    # Two candidates the query matches almost equally; the first is near every other memory of
    # the scope (the desk's framing), the second only near the query.
    framing = _unit_rows(1, 1)[0]
    others = [framing + 0.3 * r for r in _unit_rows(2, 4)]
    hub = framing + 0.2 * _unit_rows(3, 1)[0]
    apart = _unit_rows(4, 1)[0]
    rows = np.stack([hub, apart, *others])
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    typical = typicality(rows)
    assert typical[0] > typical[1]
    dense = np.array([0.51, 0.5, 0.1, 0.1, 0.1, 0.1])
    lexical = np.zeros(6)
    assert rank(dense, lexical, k=1, fusion=Fusion(), calibration=MEMORIES, typical=typical)[0][0] == 1
    assert rank(dense, lexical, k=1, fusion=Fusion(typical=0.0), calibration=MEMORIES, typical=typical)[0][0] == 0
    assert rank(dense, lexical, k=1, fusion=Fusion(), calibration=MEMORIES)[0][0] == 0  # no typicality given: not taken off
