"""Cross-validation of the ranker's settings on the dev sets: how `fourfold.ranking` was tuned.

Two sets, each split five ways: the LoCoMo dev split by conversation, the paraphrase set
(`_paraphrase_data`) by attribute type (a held-out fold's wording was never tuned on), its
off-topic questions round robin. Fold i holds out conversation i and type fold i together.

1. Fusion: for each (lexical, speaker) weight of the grid, the library's own recall ranks
   every question. On the four training folds the setting with the best LoCoMo R@10 (cat1-4)
   plus paraphrase hit@3 is chosen and scored on the held-out fold.
2. Calibration and floor: with the weights chosen on all of dev, a logistic curve is fitted to
   the top 3 results of the training folds' paraphrase questions (relevant: the memory asked
   about; every result of an off-topic question is irrelevant), and the floor is the highest
   relevance whose training on-topic hit@3 drops by at most 0.01. Both are scored held out.

    python benchmarks/recall_cv.py

Uses cached MiniLM vectors (`_embed_cache`), so it never waits on the model after a first run.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

import _locomo_data as ldata
import _paraphrase_data as pdata
import locomo
from _embed_cache import CACHE_DIR, CachedEmbedder
from fourfold.longterm import LongTermMemory, Weights
from fourfold.ranking import Fusion
from fourfold.stores import InMemoryVectorStore

LEXICAL = (1.0, 1.25, 1.5, 1.75, 2.0, 2.5)
SPEAKER = (0.1, 0.15, 0.2, 0.25, 0.35, 0.5)
FLOORS = tuple(round(x, 2) for x in np.arange(0.02, 0.40, 0.01))
FOLDS = 5


def _memory(embedder: CachedEmbedder) -> LongTermMemory:
    return LongTermMemory(InMemoryVectorStore(embedder_identity=embedder.identity), embedder)


def _evidence(score: float) -> float:
    """The fused evidence behind a relevance of the default calibration."""
    f = Fusion()
    return (math.log(score / (1.0 - score)) - f.offset) / f.slope


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


def paraphrase_runs(weights: Sequence[Weights]) -> tuple[pdata.Dataset, list[list[list[tuple[bool, float]]]]]:
    """Per weights, per question: its top 3 as (is the memory asked about, fused evidence)."""
    dataset = pdata.build()
    embedder = CachedEmbedder(CACHE_DIR / "paraphrase-minilm.npz")
    lt = _memory(embedder)
    for customer in dataset.customers:
        lt.remember_many([{"text": t, "scope": customer.id} for t in customer.memories])
    runs = []
    for w in weights:
        lt.weights = w
        runs.append([
            [(h.text == q.answer, _evidence(h.score)) for h in lt.recall(q.text, scope=q.customer, k=3)]
            for q in dataset.questions
        ])
    embedder.save()
    return dataset, runs


def r_at(results: Sequence[tuple[ldata.Question, list[str]]], k: int, group: str = "cat1-4") -> float:
    return ldata.score(results, [k])[group].recall[k]


def hit3(dataset: pdata.Dataset, run: Sequence[Sequence[tuple[bool, float]]], types: set[str]) -> float:
    got = [any(rel for rel, _ in top) for q, top in zip(dataset.questions, run, strict=True) if q.paraphrase and q.type in types]
    return sum(got) / len(got)


def fit_logistic(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> tuple[float, float]:
    """Slope and offset of P(y | x) by Newton's method (a tiny ridge keeps it finite)."""
    a = np.column_stack([x, np.ones(len(x))])
    w = np.zeros(2)
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-a @ w))
        hessian = (a * (p * (1 - p))[:, None]).T @ a + 1e-4 * np.eye(2)
        w -= np.linalg.solve(hessian, a.T @ (p - y) + 1e-4 * w)
    return float(w[0]), float(w[1])


