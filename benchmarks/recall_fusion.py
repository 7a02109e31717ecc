"""Fusion that adapts to the evidence, measured on the dev sets (issue 19, goal 1).

For every question of the paraphrase set and of LoCoMo dev this takes the ranker's inputs once
from the library's scope indexes (`recall_levers.base_features`), then ranks them each lever's way:

- coverage: the lexical weight scaled by the share of the query's IDF mass the candidate
  holds (its own words, or its own and its neighbours'), or by the best candidate's share;
- agreement: one lexical weight when the lexical and the dense top candidates agree, another
  when they do not; or a lower one when dense has a clear winner (its margin over the second);
- gap: a lower lexical weight for candidates far below the query's best cosine;
- rank fusion blended with score fusion: the shipped sum plus lambda times the reciprocal rank
  fusion of the dense and lexical orders;
- pseudo-relevance feedback: the query vector moved towards its top hits (Rocchio);
- a linear fusion of all of these inputs learned on dev (listwise softmax), and the bound any
  fusion of them has on the desk (`oracle`: a question some input ranks in its top 3).

Each lever's setting is chosen by 5-fold cross-validation on the dev sets only
(`recall_feedback.cv`: fold i holds out LoCoMo dev's conversation i and the i-th fifth of the
paraphrase dev half's attribute types; objective desk dev hit@3 + LoCoMo R@10); the test half
is scored once, with the setting chosen on all of dev.

    python benchmarks/recall_fusion.py [--coverage] [--agreement] [--gap] [--rrf] [--prf] [--oracle] [--learned] [--misses]

Reads private parts of `ScopeIndex` (it is a lab, not an API), on cached MiniLM vectors.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

import _paraphrase_data as pdata
from fourfold.longterm import LongTermMemory
from recall_feedback import SHIPPED, Score, cv, desk_hit, loc_r10, shipped, top
from recall_feedback import rocchio as rocchio_
from recall_levers import base_features, dev_rows

Row = dict[str, Any]


def features(lt: LongTermMemory, scope: str, text: str, vector: Any) -> Row:
    """`base_features` and, per query word (once each), its IDF and which memories hold it:
    with their neighbours' context words (`held`) and in their own text (`own_held`)."""
    out = base_features(lt, scope, text, vector)
    ix = lt._index(scope)
    bm = ix.bm25
    words = list(dict.fromkeys(out["tokens"]))
    n = len(ix)
    idf = np.array([bm.idf(t) for t in words])
    held = np.zeros((n, len(words)))
    own_held = np.zeros((n, len(words)))
    own = [set(tl) for tl in ix._token_lists]
    for j, t in enumerate(words):
        for d in bm._postings.get(t, {}):
            held[int(d), j] = 1.0
        for i in range(n):
            own_held[i, j] = float(t in own[i])
    out["idf"], out["held"], out["own_held"] = idf, held, own_held
    return out


def _coverage(f: Row, key: str) -> Any:
    mass = f["idf"].sum()
    return (f[key] @ f["idf"]) / mass if mass > 0 else np.zeros(len(f["dense"]))


def rest(f: Row) -> Any:
    """The shipped sum without its lexical part."""
    return f["dense"] + SHIPPED.boost * f["named"] - SHIPPED.typical * f["typical"]


def coverage(w: float, p: float, *, key: str = "held") -> Score:
    """Lexical part w * share * coverage^p, coverage the candidate's share of the query's IDF mass."""
    def score(f: Row) -> Any:
        return rest(f) + w * f["lex"] * _coverage(f, key) ** p
    return score


def best_coverage(w: float, p: float) -> Score:
    """Lexical part w * share * (the best candidate's coverage)^p: one weight per query."""
    def score(f: Row) -> Any:
        c = _coverage(f, "held")
        return rest(f) + w * f["lex"] * (c.max() if len(c) else 0.0) ** p
    return score


def agreement(agree: float, disagree: float) -> Score:
    """Lexical weight `agree` when the top candidate by lexical share is dense's top, else `disagree`."""
    def score(f: Row) -> Any:
        if not f["lex"].any():
            return rest(f)
        same = int(np.argmax(f["lex"])) == int(np.argmax(f["dense"]))
        return rest(f) + (agree if same else disagree) * f["lex"]
    return score


