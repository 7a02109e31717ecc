"""Relevance of past episodes and documents: one calibrated scale, whatever the scope's size,
and a floor that drops chatter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import OpenMemory
from fourfold.embeddings import HashEmbedder
from fourfold.episodic import EpisodeLog
from fourfold.ranking import RELEVANCE_FLOOR, Background
from fourfold.text import tokenize
from harness import episode_desk as edata


def _fill(log: EpisodeLog, n: int, *, scope: str = "c1") -> None:
    log.record_many([
        {"goal": f"order {k} shipped to warehouse {k % 7} by courier", "actions": ["tracked it"],
         "outcome": "delivered", "success": True, "scope": scope} for k in range(n)
    ])


def test_every_similar_success_carries_its_relevance_and_a_stored_episode_none(tmp_path: Path) -> None:
    log = EpisodeLog(tmp_path / "e.jsonl", HashEmbedder())
    fix = log.record(goal="invoice PDF download fails with error 502", actions=["cleared cache"],
                     outcome="PDF downloads", success=True, scope="c1")
    _fill(log, 5)
    assert fix.score is None and log.get(fix.id).score is None
    found = log.similar_successes("invoice PDF download fails", k=6, scope="c1", include_unscoped=False)
    assert len(found) == 6 and all(ep.score is not None and 0.0 <= ep.score <= 1.0 for ep in found)
    assert [ep.score for ep in found] == sorted((ep.score for ep in found), reverse=True)  # type: ignore[misc]
    assert found[0] == fix and found[0].score != fix.score  # the score is no part of the episode's identity


def test_a_lone_episode_that_matches_well_scores_high(tmp_path: Path) -> None:
    log = EpisodeLog(tmp_path / "e.jsonl", HashEmbedder())
    log.record(goal="invoice PDF download fails with error 502", actions=["cleared cache"],
               outcome="PDF downloads again", success=True, scope="c1")
    (hit,) = log.similar_successes("invoice PDF download fails with error 502", scope="c1")
    assert hit.score is not None and hit.score > 0.5


def test_an_episode_scores_about_the_same_alone_and_among_many(tmp_path: Path) -> None:
    alone = EpisodeLog(tmp_path / "a.jsonl", HashEmbedder())
    crowded = EpisodeLog(tmp_path / "b.jsonl", HashEmbedder())
    for log in (alone, crowded):
        if log is crowded:
            _fill(log, 40)
        log.record(goal="invoice PDF download fails with error 502", actions=["cleared cache"],
                   outcome="PDF downloads again", success=True, scope="c1")
    a = alone.similar_successes("invoice PDF download fails", k=1, scope="c1")[0]
    b = crowded.similar_successes("invoice PDF download fails", k=1, scope="c1")[0]
    assert a.goal == b.goal and a.score is not None and b.score is not None
    assert abs(a.score - b.score) < 0.1


def test_min_score_keeps_exactly_the_episodes_at_or_above_it(tmp_path: Path) -> None:
    log = EpisodeLog(tmp_path / "e.jsonl", HashEmbedder())
    _fill(log, 12)
    everything = log.similar_successes("order 3 shipped by courier", k=12, scope="c1")
    floor = everything[4].score
    assert floor is not None
    kept = log.similar_successes("order 3 shipped by courier", k=12, scope="c1", min_score=floor)
    assert kept == [ep for ep in everything if ep.score is not None and ep.score >= floor]


def test_the_chatter_part_of_the_null_is_zero_below_where_it_starts_and_grows_past_it() -> None:
    prose = np.eye(4, dtype=np.float32)[:2]
    chatter = np.eye(4, dtype=np.float32)[2:]
    background = Background(prose, chatter)
    question = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    assert background.null(question) == pytest.approx(Background(prose).null(question))
    hello = np.array([0.0, 0.0, 1.0, 0.0], dtype=np.float32)
    # nearest 3 of 2 chatter rows: mean cosine 0.5, past CHATTER_FROM by 0.1
    want = Background(prose).null(hello) + Background.CHATTER_WEIGHT * (0.5 - Background.CHATTER_FROM)
    assert background.null(hello) == pytest.approx(want)


def test_the_episode_desk_splits_by_type_and_keeps_its_chatter_apart_from_the_background() -> None:
    from fourfold._background import CHATTER

    scopes, queries = edata.build(n_scopes=40, seed=3)
    assert (scopes, queries) == edata.build(n_scopes=40, seed=3)
    assert {len(s.tickets) for s in scopes} == set(edata.SIZES)
    assert {q.kind for q in queries} == {"on-topic", "unanswerable", "chatter", "unrelated"}
    have = {s.id: {t for t, _, _ in s.tickets} for s in scopes}
    for q in queries:
        if q.kind == "on-topic":
            assert q.type in have[q.scope]
        elif q.kind == "unanswerable":
            assert q.type not in have[q.scope]
    by_type = {q.type: edata.split_of(q) for q in queries if q.kind == "on-topic"}
    assert set(by_type.values()) == {"dev", "test"}
    assert not set(edata.CHATTER) & set(CHATTER)
    # both kinds of customer wording: sharing no content word with any ticket of the type, and sharing some
    shares = [bool(set(tokenize(q)) & set().union(*(tokenize(f"{g} {o}") for g in t.goals for o in t.outcomes)))
              for t in edata.TYPES for q in t.queries]
    assert 0.2 < shares.count(False) / len(shares) < 0.8


@pytest.mark.slow
def test_with_the_real_model_off_topic_messages_reach_no_episode_or_document_above_the_floor(
    open_memory: OpenMemory,
) -> None:
    from fourfold.embeddings.default import default_embedder

    memory = open_memory(embedder=default_embedder())
    by_name = {t.name: t for t in edata.TYPES}
    for name in ("double_charge", "late_delivery", "password_reset"):
        t = by_name[name]
        memory.episodes.record(goal=t.goals[0], actions=["resolved"], outcome=t.outcomes[0], success=True, scope="c1")
        memory.docs.ingest(t.article, source=name, scope="c1")
    # (not every chatter message: "thanks, bye!" reaches an article at 0.061; the benchmark
    # counts how many do)
    for chatter in ("lol ok", "how tall is Mount Everest?", "good morning :)"):
        assert memory.episodes.similar_successes(chatter, scope="c1", min_score=RELEVANCE_FLOOR) == []
        assert memory.docs.search(chatter, scope="c1", min_score=RELEVANCE_FLOOR) == []
    (ep,) = memory.episodes.similar_successes("you took my money twice this month", k=1, scope="c1",
                                              min_score=RELEVANCE_FLOOR)
    assert ep.goal == by_name["double_charge"].goals[0] and ep.score is not None and ep.score > 0.3
    hits = memory.docs.search("the tracking page hasn't moved in ten days", scope="c1", min_score=RELEVANCE_FLOOR)
    assert hits and hits[0].source == "late_delivery"


@pytest.mark.slow
def test_with_the_real_model_only_chatter_gets_a_chatter_part_in_its_null() -> None:
    from fourfold.embeddings.default import default_embedder

    embedder = default_embedder()
    background = Background.of(embedder)
    prose_only = Background(background.vectors)

    def chatter_part(text: str) -> float:
        v = embedder.embed(text)
        return background.null(v) - prose_only.null(v)

    assert chatter_part("hey, thanks a lot!") > 0.05
    assert chatter_part("can I phone them about the refund?") == pytest.approx(0.0, abs=1e-6)
