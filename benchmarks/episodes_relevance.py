"""Relevance of past tickets and documents: does the default floor keep what answers a customer's
problem and drop chatter, in every scope size?

A generated desk (`fourfold.testing.episode_desk`: 20 problem types × ticket and question wordings, scopes of
1-40 resolved tickets) is written through the public API: each scope's tickets as successful
episodes (tagged with their type), and the help articles of the same types as that scope's
documents. Every query is asked of its scope through `EpisodeLog.similar_successes` and
`Documents.search`, as the support agent asks them (`include_unscoped=False`).

Printed per half (dev: tuned on; test: only reported) and kind (episodes, documents):
on-topic hit@3 without a floor and what the default floor (`fourfold.RELEVANCE_FLOOR`) costs
of it, the share of off-topic queries (chatter, unrelated questions) and of unanswerable ones
(a desk problem the scope has no ticket or article about) left empty at the floor, and the
mean top relevance of on-topic and off-topic queries by scope size.

    python benchmarks/episodes_relevance.py [--fit]

`--fit` refits each kind's calibration on the dev half (`fit`, as `recall_cv.py` does for
memories) and prints it (the shipped `ranking.EPISODES` is its fit for episodes, rounded). The
last line is over the test half:
``episodes_relevance: episodes_hit3=X episodes_floor_drop=X episodes_offtopic_empty=X docs_hit3=X docs_floor_drop=X docs_offtopic_empty=X``
"""

from __future__ import annotations

import math
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from _calibrate import cut_keeping, fit_logistic, relevance_of
from _embed_cache import CACHE_DIR, CachedEmbedder
from _harness import episode_desk as edata
from fourfold import Memory
from fourfold.ranking import EPISODES, MEMORIES, RELEVANCE_FLOOR, Background, Calibration

DOCUMENTS = MEMORIES  # documents are long-term memories of kind "doc"

CACHE = CACHE_DIR / "episodes-minilm.npz"
K = 10  # candidates kept per query for the calibration (the top 3 count for hit@3)
NULL_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5)


@dataclass(frozen=True, slots=True)
class Top:
    """One query's best candidates: (relevant?, evidence, null) each, best first."""

    query: edata.Query
    size: int
    candidates: tuple[tuple[bool, float, float], ...]


def _evidence(score: float, calibration: Calibration, null: float) -> float:
    """The ranking sum behind a relevance (the inverse of `fourfold.ranking.relevance`)."""
    s = min(max(score, 1e-15), 1 - 1e-15)
    return (math.log(s / (1 - s)) - calibration.offset) / calibration.slope + calibration.null * null


def run(memory: Any, embedder: Any, scopes: Sequence[edata.Scope], queries: Sequence[edata.Query]) -> tuple[list[Top], list[Top]]:
    """Each query's top K episodes and documents of its scope."""
    sizes = {s.id: len(s.tickets) for s in scopes}
    background = Background.of(embedder)
    episodes: list[Top] = []
    docs: list[Top] = []
    for q in queries:
        null = background.null(embedder.embed(q.text))
        found = memory.episodes.similar_successes(q.text, k=K, scope=q.scope, include_unscoped=False)
        episodes.append(Top(q, sizes[q.scope], tuple(
            (q.kind == "on-topic" and ep.tags[0] == q.type, _evidence(ep.score, EPISODES, null), null) for ep in found)))
        hits = memory.long_term.explain(q.text, scope=q.scope, k=K, kinds=("doc",))
        docs.append(Top(q, sizes[q.scope], tuple(
            (q.kind == "on-topic" and str(r.metadata.get("source")) == q.type, p.evidence, p.null) for r, p in hits)))
    return episodes, docs


@dataclass(frozen=True, slots=True)
class Outcome:
    hit3: float
    floor_drop: float
    empty: dict[str, float]  # by off-topic kind, and "off-topic" for chatter and unrelated together
    by_size: dict[int, tuple[float, float]]  # size -> mean top relevance (on-topic, off-topic)


def outcome(tops: Sequence[Top], calibration: Calibration, floor: float = RELEVANCE_FLOOR) -> Outcome:
    on = [t for t in tops if t.query.kind == "on-topic"]
    hit = [any(rel for rel, _, _ in t.candidates[:3]) for t in on]
    kept = [any(rel and relevance_of(calibration, e, n) >= floor for rel, e, n in t.candidates[:3]) for t in on]
    empty: dict[str, float] = {}
    for kind in ("chatter", "unrelated", "unanswerable"):
        off = [t for t in tops if t.query.kind == kind]
        empty[kind] = float(np.mean([not any(relevance_of(calibration, e, n) >= floor for _, e, n in t.candidates) for t in off]))
    empty["off-topic"] = (empty["chatter"] + empty["unrelated"]) / 2
    by_size: dict[int, tuple[float, float]] = {}
    for size in edata.SIZES:
        def top(t: Top) -> float:
            return max((relevance_of(calibration, e, n) for _, e, n in t.candidates), default=0.0)
        a = [top(t) for t in on if t.size == size]
        b = [top(t) for t in tops if t.size == size and t.query.kind in ("chatter", "unrelated")]
        by_size[size] = (float(np.mean(a)), float(np.mean(b)))
    return Outcome(float(np.mean(hit)), float(np.mean(hit)) - float(np.mean(kept)), empty, by_size)


