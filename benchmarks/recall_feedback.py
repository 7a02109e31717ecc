"""Third-pass recall levers on the dev sets: dense pseudo-relevance feedback and memory-side context.

For every question of the paraphrase set and of LoCoMo dev this takes the ranker's inputs once
from the library's scope indexes (as `recall_levers.py` does), then ranks them each lever's way:

- (a) dense pseudo-relevance feedback inside the scope: Rocchio (the query moved towards the
  mean of its top k memories' vectors), or the shipped evidence plus each memory's cosine to the
  top-1 result, or to the lexical winners (the memories weighted by their lexical share);
- (b) memory-side context: a second vector of "attribute: text" where
  `fourfold.longterm.slots` reads an attribute from the memory, and a bonus when the question's
  attribute (slots run on the question) is the memory's.

Every lever's setting is chosen by 5-fold cross-validation on the dev sets only (fold i holds
out LoCoMo dev's conversation i and the i-th fifth of the paraphrase dev half's attribute
types); the test half is scored once, with the setting chosen on all of dev.

    python benchmarks/recall_feedback.py [--a] [--b] [--c | --mmr --csls --clauses --store --neighbours] [--misses]

(c) is what the misses suggested: maximal marginal relevance (several near-alike order
memories fill the top 3), hubness against the background texts (CSLS), a memory's best clause
(the desk's framing dilutes its content), closeness to the whole store's centroid, and what
the memory's nearest memories in other scopes are about (document expansion).

Reads private parts of `ScopeIndex` (it is a lab, not an API), on cached MiniLM vectors.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import _locomo_data as ldata
import _paraphrase_data as pdata
from _embed_cache import CachedEmbedder
from fourfold.longterm import LongTermMemory
from fourfold.longterm.slots import attribute_key, derived_key
from fourfold.ranking import Fusion
from recall_levers import base_features, dev_rows

Row = dict[str, Any]
Score = Callable[[Row], Any]


#: The desk's attribute types whose kind `fourfold.text.preferences.PREFERENCE_KEYS` lists
#: (contact channel, language, payment method, delivery, time of day / day of week).
LISTED = frozenset({"contact", "language", "payment", "delivery", "hours"})


def attribute(text: str) -> str | None:
    """The attribute `fourfold.longterm.slots` reads from a text (a listed kind first)."""
    return attribute_key(text) or derived_key(text)


def features(lt: LongTermMemory, scope: str, text: str, vector: Any) -> Row:
    """`recall_levers.base_features` and the attribute slots reads from the question."""
    return base_features(lt, scope, text, vector) | {"qattr": attribute(text)}


def top(scores: Any, k: int) -> Any:
    return np.lexsort((-np.arange(len(scores)), -scores))[:k]


#: The shipped weights (`fourfold.ranking.Fusion`): what the levers are measured against.
SHIPPED = Fusion()


def shipped(f: Row) -> Any:
    return f["dense"] + SHIPPED.lexical * f["lex"] + SHIPPED.boost * f["named"] - SHIPPED.typical * f["typical"]


def desk_hit(q: pdata.Question, f: Row, score: Score) -> bool:
    return any(f["texts"][i] == q.answer for i in top(score(f), 3))


def loc_r10(q: ldata.Question, f: Row, score: Score) -> float:
    return ldata.turn_recall([f["dia"][i] for i in top(score(f), 10)], q.evidence, 10)


# -- (a) pseudo-relevance feedback ---------------------------------------------------------------

def rocchio(k: int, alpha: float, *, by: str = "shipped") -> Score:
    """q' = q + alpha * mean of the top k memories' blended vectors (top by the shipped sum or
    by dense alone), then the shipped sum with q' in place of q."""
    def score(f: Row) -> Any:
        first = shipped(f) if by == "shipped" else f["dense"]
        q = f["q"] + alpha * f["M"][top(first, k)].mean(0)
        q = q / np.linalg.norm(q)
        return (f["M"] @ q).astype(np.float64) + 1.75 * f["lex"] + 0.15 * f["named"] - 0.2 * f["typical"]
    return score


