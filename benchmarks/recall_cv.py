"""Cross-validation of the ranker's settings on the dev sets: how `fourfold.ranking` was tuned.

Two sets, each split five ways: the LoCoMo dev split by conversation, the paraphrase set's dev
half (`_paraphrase_data.dev_half`; its test half is only reported, by benchmarks/paraphrase.py)
by attribute type (a held-out fold's wording was never tuned on; a type's unanswerable
questions go with it), its unrelated off-topic questions by text (each is asked of several
customers). Fold i holds out
conversation i and type fold i together.

0. Context of memories without a thread (`Weights.context_unthreaded`), on the desk alone.
1. Fusion: for each (lexical, speaker) weight of the grid, the library's own recall ranks
   every question. On the four training folds the setting with the best LoCoMo R@10 (cat1-4)
   plus paraphrase hit@3 is chosen and scored on the held-out fold.
2. Calibration and floor: with the weights chosen on all of dev, relevance is a logistic curve
   of the fused evidence minus a weight times the query's background similarity
   (`fourfold.ranking.Background`). On the training folds the weight is the one leaving most
   off-topic questions empty at a floor that keeps on-topic hit@3 within 0.01; slope and offset
   are fitted to the top 3 results of the training questions (relevant: the memory asked about;
   every result of an off-topic question is irrelevant), and the floor is the highest relevance
   whose training on-topic hit@3 drops by at most 0.01. All are scored held out, with and
   without the background term.
3. The shipped floor on LoCoMo dev's conversations (not tuned on): evidence it drops from the
   top 10, and the desk's off-topic questions it leaves empty there.

    python benchmarks/recall_cv.py [--calibration-only]

Uses cached MiniLM vectors (`_embed_cache`), so it never waits on the model after a first run.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

import _locomo_data as ldata
import _paraphrase_data as pdata
import locomo
from _calibrate import cut_keeping, fit_logistic, relevance_of
from _embed_cache import CACHE_DIR, CachedEmbedder
from fourfold.longterm import LongTermMemory, Weights
from fourfold.ranking import Calibration
from fourfold.stores import InMemoryVectorStore

LEXICAL = (1.0, 1.25, 1.5, 1.75, 2.0, 2.5)
SPEAKER = (0.1, 0.15, 0.2, 0.25, 0.35, 0.5)
FLOORS = tuple(round(x, 4) for x in np.arange(0.02, 0.40, 0.0025))
NULL_WEIGHTS = tuple(round(x, 2) for x in np.arange(0.0, 2.01, 0.25))
FOLDS = 5


def _memory(embedder: CachedEmbedder) -> LongTermMemory:
    return LongTermMemory(InMemoryVectorStore(embedder_identity=embedder.identity), embedder)


def locomo_runs(weights: Sequence[Weights]) -> tuple[list[str], list[dict[str, list[tuple[ldata.Question, list[str]]]]]]:
    dataset = ldata.load(locomo.default_data_path())
    embedder = CachedEmbedder(CACHE_DIR / "locomo-lab-minilm.npz")
    runs: list[dict[str, list[tuple[ldata.Question, list[str]]]]] = [{} for _ in weights]
    for conversation in dataset.conversations:
        lt = _memory(embedder)
        locomo.remember_conversation(lt, conversation, {})
        for w, run in zip(weights, runs, strict=True):
            lt.weights = w
            run[conversation.sample_id] = [
                (q, [str(h.metadata["dia_id"]) for h in lt.recall(q.question, scope=conversation.sample_id, k=10)])
                for q in conversation.questions
            ]
    embedder.save()
    return [c.sample_id for c in dataset.conversations], runs


Top = list[tuple[bool, float, float]]  # a question's top 3: (is the memory asked about, evidence, null)


def paraphrase_runs(weights: Sequence[Weights]) -> tuple[pdata.Dataset, list[list[Top]]]:
    """Per weights, per question: its top 3 as (is the memory asked about, fused evidence, the
    query's background similarity)."""
    dataset = pdata.dev_half(pdata.build())
    embedder = CachedEmbedder(CACHE_DIR / "paraphrase-minilm.npz")
    lt = _memory(embedder)
    for customer in dataset.customers:
        lt.remember_many([{"text": t, "scope": customer.id} for t in customer.memories])
    runs = []
    for w in weights:
        lt.weights = w
        runs.append([
            [(h.text == q.answer, p.evidence, p.null) for h, p in lt.explain(q.text, scope=q.customer, k=3)]
            for q in dataset.questions
        ])
    embedder.save()
    return dataset, runs


def r_at(results: Sequence[tuple[ldata.Question, list[str]]], k: int, group: str = "cat1-4") -> float:
    return ldata.score(results, [k])[group].recall[k]


def hit3(dataset: pdata.Dataset, run: Sequence[Top], types: set[str]) -> float:
    """hit@3 over every on-topic question (both kinds) of these attribute types."""
    got = [any(rel for rel, _, _ in top) for q, top in zip(dataset.questions, run, strict=True) if q.answer is not None and q.type in types]
    return sum(got) / len(got)


def floor_outcome(
    dataset: pdata.Dataset, run: Sequence[Top], picked: Sequence[bool], calibration: Calibration, floor: float,
) -> tuple[float, float]:
    """(on-topic hit@3 lost to the floor, share of off-topic questions left empty) over `picked`."""
    lost = on = empty = off = 0
    for q, top, use in zip(dataset.questions, run, picked, strict=True):
        if not use:
            continue
        kept = [rel for rel, e, null in top if relevance_of(calibration, e, null) >= floor]
        if q.answer is None:
            off += 1
            empty += not kept
        else:
            on += 1
            lost += any(rel for rel, _, _ in top) and not any(kept)
    return lost / max(on, 1), empty / max(off, 1)


def calibrate(dataset: pdata.Dataset, run: Sequence[Top], picked: Sequence[bool], *, background: bool = True) -> tuple[Calibration, float]:
    """The null weight that leaves the most off-topic questions empty at a floor losing at most
    0.01 of on-topic hit@3 (a logistic fit's likelihood is mostly about telling a query's own
    results apart, which the null cannot do), then slope and offset fitted for that weight."""
    best: tuple[float, float, Calibration, float] | None = None
    for null_weight in NULL_WEIGHTS if background else (0.0,):
        calibration, floor = _fit(dataset, run, picked, null_weight)
        empty = floor_outcome(dataset, run, picked, calibration, floor)[1]
        if best is None or empty > best[0] + 1e-9:
            best = (empty, null_weight, calibration, floor)
    assert best is not None
    return best[2], best[3]


def _fit(dataset: pdata.Dataset, run: Sequence[Top], picked: Sequence[bool], null_weight: float) -> tuple[Calibration, float]:
    rows = [(rel, e, null) for top, use in zip(run, picked, strict=True) if use for rel, e, null in top]
    y = np.array([float(rel) for rel, _, _ in rows])
    slope, offset = fit_logistic(np.array([[e - null_weight * null] for _, e, null in rows]), y)
    calibration = Calibration(float(slope), float(offset), null_weight)
    on = [top for q, top, use in zip(dataset.questions, run, picked, strict=True) if use and q.answer is not None]
    cut = cut_keeping((max(relevance_of(calibration, e, null) for rel, e, null in top if rel) for top in on
                       if any(rel for rel, _, _ in top)), len(on))
    ok = [f for f in FLOORS if f <= cut]  # the shipped floor is a round number of this grid
    return calibration, max(ok) if ok else FLOORS[0]


UNTHREADED = (0.0, 0.1, 0.2, 0.3, 0.4)


def floor_on_locomo() -> None:
    """The shipped floor on other stores, never tuned on: LoCoMo dev's conversations. Does it
    drop evidence from a question's top 10, and does it empty the desk's off-topic questions?"""
    from fourfold.ranking import RELEVANCE_FLOOR

    dataset = ldata.load(locomo.default_data_path())
    embedder = CachedEmbedder(CACHE_DIR / "locomo-lab-minilm.npz")
    plain: list[tuple[ldata.Question, list[str]]] = []
    floored: list[tuple[ldata.Question, list[str]]] = []
    empty = asked = 0
    for conversation in dataset.conversations:
        lt = _memory(embedder)
        locomo.remember_conversation(lt, conversation, {})
        scope = conversation.sample_id
        for q in conversation.questions:
            hits = lt.recall(q.question, scope=scope, k=10)
            plain.append((q, [str(h.metadata["dia_id"]) for h in hits]))
            floored.append((q, [str(h.metadata["dia_id"]) for h in hits if h.score >= RELEVANCE_FLOOR]))
        for text in pdata.OFF_TOPIC:
            asked += 1
            empty += not lt.recall(text, scope=scope, k=10, min_score=RELEVANCE_FLOOR)
    embedder.save()
    print(f"LoCoMo dev (not tuned on), floor {RELEVANCE_FLOOR}: R@10 cat1-4 {r_at(plain, 10):.4f} without it, "
          f"{r_at(floored, 10):.4f} with it; the desk's off-topic questions asked of a conversation left empty: "
          f"{empty / asked:.3f} ({asked})")


def unthreaded_context_cv() -> None:
    """`Weights.context_unthreaded` by attribute-type folds of the desk (LoCoMo's turns all
    have threads, so it cannot move LoCoMo)."""
    dataset = pdata.dev_half(pdata.build())
    embedder = CachedEmbedder(CACHE_DIR / "paraphrase-minilm.npz")
    on = dataset.on_topic()
    hits: dict[float, np.ndarray[Any, Any]] = {}
    for context in UNTHREADED:
        lt = _memory(embedder)
        lt.weights = Weights(context_unthreaded=context)
        for customer in dataset.customers:
            lt.remember_many([{"text": t, "scope": customer.id} for t in customer.memories])
        hits[context] = np.array([q.answer in [h.text for h in lt.recall(q.text, scope=q.customer, k=3)] for q in on])
    type_folds = pdata.dev_folds(FOLDS)
    fold = np.array([next(i for i, types in enumerate(type_folds) if q.type in types) for q in on])
    held = np.zeros(len(on), dtype=bool)
    for i in range(FOLDS):
        best = max(UNTHREADED, key=lambda c: float(hits[c][fold != i].mean()))
        held[fold == i] = hits[best][fold == i]
        print(f"fold {i}: chosen context_unthreaded={best}")
    print("on all dev: " + ", ".join(f"{c}: {hits[c].mean():.3f}" for c in UNTHREADED)
          + f"; held-out on-topic hit@3 {held.mean():.3f}\n")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    # --calibration-only: the default weights alone (the fusion grid takes minutes)
    quick = "--calibration-only" in args
    if not quick:
        unthreaded_context_cv()
    grid = [(Weights().lexical, Weights().speaker)] if quick else list(itertools.product(LEXICAL, SPEAKER))
    weights = [Weights(lexical=lex, speaker=spk) for lex, spk in grid]
    convs, lruns = locomo_runs(weights)
    dataset, pruns = paraphrase_runs(weights)
    type_folds = pdata.dev_folds(FOLDS)
    all_types = set().union(*type_folds)
    # off-topic questions by their text (each is asked of several customers): a held-out
    # fold's off-topic wording was never calibrated on either
    off_texts = list(pdata.OFF_TOPIC)

    def fold_of(q: pdata.Question) -> int:
        if q.kind == "unrelated":
            return off_texts.index(q.text) % FOLDS
        # on-topic and unanswerable questions go with their attribute type
        return next(f for f, types in enumerate(type_folds) if q.type in types)

    folds_of_q = [fold_of(q) for q in dataset.questions]
    print("| lexical | speaker | LoCoMo R@5 | LoCoMo R@10 | paraphrase hit@3 | LoCoMo cat5 R@10 (not used) |\n|---|---|---|---|---|---|")
    for g, (lex, spk) in enumerate(grid):
        everything = [r for c in convs for r in lruns[g][c]]
        print(f"| {lex} | {spk} | {r_at(everything, 5):.4f} | {r_at(everything, 10):.4f} | "
              f"{hit3(dataset, pruns[g], all_types):.4f} | {r_at(everything, 10, 'cat5'):.4f} |")
    held_l: list[tuple[ldata.Question, list[str]]] = []
    held_hits: list[bool] = []
    print()
    for i, (conv, types) in enumerate(zip(convs, type_folds, strict=True)):
        train_c, train_t = [c for c in convs if c != conv], all_types - types
        best = max(range(len(grid)), key=lambda g: r_at([r for c in train_c for r in lruns[g][c]], 10) + hit3(dataset, pruns[g], train_t))
        held_l += lruns[best][conv]
        held_hits += [any(rel for rel, _, _ in top) for q, top in zip(dataset.questions, pruns[best], strict=True) if q.answer is not None and q.type in types]
        print(f"fold {i}: held out {conv} and types {sorted(types)}; chosen lexical={grid[best][0]} speaker={grid[best][1]}")
    final = max(range(len(grid)), key=lambda g: r_at([r for c in convs for r in lruns[g][c]], 10) + hit3(dataset, pruns[g], all_types))
    print(f"\nCV fusion: held-out LoCoMo R@5={r_at(held_l, 5):.4f} R@10={r_at(held_l, 10):.4f}, "
          f"paraphrase hit@3={sum(held_hits) / len(held_hits):.4f}; on all dev: lexical={grid[final][0]} speaker={grid[final][1]}")
    run = pruns[final]
    for background in (False, True):
        print(f"\ncalibration {'with' if background else 'without'} the query's background similarity:")
        lost_sum = empty_sum = 0.0
        for i in range(FOLDS):
            calibration, floor = calibrate(dataset, run, [f != i for f in folds_of_q], background=background)
            lost, empty = floor_outcome(dataset, run, [f == i for f in folds_of_q], calibration, floor)
            lost_sum, empty_sum = lost_sum + lost, empty_sum + empty
            print(f"fold {i}: {_show(calibration)} floor={floor}: held-out hit@3 lost={lost:.4f} off-topic empty={empty:.3f}")
        calibration, floor = calibrate(dataset, run, [True] * len(run), background=background)
        print(f"CV floor: held-out on-topic hit@3 lost={lost_sum / FOLDS:.4f}, off-topic empty={empty_sum / FOLDS:.3f}; "
              f"on all dev: {_show(calibration)} floor={floor}")
        print("the trade-off on all dev (floor: on-topic hit@3 lost, off-topic empty):")
        for f in (0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4):
            lost, empty = floor_outcome(dataset, run, [True] * len(run), calibration, f)
            print(f"  {f}: {lost:.4f}, {empty:.3f}")
    print()
    floor_on_locomo()
    return 0


def _show(c: Calibration) -> str:
    return f"slope={c.slope:.2f} offset={c.offset:.2f} null={c.null:.2f}"


if __name__ == "__main__":
    sys.exit(main())