def fit(tops: Sequence[Top]) -> Calibration:
    """The null weight leaving the most off-topic queries empty at the default floor while it
    costs at most 0.01 of on-topic hit@3 (the floor's cut on evidence - weight * null is set
    there, by `cut_keeping`), and the slope of a logistic fit of every top-3 candidate's
    relevance for that weight; the offset puts the cut at the default floor (as
    `relevance_gate.choose`)."""
    logit_floor = math.log(RELEVANCE_FLOOR / (1 - RELEVANCE_FLOOR))
    on = sum(t.query.kind == "on-topic" for t in tops)
    best: tuple[float, Calibration] | None = None
    for weight in NULL_WEIGHTS:
        cut = cut_keeping((max(e - weight * n for rel, e, n in t.candidates[:3] if rel) for t in tops
                           if t.query.kind == "on-topic" and any(rel for rel, _, _ in t.candidates[:3])), on)
        rows = [(rel, e - weight * n) for t in tops for rel, e, n in t.candidates[:3]]
        slope = float(fit_logistic(np.array([z for _, z in rows]), np.array([float(rel) for rel, _ in rows]))[0])
        calibration = Calibration(slope, logit_floor - slope * cut, weight)
        empty = outcome(tops, calibration).empty["off-topic"]
        if best is None or empty > best[0] + 1e-9:
            best = (empty, calibration)
    assert best is not None
    return best[1]


def show(name: str, got: Outcome) -> None:
    e = got.empty
    print(f"  {name:9s} hit@3={got.hit3:.3f} floor_drop={got.floor_drop:.4f} empty: chatter={e['chatter']:.3f} "
          f"unrelated={e['unrelated']:.3f} off-topic={e['off-topic']:.3f} unanswerable={e['unanswerable']:.3f}")
    sizes = " ".join(f"{s}:{a:.2f}/{b:.2f}" for s, (a, b) in got.by_size.items())
    print(f"  {'':9s} mean top relevance on/off-topic by scope size: {sizes}")


def desk() -> tuple[list[edata.Scope], list[edata.Query], list[Top], list[Top]]:
    """The generated desk written through the public API, and every query's top K episodes and documents."""
    scopes, queries = edata.build()
    embedder = CachedEmbedder(CACHE)
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory.open(tmp, embedder=embedder)
        by_name = {t.name: t for t in edata.TYPES}
        for scope in scopes:
            memory.episodes.record_many([
                {"goal": goal, "actions": ["looked up the account", "resolved"], "outcome": outcome_, "success": True,
                 "scope": scope.id, "tags": [name]} for name, goal, outcome_ in scope.tickets])
            for name in sorted({name for name, _, _ in scope.tickets}):
                memory.docs.ingest(by_name[name].article, source=name, scope=scope.id)
        episodes, docs = run(memory, embedder, scopes, queries)
        memory.close()
    embedder.save()
    return scopes, queries, episodes, docs


def main(argv: Sequence[str]) -> None:
    scopes, queries, episodes, docs = desk()
    halves = {h: [i for i, q in enumerate(queries) if edata.split_of(q) == h] for h in ("dev", "test")}
    shipped = {"episodes": EPISODES, "documents": DOCUMENTS}
    print(f"{len(scopes)} scopes of {min(edata.SIZES)}-{max(edata.SIZES)} tickets, {len(queries)} queries; "
          f"floor {RELEVANCE_FLOOR}")
    last: list[str] = []
    for kind, tops in (("episodes", episodes), ("documents", docs)):
        print(f"\n{kind} (shipped calibration: slope={shipped[kind].slope:.2f} offset={shipped[kind].offset:.2f} "
              f"null={shipped[kind].null:.2f})")
        for half, picked in halves.items():
            got = outcome([tops[i] for i in picked], shipped[kind])
            show(half, got)
            if half == "test":
                short = "docs" if kind == "documents" else kind
                last.append(f"{short}_hit3={got.hit3:.3f} {short}_floor_drop={got.floor_drop:.4f} "
                            f"{short}_offtopic_empty={got.empty['off-topic']:.3f}")
        if "--fit" in argv:
            fitted = fit([tops[i] for i in halves["dev"]])
            print(f"  fitted on dev: slope={fitted.slope:.3f} offset={fitted.offset:.3f} null={fitted.null:.2f}")
            for half, picked in halves.items():
                show(f"fit {half}", outcome([tops[i] for i in picked], fitted))
    print("\nepisodes_relevance: " + " ".join(last))


if __name__ == "__main__":
    main(sys.argv[1:])