def to_top1(gamma: float, *, by: str = "shipped") -> Score:
    """The shipped sum plus gamma times each memory's cosine to the top-1 result (by the shipped
    sum, or by dense alone); the top-1 itself gets the largest of the others' so it is not
    lifted by its own cosine of 1."""
    def score(f: Row) -> Any:
        base = shipped(f)
        j = int(top(base if by == "shipped" else f["dense"], 1)[0])
        sim = (f["M"] @ f["M"][j]).astype(np.float64)
        sim[j] = np.max(np.delete(sim, j)) if len(sim) > 1 else 0.0
        return base + gamma * sim
    return score


def to_lexical(gamma: float) -> Score:
    """The shipped sum plus gamma times each memory's cosine to the lexical winners' centroid
    (memories weighted by their lexical share; none: no change)."""
    def score(f: Row) -> Any:
        base = shipped(f)
        if not f["lex"].any():
            return base
        c = f["lex"] @ f["M"]
        return base + gamma * (f["M"] @ (c / np.linalg.norm(c))).astype(np.float64)
    return score


# -- (b) memory-side context ---------------------------------------------------------------------

def with_attribute(rows: Sequence[tuple[Any, Row]], embedder: CachedEmbedder) -> None:
    """Attach each row's scope's "attribute: text" vectors (the text's own vector where slots
    reads no attribute) and the memories' attributes."""
    texts = sorted({t for _, f in rows for t in f["texts"]})
    attrs = {t: attribute(t) for t in texts}
    keyed = [t for t in texts if attrs[t]]
    vecs = dict(zip(keyed, embedder.embed_many([f"{attrs[t].replace('_', ' ')}: {t}" for t in keyed]), strict=True))  # type: ignore[union-attr]
    for _, f in rows:
        f["attrs"] = [attrs[t] for t in f["texts"]]
        f["K"] = np.stack([vecs[t] if t in vecs else f["O"][i] for i, t in enumerate(f["texts"])])


def keyed_vector(w: float) -> Score:
    """The shipped sum with (1 - w) of the blended cosine and w of the "attribute: text" cosine."""
    def score(f: Row) -> Any:
        return shipped(f) + w * ((f["K"] @ f["q"]).astype(np.float64) - f["dense"])
    return score


def attribute_match(b: float) -> Score:
    """The shipped sum plus b where the question's attribute (slots on the question) is the memory's."""
    def score(f: Row) -> Any:
        same = np.array([a is not None and a == f["qattr"] for a in f["attrs"]], dtype=np.float64)
        return shipped(f) + b * same
    return score


# -- (c) what the misses suggest: redundancy in the top results -----------------------------------

def mmr(lam: float, *, depth: int = 10) -> Score:
    """Maximal marginal relevance over the shipped sum: the next result is the one whose sum
    minus lam times its largest cosine (own vectors) to the results already taken is highest,
    for the first `depth` places; the rest keep the shipped order. Returned as scores whose
    order is that ranking."""
    def score(f: Row) -> Any:
        base = shipped(f)
        n = len(base)
        left = list(top(base, n))
        taken: list[int] = []
        sims = (f["O"] @ f["O"].T).astype(np.float64)
        while left and len(taken) < depth:
            if taken:
                pen = sims[np.ix_(left, taken)].max(axis=1)
                j = left[int(np.argmax(base[left] - lam * pen))]
            else:
                j = left[0]
            taken.append(j)
            left.remove(j)
        out = np.empty(n)
        out[taken + left] = -np.arange(n, dtype=np.float64)
        return out
    return score


def with_hubness(rows: Sequence[tuple[Any, Row]], background: Any) -> None:
    """Attach each memory's mean cosine to its 3 and 10 nearest background texts
    (`fourfold.ranking.Background`: everyday statements and questions)."""
    for _, f in rows:
        sims = np.sort((f["M"] @ background.T).astype(np.float64), axis=1)
        f["hub3"], f["hub10"] = sims[:, -3:].mean(1), sims[:, -10:].mean(1)


def csls(k: int, w: float) -> Score:
    """The shipped sum minus w times each memory's closeness to its k nearest background texts
    (cross-domain similarity local scaling: a memory close to much unrelated prose is a hub)."""
    def score(f: Row) -> Any:
        return shipped(f) - w * f[f"hub{k}"]
    return score