def dense_margin(margin: float, low: float) -> Score:
    """Lexical weight `low` (else the shipped one) when dense's top cosine leads the second by more than `margin`."""
    def score(f: Row) -> Any:
        d = np.sort(f["dense"])
        clear = len(d) > 1 and d[-1] - d[-2] > margin
        return rest(f) + (low if clear else SHIPPED.lexical) * f["lex"]
    return score


def dense_gap(delta: float, low: float) -> Score:
    """The shipped lexical weight for candidates whose cosine is within `delta` of the query's best, `low` for the rest."""
    def score(f: Row) -> Any:
        near = f["dense"] >= f["dense"].max() - delta
        return rest(f) + np.where(near, SHIPPED.lexical, low) * f["lex"]
    return score


def best_cosine(f: Row) -> Any:
    """The shipped sum with the larger of the memory's own and its context-blended cosine."""
    return shipped(f) + np.maximum(f["own"] - f["dense"], 0.0)


def _ranks(values: Any) -> Any:
    out = np.empty(len(values))
    out[np.lexsort((-np.arange(len(values)), -values))] = np.arange(len(values))
    return out


def rrf_blend(lam: float, k: float) -> Score:
    """The shipped sum plus lam * (1/(k + dense rank) + 1/(k + lexical rank)), ranks from 1; a
    candidate with no lexical share has no lexical term."""
    def score(f: Row) -> Any:
        r = 1.0 / (k + 1 + _ranks(f["dense"])) + np.where(f["lex"] > 0, 1.0 / (k + 1 + _ranks(f["lex"])), 0.0)
        return shipped(f) + lam * r
    return score


def oracle(desk: list[tuple[pdata.Question, Row]]) -> None:
    """How far any fusion of these inputs could go: the share of on-topic questions that the
    shipped ranker, dense alone (own or blended cosine) or BM25 puts in its top 3, per half."""
    rankers: dict[str, Score] = {"shipped": shipped, "own": lambda f: f["own"], "blended": lambda f: f["dense"],
                                 "bm25": lambda f: np.where(f["raw"] > 0, f["raw"], -np.inf)}
    print("\n| half | questions | shipped | dense alone | any of shipped, dense (own or blended), BM25 | needed (dense + 0.02) |\n|---|---|---|---|---|---|")
    for half in ("dev", "test"):
        rows = [(q, f) for q, f in desk if pdata.split_of(q) == half]
        hit = {name: np.array([desk_hit(q, f, s) for q, f in rows]) for name, s in rankers.items()}
        union = np.logical_or.reduce(list(hit.values()))
        print(f"| {half} | {len(rows)} | {hit['shipped'].mean():.3f} | {hit['own'].mean():.3f} | {union.mean():.3f} "
              f"| {hit['own'].mean() + 0.02:.3f} |")


FEATURES = ("dense", "own", "lex", "lex_own", "named", "typical", "lex_agree", "rr_dense", "rr_lex")


def feature_matrix(f: Row) -> Any:
    """Per candidate: the shipped inputs, the lexical share split by whether the candidate's own
    words hold the query's (else only its neighbours' do), the share when the two sides' top
    candidates agree, and reciprocal ranks (k = 5) of the dense and lexical orders."""
    if "X" not in f:
        owncov = _coverage(f, "own_held")
        agree = float(f["lex"].any() and int(np.argmax(f["lex"])) == int(np.argmax(f["dense"])))
        cols = {"dense": f["dense"], "own": f["own"], "lex": f["lex"], "lex_own": f["lex"] * owncov, "named": f["named"],
                "typical": f["typical"], "lex_agree": f["lex"] * agree, "rr_dense": 1.0 / (6 + _ranks(f["dense"])),
                "rr_lex": np.where(f["lex"] > 0, 1.0 / (6 + _ranks(f["lex"])), 0.0)}
        f["X"] = np.column_stack([cols[c] for c in FEATURES])
    return f["X"]


def fit_linear(rows: Sequence[tuple[Sequence[int], Any]], weights: Sequence[float], ridge: float) -> Any:
    """Weights of a linear score by listwise softmax cross-entropy (each question's relevant
    candidates against its scope), the dense weight fixed at 1 (the scale), L2 towards the
    shipped weights."""
    from scipy.optimize import minimize

    start = np.array([1.0, 0.0, SHIPPED.lexical, 0.0, SHIPPED.boost, -SHIPPED.typical, 0.0, 0.0, 0.0])
    temp = 20.0  # the softmax's inverse temperature: the shipped sum's spread is ~0.1

    def loss(w_rest: Any) -> tuple[float, Any]:
        w = np.concatenate([[1.0], w_rest])
        total, grad = 0.0, np.zeros_like(w)
        for (relevant, x), weight in zip(rows, weights, strict=True):
            z = temp * (x @ w)
            z -= z.max()
            p = np.exp(z)
            p /= p.sum()
            total -= weight * float(np.mean(np.log(p[list(relevant)] + 1e-300)))
            grad -= weight * temp * (x[list(relevant)].mean(0) - p @ x)
        total += ridge * float(((w - start) ** 2).sum())
        grad += 2 * ridge * (w - start)
        return total, grad[1:]

    found = minimize(loss, start[1:], jac=True, method="L-BFGS-B")
    return np.concatenate([[1.0], found.x])


