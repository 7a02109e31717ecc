"""The ranking levers measured on the dev sets, each against the shipped ranker.

For every question of the paraphrase set and of LoCoMo dev this takes the ranker's inputs
once from the library's own scope indexes (cosines with and without neighbours' context,
lexical shares, the speaker flag, the scope's vectors), then ranks them each lever's way:

- fusion: the lexical share's weight and power, a threshold on it, rank fusion (RRF);
- the dense side: a mix of the memory's own cosine with its context-blended one;
- lexical statistics: document frequency counted on a memory's own words, or fractionally;
- pseudo-relevance feedback: the query vector moved towards its top results (Rocchio);
- query expansion from the scope's own vocabulary: the scope's words closest to the query (by
  MiniLM cosine of word and query) lift the memories holding them (desk only);
- the int8 query embedding (`OnnxMiniLMInt8Embedder`) in place of the fp32 one;
- typicality (hubness reduction, `fourfold.ranking.typicality`): a memory's mean cosine to the
  rest of its scope taken off its evidence, its weight chosen by cross-validation on the dev
  sets only (LoCoMo dev by conversation, the paraphrase set's dev half by attribute type).

    python benchmarks/recall_levers.py [--typicality-only]

Reads private parts of `ScopeIndex` (it is a lab, not an API), on cached MiniLM vectors.
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
from fourfold.text.bm25 import bm25_idf

Row = dict[str, Any]
Score = Callable[[Row], Any]


def _lexical(ix: Any, tokens: list[str], df: dict[str, float]) -> Any:
    """Lexical shares of every record with document frequencies `df` instead of the index's."""
    n, bm = len(ix), ix.bm25
    out, avg = np.zeros(n), bm._total_len / max(n, 1)
    for t in tokens:
        for d, tf in bm._postings.get(t, {}).items():
            norm = bm.k1 * (1 - bm.b + bm.b * bm._doc_len[d] / avg)
            out[int(d)] += bm25_idf(n, df.get(t, 0.0)) * tf * (bm.k1 + 1) / (tf + norm)
    best = (bm.k1 + 1) * sum(bm25_idf(n, df.get(t, 0.0)) for t in tokens)
    return out / best if best > 0 else out


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


def features(lt: LongTermMemory, scope: str, text: str, vector: Any) -> Row:
    """`base_features` and lexical shares under other document frequencies."""
    out = base_features(lt, scope, text, vector)
    ix = lt._index(scope)
    own_df: dict[str, float] = {}
    for tl in ix._token_lists:
        for t in set(tl):
            own_df[t] = own_df.get(t, 0.0) + 1
    frac_df: dict[str, float] = {}
    for i in range(len(ix)):
        for t, w in ix.bm25._doc_terms[str(i)].items():
            frac_df[t] = frac_df.get(t, 0.0) + min(1.0, w)
    out["lex_owndf"] = _lexical(ix, out["tokens"], own_df)
    out["lex_fracdf"] = _lexical(ix, out["tokens"], frac_df)
    return out


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


def rrf(k: int) -> Score:
    def score(f: Row) -> Any:
        n = len(f["dense"])
        rd, rl = np.empty(n), np.empty(n)
        rd[np.argsort(-f["dense"])] = np.arange(n)
        rl[np.argsort(-f["raw"], kind="stable")] = np.arange(n)
        return 1 / (k + rd) + np.where(f["raw"] > 0, 1 / (k + rl), 0) + 0.01 * f["named"]
    return score


def prf(m: int, beta: float) -> Score:
    base = hybrid()

    def score(f: Row) -> Any:
        q = f["q"] + beta * f["O"][top(base(f), m)].sum(0)
        q = q / np.linalg.norm(q)
        return (f["M"] @ q).astype(np.float64) + 1.75 * f["lex"] + 0.15 * f["named"]
    return score