_CLAUSE = re.compile(r"(?<=[.!?;:])\s+|,\s+(?=[a-z])")


def clauses(text: str) -> list[str]:
    """A memory's sentences and clauses (split after . ! ? ; : and before a lower-case word
    after a comma), those of at least two words."""
    return [c for c in (c.strip() for c in _CLAUSE.split(text)) if len(c.split()) >= 2]


def with_clauses(rows: Sequence[tuple[Any, Row]], embedder: CachedEmbedder) -> None:
    """Attach each memory's best clause cosine to the question (its own cosine where it has one clause)."""
    texts = sorted({t for _, f in rows for t in f["texts"]})
    parts = {t: clauses(t) for t in texts}
    todo = sorted({c for t in texts if len(parts[t]) > 1 for c in parts[t]})
    vecs = dict(zip(todo, embedder.embed_many(todo), strict=True))
    for _, f in rows:
        best = f["own"].copy()
        for i, t in enumerate(f["texts"]):
            if len(parts[t]) > 1:
                best[i] = max(best[i], float(np.max(np.stack([vecs[c] for c in parts[t]]) @ f["q"])))
        f["clause"] = best


def clause_dense(w: float) -> Score:
    """The shipped sum with w of the best clause's gain over the memory's own cosine added."""
    def score(f: Row) -> Any:
        return shipped(f) + w * (f["clause"] - f["own"])
    return score


def with_store_centroid(rows: Sequence[tuple[Any, Row]]) -> None:
    """Attach each memory's cosine to the unit mean of every scope's memories in the store
    (each scope counted once): closeness to what the whole store is about."""
    scopes = {id(f["M"]): f["M"] for _, f in rows}
    total = np.sum([m.astype(np.float64).sum(0) for m in scopes.values()], axis=0)
    centre = total / np.linalg.norm(total)
    for _, f in rows:
        f["store"] = (f["M"] @ centre).astype(np.float64)


def store_typical(w: float, *, scope: float = 0.2) -> Score:
    """The shipped sum with scope typicality at `scope` and w times closeness to the store's centroid taken off."""
    def score(f: Row) -> Any:
        return f["dense"] + 1.75 * f["lex"] + 0.15 * f["named"] - scope * f["typical"] - w * f["store"]
    return score


def with_store_neighbours(rows: Sequence[tuple[Any, Row]], ks: Sequence[int] = (3, 10)) -> None:
    """Attach each memory's k nearest memories of *other* scopes (own vectors), as the unit mean
    of their vectors: what memories like it elsewhere in the store are about (document
    expansion by the cluster hypothesis)."""
    scopes = {id(f["O"]): f["O"] for _, f in rows}
    keys = list(scopes)
    allv = np.concatenate([scopes[k] for k in keys]).astype(np.float32)
    owner = np.concatenate([np.full(len(scopes[k]), i) for i, k in enumerate(keys)])
    cents: dict[int, dict[int, Any]] = {k: {} for k in ks}
    for i, key in enumerate(keys):
        sims = scopes[key].astype(np.float32) @ allv.T
        sims[:, owner == i] = -np.inf
        order = np.argsort(-sims, axis=1)
        for k in ks:
            c = allv[order[:, :k]].mean(axis=1)
            cents[k][key] = c / np.linalg.norm(c, axis=1, keepdims=True)
    for _, f in rows:
        for k in ks:
            f[f"nb{k}"] = (cents[k][id(f["O"])] @ f["q"]).astype(np.float64)


def store_neighbours(k: int, w: float) -> Score:
    """The shipped sum plus w times the query's cosine to the memory's store neighbours (`with_store_neighbours`)."""
    def score(f: Row) -> Any:
        return shipped(f) + w * f[f"nb{k}"]
    return score


# -- cross-validation ----------------------------------------------------------------------------