def floor_outcome(
    dataset: pdata.Dataset, run: Sequence[Sequence[tuple[bool, float]]], picked: Sequence[bool],
    calibration: tuple[float, float], floor: float,
) -> tuple[float, float]:
    """(on-topic hit@3 lost to the floor, share of off-topic questions left empty) over `picked`."""
    slope, offset = calibration
    lost = on = empty = off = 0
    for q, top, use in zip(dataset.questions, run, picked, strict=True):
        if not use:
            continue
        kept = [rel for rel, e in top if 1.0 / (1.0 + math.exp(-(slope * e + offset))) >= floor]
        if q.answer is None:
            off += 1
            empty += not kept
        else:
            on += 1
            lost += any(rel for rel, _ in top) and not any(kept)
    return lost / max(on, 1), empty / max(off, 1)


def calibrate(dataset: pdata.Dataset, run: Sequence[Sequence[tuple[bool, float]]], picked: Sequence[bool]) -> tuple[tuple[float, float], float]:
    x = np.array([e for top, use in zip(run, picked, strict=True) if use for _, e in top])
    y = np.array([float(rel) for top, use in zip(run, picked, strict=True) if use for rel, _ in top])
    calibration = fit_logistic(x, y)
    ok = [f for f in FLOORS if floor_outcome(dataset, run, picked, calibration, f)[0] <= 0.01]
    return calibration, max(ok) if ok else FLOORS[0]


def main() -> int:
    grid = list(itertools.product(LEXICAL, SPEAKER))
    weights = [Weights(lexical=lex, speaker=spk) for lex, spk in grid]
    convs, lruns = locomo_runs(weights)
    dataset, pruns = paraphrase_runs(weights)
    type_folds = pdata.folds(FOLDS)
    all_types = set().union(*type_folds)
    off_ids = [i for i, q in enumerate(dataset.questions) if q.answer is None]
    off_fold = {i: n % FOLDS for n, i in enumerate(off_ids)}

    def fold_of(i: int, q: pdata.Question) -> int:
        return off_fold[i] if q.answer is None else next(f for f, types in enumerate(type_folds) if q.type in types)

    folds_of_q = [fold_of(i, q) for i, q in enumerate(dataset.questions)]
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
        held_hits += [any(rel for rel, _ in top) for q, top in zip(dataset.questions, pruns[best], strict=True) if q.paraphrase and q.type in types]
        print(f"fold {i}: held out {conv} and types {sorted(types)}; chosen lexical={grid[best][0]} speaker={grid[best][1]}")
    final = max(range(len(grid)), key=lambda g: r_at([r for c in convs for r in lruns[g][c]], 10) + hit3(dataset, pruns[g], all_types))
    print(f"\nCV fusion: held-out LoCoMo R@5={r_at(held_l, 5):.4f} R@10={r_at(held_l, 10):.4f}, "
          f"paraphrase hit@3={sum(held_hits) / len(held_hits):.4f}; on all dev: lexical={grid[final][0]} speaker={grid[final][1]}")
    run = pruns[final]
    lost_sum = empty_sum = 0.0
    for i in range(FOLDS):
        calibration, floor = calibrate(dataset, run, [f != i for f in folds_of_q])
        lost, empty = floor_outcome(dataset, run, [f == i for f in folds_of_q], calibration, floor)
        lost_sum, empty_sum = lost_sum + lost, empty_sum + empty
        print(f"fold {i}: slope={calibration[0]:.2f} offset={calibration[1]:.2f} floor={floor}: held-out hit@3 lost={lost:.4f} off-topic empty={empty:.3f}")
    calibration, floor = calibrate(dataset, run, [True] * len(run))
    print(f"CV floor: held-out on-topic hit@3 lost={lost_sum / FOLDS:.4f}, off-topic empty={empty_sum / FOLDS:.3f}; "
          f"on all dev: slope={calibration[0]:.2f} offset={calibration[1]:.2f} floor={floor}")
    print("\nthe trade-off on all dev (floor: on-topic hit@3 lost, off-topic empty):")
    for f in (0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3):
        lost, empty = floor_outcome(dataset, run, [True] * len(run), calibration, f)
        print(f"  {f}: {lost:.4f}, {empty:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