def expansion(rows: list[tuple[pdata.Question, Row]], embedder: CachedEmbedder) -> None:
    """Attach to each row its scope's words (unstemmed), their cosines to the query, and where they occur."""
    words = sorted({w for _, f in rows for t in f["texts"] for w in tokenize(t, stem=False)})
    vectors = dict(zip(words, embedder.embed_many(words), strict=True))
    for _, f in rows:
        where: dict[str, set[int]] = {}
        for i, t in enumerate(f["texts"]):
            for w in tokenize(t, stem=False):
                where.setdefault(w, set()).add(i)
        vocab = list(where)
        f["words"] = (vocab, np.stack([vectors[w] for w in vocab]) @ f["q"], where)


def expanded(tau: float, gamma: float, m: int) -> Score:
    base = hybrid()

    def score(f: Row) -> Any:
        vocab, cos, where = f["words"]
        lift = np.zeros(len(f["texts"]))
        for j in np.argsort(-cos)[:m]:
            if cos[j] < tau:
                break
            for i in where[vocab[j]]:
                lift[i] = max(lift[i], cos[j])
        return base(f) + gamma * lift
    return score


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
    only = "--typicality-only" in (sys.argv[1:] if argv is None else argv)
    desk, loc, emb, _ = dev_rows(features)
    on = [q for q, _ in desk]
    typicality_cv(desk, loc)
    if only:
        return 0
    levers: list[tuple[str, Score]] = [
        ("ranker before typicality (lexical 1.75)", hybrid()),
        ("shipped ranker (typicality 0.3)", hybrid(typical=0.3)),
        ("dense alone (own cosine)", lambda f: f["own"]),
        ("dense with neighbours' context", lambda f: f["dense"]),
        ("lexical weight 1.0", hybrid(1.0)), ("lexical weight 2.5", hybrid(2.5)),
        ("lexical share squared, weight 3.5", hybrid(3.5, power=2.0)),
        ("lexical share minus 0.05", hybrid(minus=0.05)),
        ("RRF k=60", rrf(60)), ("RRF k=10", rrf(10)),
        ("dense: half own, half blended", hybrid(a=0.5)),
        ("dense: half own, half blended, lexical 1.5", hybrid(1.5, a=0.5)),
        ("df of own words", hybrid(key="lex_owndf")), ("fractional df", hybrid(key="lex_fracdf")),
        ("fractional df, half own dense, lexical 1.25", hybrid(1.25, key="lex_fracdf", a=0.5)),
        ("PRF top 1, beta 0.1", prf(1, 0.1)), ("PRF top 2, beta 0.2", prf(2, 0.2)), ("PRF top 3, beta 0.2", prf(3, 0.2)),
    ]
    print("| lever | desk zero-overlap hit@3 | desk overlap hit@3 | desk all hit@3 | LoCoMo R@5 | LoCoMo R@10 |\n|---|---|---|---|---|---|")
    for name, score in levers:
        d, (r5, r10) = desk_hits(desk, score), locomo_recall(loc, score)
        print(f"| {name} | {d[0]:.3f} | {d[1]:.3f} | {d[2]:.3f} | {r5:.4f} | {r10:.4f} |")
    expansion(desk, emb)
    emb.save()
    for tau, gamma, m in ((0.3, 0.2, 3), (0.4, 0.2, 3), (0.5, 0.2, 3), (0.5, 0.5, 1), (0.4, 1.0, 3)):
        d = desk_hits(desk, expanded(tau, gamma, m))
        print(f"| query expansion: {m} scope words with cosine ≥ {tau}, weight {gamma} | {d[0]:.3f} | {d[1]:.3f} | {d[2]:.3f} | | |")
    from fourfold.embeddings.onnx import OnnxMiniLMInt8Embedder

    int8 = OnnxMiniLMInt8Embedder().embed_many([q.text for q in on])
    swapped = [(q, {**f, "dense": (f["M"] @ v).astype(np.float64), "own": (f["O"] @ v).astype(np.float64)})
               for (q, f), v in zip(desk, int8, strict=True)]
    for name, score in (("shipped ranker, int8 queries", hybrid()), ("dense alone, int8 queries", lambda f: f["own"])):
        d = desk_hits(swapped, score)
        print(f"| {name} | {d[0]:.3f} | {d[1]:.3f} | {d[2]:.3f} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