def cv(name: str, grid: dict[str, Score], desk: list[tuple[pdata.Question, Row]], loc: list[tuple[ldata.Question, Row]],
       *, use_locomo: bool = True) -> None:
    dev = [(q, f) for q, f in desk if pdata.split_of(q) == "dev"]
    test = [(q, f) for q, f in desk if pdata.split_of(q) == "test"]
    type_fold = {t: i for i, fold in enumerate(pdata.dev_folds(5)) for t in fold}
    convs = sorted({q.sample_id for q, _ in loc})
    conv_fold = {c: i % 5 for i, c in enumerate(convs)}
    d = {g: np.array([desk_hit(q, f, s) for q, f in dev]) for g, s in grid.items()}
    dfold = np.array([type_fold[q.type] for q, _ in dev])
    lr = {g: np.array([loc_r10(q, f, s) for q, f in loc]) for g, s in grid.items()} if use_locomo else {}
    lfold = np.array([conv_fold[q.sample_id] for q, _ in loc])
    print(f"\n### {name}\n\n| setting | desk dev hit@3 | LoCoMo dev R@10 |\n|---|---|---|")
    for g in grid:
        print(f"| {g} | {d[g].mean():.3f} | {lr[g].mean():.4f} |" if use_locomo else f"| {g} | {d[g].mean():.3f} | |")

    def objective(g: str, mask_d: Any, mask_l: Any) -> float:
        return float(d[g][mask_d].mean() + (lr[g][mask_l].mean() if use_locomo else 0.0))

    held_d, held_l, chosen = np.zeros(len(dev)), np.zeros(len(loc)), []
    for i in range(5):
        g = max(grid, key=lambda g: objective(g, dfold != i, lfold != i))
        chosen.append(g)
        held_d[dfold == i] = d[g][dfold == i]
        if use_locomo:
            held_l[lfold == i] = lr[g][lfold == i]
    final = max(grid, key=lambda g: objective(g, dfold >= 0, lfold >= 0))
    t = np.mean([desk_hit(q, f, grid[final]) for q, f in test])
    t_ship = np.mean([desk_hit(q, f, shipped) for q, f in test])
    t_dense = np.mean([desk_hit(q, f, lambda f: f["own"]) for q, f in test])
    print(f"\nfolds chose {chosen}; held out: desk dev hit@3={held_d.mean():.3f}"
          + (f", LoCoMo R@10={held_l.mean():.4f}" if use_locomo else "")
          + f"; on all dev: {final}; test half (once): hybrid {t:.3f} (shipped {t_ship:.3f}, dense alone {t_dense:.3f}, "
          f"margin {t - t_dense:+.3f})")