def learned(desk: list[tuple[pdata.Question, Row]], loc: list[tuple[Any, Row]]) -> None:
    """A linear fusion of `FEATURES` fitted on dev (desk dev half and LoCoMo dev, equal weight
    each), 5-fold CV as `recall_feedback.cv` (the ridge chosen inside), then once on the test half."""
    dev = [(q, f) for q, f in desk if pdata.split_of(q) == "dev"]
    test = [(q, f) for q, f in desk if pdata.split_of(q) == "test"]
    type_fold = {t: i for i, fold in enumerate(pdata.dev_folds(5)) for t in fold}
    convs = sorted({q.sample_id for q, _ in loc})
    conv_fold = {c: i % 5 for i, c in enumerate(convs)}
    d_rows = [([f["texts"].index(q.answer)], feature_matrix(f)) for q, f in dev]
    l_rows = [([i for i, d in enumerate(f["dia"]) if d in set(q.evidence)], feature_matrix(f)) for q, f in loc]
    keep_l = [bool(r[0]) for r in l_rows]
    dfold = np.array([type_fold[q.type] for q, _ in dev])
    lfold = np.array([conv_fold[q.sample_id] for q, _ in loc])

    def fit(md: Any, ml: Any, ridge: float) -> Any:
        rows = [r for r, m in zip(d_rows, md, strict=True) if m] + [r for r, m, k in zip(l_rows, ml, keep_l, strict=True) if m and k]
        nd, nl = int(md.sum()), sum(1 for m, k in zip(ml, keep_l, strict=True) if m and k)
        return fit_linear(rows, [1.0 / nd] * nd + [1.0 / nl] * nl, ridge)

    def score_of(w: Any) -> Score:
        return lambda f: feature_matrix(f) @ w

    def evaluate(w: Any, md: Any, ml: Any) -> tuple[float, float]:
        s = score_of(w)
        dh = np.mean([desk_hit(q, f, s) for (q, f), m in zip(dev, md, strict=True) if m])
        lr = np.mean([loc_r10(q, f, s) for (q, f), m in zip(loc, ml, strict=True) if m])
        return float(dh), float(lr)

    ridges = (0.01, 0.1, 1.0)
    print("\n### a linear fusion learned on dev\n")
    print("| ridge | weights (" + ", ".join(FEATURES) + ") | desk dev hit@3 | LoCoMo dev R@10 |\n|---|---|---|---|")
    every_d, every_l = np.ones(len(dev), bool), np.ones(len(loc), bool)
    fitted = {}
    for r in ridges:
        fitted[r] = fit(every_d, every_l, r)
        dh, lr = evaluate(fitted[r], every_d, every_l)
        print(f"| {r} | {', '.join(f'{x:.2f}' for x in fitted[r])} | {dh:.3f} | {lr:.4f} |")
    held_d, held_l = [], []
    for i in range(5):
        scores = {r: fit(dfold != i, lfold != i, r) for r in ridges}
        pick = max(ridges, key=lambda r: sum(evaluate(scores[r], dfold != i, lfold != i)))
        dh, lr = evaluate(scores[pick], dfold == i, lfold == i)
        held_d += [desk_hit(q, f, score_of(scores[pick])) for (q, f), m in zip(dev, dfold == i, strict=True) if m]
        held_l += [loc_r10(q, f, score_of(scores[pick])) for (q, f), m in zip(loc, lfold == i, strict=True) if m]
        print(f"fold {i}: ridge {pick}: held-out desk {dh:.3f}, LoCoMo R@10 {lr:.4f}")
    final = max(ridges, key=lambda r: sum(evaluate(fitted[r], every_d, every_l)))
    t = np.mean([desk_hit(q, f, score_of(fitted[final])) for q, f in test])
    t_dense = np.mean([desk_hit(q, f, lambda f: f["own"]) for q, f in test])
    print(f"held out: desk dev hit@3={np.mean(held_d):.3f}, LoCoMo R@10={np.mean(held_l):.4f}; on all dev: ridge {final}; "
          f"test half (once): {t:.3f} (dense alone {t_dense:.3f}, margin {t - t_dense:+.3f})")


