"""Typicality's weight in the ranker, chosen by cross-validation on the dev sets.

For every question of the paraphrase set and of LoCoMo dev this takes the ranker's inputs once
from the library's own scope indexes (cosines with neighbours' context, lexical shares, the
speaker flag, the scope's vectors), then ranks them with each candidate weight of typicality
(hubness reduction, `fourfold.ranking.typicality`: a memory's mean cosine to the rest of its
scope taken off its evidence). The weight is chosen by 5-fold cross-validation on the dev sets
only (LoCoMo dev by conversation, the paraphrase set's dev half by attribute type) and scored
once on the paraphrase test half.

    python benchmarks/typicality_cv.py

Reads private parts of `ScopeIndex` (it measures the ranker's inputs), on cached MiniLM vectors.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

import _locomo_data as ldata
import _paraphrase_data as pdata
import locomo
from _embed_cache import CACHE_DIR, CachedEmbedder
from fourfold.longterm import LongTermMemory
from fourfold.ranking import lexical_share, typicality
from fourfold.stores import InMemoryVectorStore
from fourfold.text import tokenize

Row = dict[str, Any]
Score = Callable[[Row], Any]


def base_features(lt: LongTermMemory, scope: str, text: str, vector: Any) -> Row:
    """The shipped ranker's inputs for one question in one scope, with the scope's vectors and texts."""
    ix = lt._index(scope)
    tokens = tokenize(text)
    by_doc = ix.bm25.scores(tokens)
    raw = np.array([by_doc.get(str(i), 0.0) for i in range(len(ix))])
    named = np.zeros(len(ix))
    for t in set(tokens):
        named[ix._by_speaker.get(t, [])] = 1.0
    return {
        "dense": (ix.matrix @ vector).astype(np.float64), "own": (ix._own @ vector).astype(np.float64),
        "lex": lexical_share(raw, ix.bm25.best_possible(tokens)), "raw": raw, "named": named,
        "q": vector, "M": ix.matrix, "O": ix._own, "typical": typicality(ix.matrix), "tokens": tokens,
        "texts": [r.text for r in ix.records], "dia": [r.metadata.get("dia_id") for r in ix.records],
    }


def top(scores: Any, k: int) -> Any:
    return np.lexsort((-np.arange(len(scores)), -scores))[:k]


def desk_hits(rows: list[tuple[pdata.Question, Row]], score: Score) -> tuple[float, float, float]:
    par: list[bool] = []
    ovl: list[bool] = []
    for q, f in rows:
        hit = any(f["texts"][i] == q.answer for i in top(score(f), 3))
        (par if q.paraphrase else ovl).append(hit)
    return float(np.mean(par)), float(np.mean(ovl)), float(np.mean(par + ovl))


def locomo_recall(rows: list[tuple[ldata.Question, Row]], score: Score) -> tuple[float, float]:
    r5, r10 = [], []
    for q, f in rows:
        ranked = [f["dia"][i] for i in top(score(f), 10)]
        r5.append(ldata.turn_recall(ranked, q.evidence, 5))
        r10.append(ldata.turn_recall(ranked, q.evidence, 10))
    return float(np.mean(r5)), float(np.mean(r10))


def hybrid(
    w: float = 1.75, key: str = "lex", a: float = 0.0, power: float = 1.0, minus: float = 0.0, typical: float = 0.0
) -> Score:
    """The ranker's sum; `typical=0` is the ranker before typicality (the levers' baseline)."""
    def score(f: Row) -> Any:
        lexical = np.clip(f[key] - minus, 0, None) ** power
        return (1 - a) * f["dense"] + a * f["own"] + w * lexical + 0.15 * f["named"] - typical * f["typical"]
    return score


TYPICAL = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)


def typicality_cv(desk: list[tuple[pdata.Question, Row]], loc: list[tuple[ldata.Question, Row]]) -> None:
    """Typicality's weight by 5-fold cross-validation on dev: fold i holds out LoCoMo dev's
    conversation i and the i-th fifth of the paraphrase dev half's attribute types; on the
    other folds the weight with the best LoCoMo R@10 + desk hit@3 is chosen."""
    dev = [(q, f) for q, f in desk if pdata.split_of(q) == "dev"]
    types = sorted({q.type for q, _ in dev})
    type_fold = {t: i % 5 for i, t in enumerate(types)}
    convs = sorted({q.sample_id for q, _ in loc})
    conv_fold = {c: i % 5 for i, c in enumerate(convs)}
    print("\n| typical | desk dev zero-overlap hit@3 | desk dev overlap hit@3 | desk dev all hit@3 | LoCoMo R@5 | LoCoMo R@10 |\n|---|---|---|---|---|---|")
    for beta in TYPICAL:
        d, (r5, r10) = desk_hits(dev, hybrid(typical=beta)), locomo_recall(loc, hybrid(typical=beta))
        print(f"| {beta} | {d[0]:.3f} | {d[1]:.3f} | {d[2]:.3f} | {r5:.4f} | {r10:.4f} |")

    def objective(fold: int | None, beta: float, held: bool) -> float:
        pick_d = [(q, f) for q, f in dev if (type_fold[q.type] == fold) == held]
        pick_l = [(q, f) for q, f in loc if (conv_fold[q.sample_id] == fold) == held]
        return desk_hits(pick_d, hybrid(typical=beta))[2] + locomo_recall(pick_l, hybrid(typical=beta))[1]

    held_d: list[tuple[pdata.Question, Row, float]] = []
    held_l: list[tuple[ldata.Question, Row, float]] = []
    for i in range(5):
        beta = max(TYPICAL, key=lambda b: objective(i, b, held=False))
        held_d += [(q, f, beta) for q, f in dev if type_fold[q.type] == i]
        held_l += [(q, f, beta) for q, f in loc if conv_fold[q.sample_id] == i]
        print(f"fold {i}: held out {convs[i]} and types {[t for t in types if type_fold[t] == i]}; chosen typical={beta}")
    d_hit = np.mean([any(f["texts"][i] == q.answer for i in top(hybrid(typical=b)(f), 3)) for q, f, b in held_d])
    d_base = desk_hits([(q, f) for q, f, _ in held_d], hybrid())[2]
    l_r = [locomo_recall([(q, f)], hybrid(typical=b)) for q, f, b in held_l]
    final = max(TYPICAL, key=lambda b: objective(None, b, held=False))
    print(f"CV typicality: held-out desk dev hit@3={d_hit:.4f} (without typicality {d_base:.4f}), "
          f"LoCoMo R@5={np.mean([r[0] for r in l_r]):.4f} R@10={np.mean([r[1] for r in l_r]):.4f}; on all dev: typical={final}")
    test = [(q, f) for q, f in desk if pdata.split_of(q) == "test"]
    for beta in (0.0, final):
        d = desk_hits(test, hybrid(typical=beta))
        print(f"desk test half (never tuned on), typical={beta}: zero-overlap {d[0]:.3f} overlap {d[1]:.3f} all {d[2]:.3f}; "
              f"dense alone all {desk_hits(test, lambda f: f['own'])[2]:.3f}")


Features = Callable[[LongTermMemory, str, str, Any], Row]


def dev_rows(
    feature: Features, *, with_locomo: bool = True
) -> tuple[list[tuple[pdata.Question, Row]], list[tuple[ldata.Question, Row]], CachedEmbedder, CachedEmbedder]:
    """`feature` rows of the paraphrase set's on-topic questions (one scope per customer) and of
    LoCoMo dev's questions of categories 1-4 (none without `with_locomo`), with the two cached
    embedders (saved)."""
    emb = CachedEmbedder(CACHE_DIR / "paraphrase-minilm.npz")
    dataset = pdata.build()
    lt = LongTermMemory(InMemoryVectorStore(embedder_identity=emb.identity), emb)
    for c in dataset.customers:
        lt.remember_many([{"text": t, "scope": c.id} for t in c.memories])
    on = dataset.on_topic()
    desk = [(q, feature(lt, q.customer, q.text, v)) for q, v in zip(on, emb.embed_many([q.text for q in on]), strict=True)]
    emb.save()
    lemb = CachedEmbedder(CACHE_DIR / "locomo-lab-minilm.npz")
    llt = LongTermMemory(InMemoryVectorStore(embedder_identity=lemb.identity), lemb)
    loc: list[tuple[ldata.Question, Row]] = []
    for conv in ldata.load(locomo.default_data_path()).conversations if with_locomo else ():
        locomo.remember_conversation(llt, conv, {})
        qs = [q for q in conv.questions if q.category != 5 and q.evidence]
        vs = lemb.embed_many([q.question for q in qs])
        loc += [(q, feature(llt, conv.sample_id, q.question, v)) for q, v in zip(qs, vs, strict=True)]
    lemb.save()
    return desk, loc, emb, lemb


def main(argv: list[str] | None = None) -> int:
    del argv  # no options
    desk, loc, _, _ = dev_rows(base_features)
    typicality_cv(desk, loc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