def misses(desk: list[tuple[pdata.Question, Row]]) -> None:
    """Zero-overlap test-half questions both the shipped hybrid and dense miss, and those the hybrid loses."""
    test = [(q, f) for q, f in desk if pdata.split_of(q) == "test" and q.paraphrase]
    both = [(q, f) for q, f in test if not desk_hit(q, f, shipped) and not desk_hit(q, f, lambda f: f["own"])]
    lost = [(q, f) for q, f in test if not desk_hit(q, f, shipped) and desk_hit(q, f, lambda f: f["own"])]
    for title, rows, n in (("missed by both", both, 20), ("lost by the hybrid", lost, 10)):
        print(f"\n### {title}: {len(rows)}\n")
        for q, f in rows[:n]:
            a = f["texts"].index(q.answer)
            order = list(top(shipped(f), len(f["texts"])))
            print(f"- [{q.type}] {q.text!r} -> {q.answer!r} (own cos {f['own'][a]:.2f}, rank {order.index(a) + 1}/{len(order)})")
            for i in order[:3]:
                print(f"    {f['own'][i]:.2f} lex {f['lex'][i]:.2f} {f['texts'][i]!r}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    desk, loc, emb, lemb = dev_rows(features, with_locomo="--misses" not in args)
    if "--misses" in args:
        misses(desk)
        return 0
    only = {a.lstrip("-") for a in args}

    def want(*names: str) -> bool:
        return not only or bool(only & set(names))

    if want("a"):
        print("## (a) dense pseudo-relevance feedback")
        grid: dict[str, Score] = {"shipped": shipped}
        grid |= {f"Rocchio top {k}, alpha {a}": rocchio(k, a) for k in (1, 2, 3) for a in (0.1, 0.25, 0.5)}
        grid |= {f"Rocchio top {k} by dense, alpha {a}": rocchio(k, a, by="dense") for k in (1, 3) for a in (0.25, 0.5)}
        cv("Rocchio", grid, desk, loc)
        grid = {"shipped": shipped} | {f"cosine to top-1, gamma {g}": to_top1(g) for g in (0.05, 0.1, 0.2, 0.4)}
        grid |= {f"cosine to dense top-1, gamma {g}": to_top1(g, by="dense") for g in (0.05, 0.1, 0.2, 0.4)}
        cv("cosine to the top-1", grid, desk, loc)
        grid = {"shipped": shipped} | {f"cosine to lexical winners, gamma {g}": to_lexical(g) for g in (0.05, 0.1, 0.2, 0.4, -0.1, -0.2)}
        cv("cosine to the lexical winners", grid, desk, loc)
    if want("c", "mmr"):
        print("\n## (c) redundancy in the top results")
        grid = {"shipped": shipped} | {f"MMR, lambda {lam}": mmr(lam) for lam in (0.02, 0.05, 0.1, 0.2, 0.3)}
        cv("maximal marginal relevance", grid, desk, loc)
    if want("c", "csls"):
        from fourfold.ranking import Background

        bg = Background.of(emb).vectors.astype(np.float64)
        with_hubness(desk, bg)
        with_hubness(loc, bg)
        grid = {"shipped": shipped} | {f"closeness to {k} nearest background texts, weight {w}": csls(k, w)
                                       for k in (3, 10) for w in (0.1, 0.2, 0.3, 0.5)}
        cv("hubness against the background (CSLS)", grid, desk, loc)
    if want("c", "clauses"):
        with_clauses(desk, emb)
        emb.save()
        with_clauses(loc, lemb)
        lemb.save()
        grid = {"shipped": shipped} | {f"best clause's gain, weight {w}": clause_dense(w) for w in (0.25, 0.5, 1.0)}
        cv("clauses", grid, desk, loc)
    if want("c", "store"):
        with_store_centroid(desk)
        with_store_centroid(loc)
        grid = {"shipped": shipped} | {f"store centroid {w}, scope typicality {t}": store_typical(w, scope=t)
                                       for w in (0.1, 0.2, 0.3, 0.5) for t in (0.0, 0.2)}
        cv("closeness to the store's centroid", grid, desk, loc)
    if want("c", "neighbours"):
        with_store_neighbours(desk)
        with_store_neighbours(loc)
        grid = {"shipped": shipped} | {f"{k} store neighbours, weight {w}": store_neighbours(k, w)
                                       for k in (3, 10) for w in (0.1, 0.2, 0.3, 0.5)}
        cv("what memories like it in other scopes are about", grid, desk, loc)
    if not want("b"):
        return 0
    print("\n## (b) memory-side context (desk only: LoCoMo's turns are not preferences)")
    with_attribute(desk, emb)
    emb.save()
    keyed = sum(a is not None for _, f in desk for a in f["attrs"]) / sum(len(f["attrs"]) for _, f in desk)
    asked = np.mean([f["qattr"] is not None for _, f in desk])
    print(f"\nslots reads an attribute from {keyed:.2f} of the desk's memories (per question's scope) and {asked:.2f} of its questions")
    grid = {"shipped": shipped} | {f"\"attribute: text\" vector, weight {w}": keyed_vector(w) for w in (0.25, 0.5, 1.0)}
    grid |= {f"question's attribute is the memory's, bonus {b}": attribute_match(b) for b in (0.05, 0.1, 0.2)}
    cv("attribute", grid, desk, loc, use_locomo=False)
    print(f"\nby whether `fourfold.text.preferences.PREFERENCE_KEYS` lists the type ({sorted(LISTED)}):\n")
    print("| setting | dev listed | dev unlisted | test listed | test unlisted |\n|---|---|---|---|---|")
    for g, sc in grid.items():
        cells = [np.mean([desk_hit(q, f, sc) for q, f in desk if pdata.split_of(q) == half and (q.type in LISTED) == listed])
                 for half in ("dev", "test") for listed in (True, False)]
        print(f"| {g} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