def misses(desk: list[tuple[pdata.Question, Row]]) -> None:
    """The dev half's questions the shipped ranker gets wrong and dense alone right (and the reverse)."""
    dev = [(q, f) for q, f in desk if pdata.split_of(q) == "dev"]
    for title, want_ship, want_dense in (("lost by the hybrid", False, True), ("won by the hybrid", True, False)):
        rows = [(q, f) for q, f in dev if desk_hit(q, f, shipped) == want_ship and desk_hit(q, f, lambda f: f["own"]) == want_dense]
        print(f"\n### {title}: {len(rows)}\n")
        for q, f in rows[:25]:
            a = f["texts"].index(q.answer)
            order = list(top(shipped(f), len(f["texts"])))
            print(f"- [{q.type}] {q.text!r} -> {q.answer!r} (rank {order.index(a) + 1}/{len(order)})")
            for i in order[:4]:
                mark = "*" if i == a else " "
                print(f"   {mark} dense {f['dense'][i]:.2f} own {f['own'][i]:.2f} lex {f['lex'][i]:.2f} "
                      f"cov {_coverage(f, 'held')[i]:.2f} owncov {_coverage(f, 'own_held')[i]:.2f} typ {f['typical'][i]:+.2f} {f['texts'][i]!r}")


def main(argv: list[str] | None = None) -> int:
    only = {a.lstrip("-") for a in (sys.argv[1:] if argv is None else argv)}
    if "misses" in only:  # the desk alone
        misses(dev_rows(features, with_locomo=False)[0])
        return 0
    desk, loc, _, _ = dev_rows(features)

    def want(name: str) -> bool:
        return not only or name in only

    if want("oracle"):
        oracle(desk)
    if want("learned"):
        learned(desk, loc)
    base: dict[str, Score] = {"shipped": shipped}
    if want("coverage"):
        grid = base | {f"share x coverage^{p} (context words), weight {w}": coverage(w, p)
                       for p in (0.5, 1.0, 2.0) for w in (1.75, 2.5, 3.5)}
        grid |= {f"share x coverage^{p} (own words), weight {w}": coverage(w, p, key="own_held")
                 for p in (0.5, 1.0) for w in (1.75, 2.5)}
        grid |= {f"share x best coverage^{p}, weight {w}": best_coverage(w, p) for p in (0.5, 1.0, 2.0) for w in (1.75, 2.5)}
        cv("lexical weight by the query's IDF mass matched", grid, desk, loc)
    if want("agreement"):
        grid = base | {f"agree {a}, disagree {d}": agreement(a, d)
                       for a in (1.75, 2.5) for d in (0.75, 1.0, 1.25, 1.5, 1.75) if (a, d) != (1.75, 1.75)}
        grid |= {f"dense margin > {m}: lexical {low}": dense_margin(m, low) for m in (0.05, 0.1, 0.15, 0.2) for low in (0.75, 1.25)}
        cv("lexical weight by agreement of the two sides", grid, desk, loc)
    if want("gap"):
        grid = base | {f"lexical {low} beyond {delta} below the best cosine": dense_gap(delta, low)
                       for delta in (0.1, 0.15, 0.2, 0.3) for low in (0.75, 1.25)}
        grid["max(own, blended) cosine"] = best_cosine
        cv("lexical weight by the candidate's distance from the best cosine", grid, desk, loc)
    if want("rrf"):
        grid = base | {f"shipped + {lam} x RRF(k={k})": rrf_blend(lam, k) for k in (1, 5, 20, 60) for lam in (0.05, 0.1, 0.25, 0.5)}
        cv("rank fusion blended with score fusion", grid, desk, loc)
    if want("prf"):
        grid = base | {f"Rocchio top {k}, alpha {a}": rocchio_(k, a) for k in (1, 2, 3) for a in (0.1, 0.25)}
        grid |= {f"Rocchio top {k} by dense, alpha {a}": rocchio_(k, a, by="dense") for k in (1, 2, 3) for a in (0.1, 0.25)}
        cv("pseudo-relevance feedback", grid, desk, loc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
