"""Paraphrase benchmark: does recall find a support-desk memory from a question worded nothing like it?

A generated support desk (`_paraphrase_data`: 300 customers, 3-8 memories each, one question
per memory, two off-topic questions per customer) is written through the public API, one
scope per customer. Three rankers answer each question within the customer's scope:

- ``hybrid``: `LongTermMemory.recall`, as an agent calls it;
- ``dense``: plain MiniLM cosine over the same memories;
- ``bm25``: keyword matching (the library's BM25 over its tokenizer; a memory sharing no word
  with the question is no hit).

hit@k is the share of questions whose memory is among the top k; *paraphrase* questions share
no content word with their memory, *overlap* questions do (a desk has both: "what plan are
they on?" beside "what level of service did they buy?", and questions naming an order number).
`offtopic_empty` is the share of off-topic questions for which recall with `min_score` at the
default floor (`fourfold.ranking.RELEVANCE_FLOOR`, the support agent's prompt floor) returns
nothing: unrelated ones (trivia) and unanswerable ones (the desk's questions about something
never noted for this customer); the "floor" row gives hit@k of hybrid recall under that floor,
and `floor_drop` what the floor costs on-topic hit@3.

The set is split in two halves (`_paraphrase_data.split_of`): half the attribute types and
half the unrelated texts are the *dev* half, on which the ranker's settings were chosen; the
*test* half's wording was never tuned on. Tables are printed for each half and both.

    python benchmarks/paraphrase.py [--customers N] [--seed S] [--no-cache] [--query-model int8|exact]

The last line is ``paraphrase: hybrid_hit3=X dense_hit3=X bm25_hit3=X offtopic_empty=X`` over
the *test* half (hit@3 over all its on-topic questions, both kinds); the lines before it give
each half's zero-overlap and all on-topic hit@3.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import _paraphrase_data as data
from _embed_cache import CACHE_DIR, CachedEmbedder
from fourfold.embeddings.base import Embedder

CACHE = CACHE_DIR / "paraphrase-minilm.npz"
KS = (1, 3)
Ranker = Callable[[data.Question], list[str]]  # memory texts, best first


@dataclass(frozen=True, slots=True)
class Desk:
    """The data set written into one Memory, with what the plain rankers need."""

    memory: Any
    vectors: dict[str, Any]  # memory text -> its own MiniLM vector
    embedder: Embedder


def open_desk(dataset: data.Dataset, embedder: Embedder, path: str) -> Desk:
    from fourfold import Memory

    memory = Memory.open(path, embedder=embedder)
    for customer in dataset.customers:
        memory.long_term.remember_many([{"text": t, "scope": customer.id} for t in customer.memories])
    texts = [t for c in dataset.customers for t in c.memories]
    vectors = dict(zip(texts, embedder.embed_many(texts), strict=True))
    return Desk(memory, vectors, embedder)


def hybrid(desk: Desk, *, k: int = 3, min_score: float | None = None) -> Ranker:
    def rank(q: data.Question) -> list[str]:
        return [r.text for r in desk.memory.long_term.recall(q.text, scope=q.customer, k=k, min_score=min_score)]

    return rank


def dense(desk: Desk, dataset: data.Dataset) -> Ranker:
    memories = {c.id: c.memories for c in dataset.customers}

    def rank(q: data.Question) -> list[str]:
        texts = memories[q.customer]
        cos = np.stack([desk.vectors[t] for t in texts]) @ desk.embedder.embed(q.text)
        return [texts[i] for i in np.argsort(-cos, kind="stable")]

    return rank


def bm25(dataset: data.Dataset) -> Ranker:
    from fourfold.ranking.bm25 import BM25Index
    from fourfold.text import tokenize

    indexes: dict[str, BM25Index] = {}
    for c in dataset.customers:
        index = indexes[c.id] = BM25Index()
        for t in c.memories:
            index.add(t, tokenize(t))

    def rank(q: data.Question) -> list[str]:
        return [doc for doc, _ in indexes[q.customer].top(tokenize(q.text), 3)]

    return rank


def hits(questions: Sequence[data.Question], rank: Ranker) -> dict[int, float]:
    if not questions:
        return {k: float("nan") for k in KS}
    ranked = [rank(q) for q in questions]
    return {k: sum(q.answer in r[:k] for q, r in zip(questions, ranked, strict=True)) / len(questions) for k in KS}


SPLITS = ("dev", "test", "all")
CURVE = (0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--customers", type=int, default=300)
    p.add_argument("--seed", type=int, default=19)
    p.add_argument("--no-cache", action="store_true", help="embed with the model, not the vector cache")
    p.add_argument("--query-model", choices=("int8", "exact"), default="int8",
                   help="queries embedded by the int8 approximation of the stored model (the library's "
                        "default) or by the model itself")
    args = p.parse_args(argv)
    from fourfold.embeddings.asymmetric import AsymmetricEmbedder
    from fourfold.embeddings.default import default_embedder, default_memory_embedder
    from fourfold.ranking import RELEVANCE_FLOOR

    dataset = data.build(customers=args.customers, seed=args.seed)
    embedder: Embedder = default_embedder() if args.no_cache else CachedEmbedder(CACHE)
    if args.query_model == "int8":  # the stored vectors stay the exact model's (or the cache of them)
        paired = default_memory_embedder()
        if isinstance(paired, AsymmetricEmbedder):
            embedder = AsymmetricEmbedder(embedder, paired.queries)

    def of(split: str, qs: Sequence[data.Question]) -> list[data.Question]:
        return [q for q in qs if split == "all" or data.split_of(q) == split]

    on, off = dataset.on_topic(), dataset.off_topic()
    groups = {
        split: {"paraphrase": [q for q in of(split, on) if q.paraphrase],
                "overlap": [q for q in of(split, on) if not q.paraphrase], "all on-topic": of(split, on)}
        for split in SPLITS
    }
    floored_name = f"hybrid, min_score={RELEVANCE_FLOOR}"
    with tempfile.TemporaryDirectory(prefix="paraphrase-") as tmp:
        desk = open_desk(dataset, embedder, tmp)
        try:
            rankers = {"hybrid": hybrid(desk), floored_name: hybrid(desk, min_score=RELEVANCE_FLOOR),
                       "dense": dense(desk, dataset), "bm25": bm25(dataset)}
            table = {(name, split, g): hits(qs, rank) for name, rank in rankers.items()
                     for split in SPLITS for g, qs in groups[split].items()}
            floored = hybrid(desk, min_score=RELEVANCE_FLOOR)
            left_empty = {q: not floored(q) for q in off}
            scored = {q: [(r.text == q.answer, r.score) for r in desk.memory.long_term.recall(q.text, scope=q.customer, k=3)]
                      for q in dataset.questions}
        finally:
            desk.memory.close()
    if isinstance(embedder, CachedEmbedder):
        embedder.save()

    def empty(split: str, kind: str | None = None) -> float:
        qs = [q for q in of(split, off) if kind is None or q.kind == kind]
        return sum(left_empty[q] for q in qs) / len(qs)

    print(f"# Paraphrase recall: {len(dataset.customers)} customers, {sum(len(c.memories) for c in dataset.customers)} memories, "
          f"{len(groups['all']['paraphrase'])} paraphrase + {len(groups['all']['overlap'])} overlap questions, "
          f"{len(off)} off-topic ({sum(q.kind == 'unrelated' for q in off)} unrelated, "
          f"{sum(q.kind == 'unanswerable' for q in off)} unanswerable)\n")
    print("The ranker's settings were chosen on the dev half (its attribute types and unrelated texts); "
          "the test half's were never tuned on.\n")
    for split in SPLITS:
        print(f"## {split} half" if split != "all" else "## both halves")
        print("\n| ranker | " + " | ".join(f"{g} hit@{k}" for g in groups[split] for k in KS) + " |")
        print("|---|" + "---|" * (len(groups[split]) * len(KS)))
        for name in rankers:
            print(f"| {name} | " + " | ".join(f"{table[name, split, g][k]:.3f}" for g in groups[split] for k in KS) + " |")
        drop = table["hybrid", split, "all on-topic"][3] - table[floored_name, split, "all on-topic"][3]
        print(f"\noff-topic questions with nothing at or above min_score={RELEVANCE_FLOOR}: {empty(split):.3f} "
              f"(unrelated {empty(split, 'unrelated'):.3f}, unanswerable {empty(split, 'unanswerable'):.3f}); "
              f"floor_drop={drop:.4f} (on-topic hit@3 lost to the floor)\n")
    print("The trade-off of the floor (on-topic hit@3 lost; off-topic left empty: all, unrelated, unanswerable):\n")
    print("| floor | " + " | ".join(f"{s} lost | {s} empty | {s} unrelated | {s} unanswerable" for s in SPLITS) + " |")
    print("|---|" + "---|---|---|---|" * len(SPLITS))
    for floor in sorted({*CURVE, RELEVANCE_FLOOR}):
        cells = []
        for split in SPLITS:
            lost = [any(rel for rel, _ in scored[q]) and not any(rel and s >= floor for rel, s in scored[q]) for q in of(split, on)]
            kinds = {kind: [all(s < floor for _, s in scored[q]) for q in of(split, off) if kind in (q.kind, "all")]
                     for kind in ("all", "unrelated", "unanswerable")}
            cells += [f"{np.mean(lost):.4f}", *(f"{np.mean(v):.3f}" for v in kinds.values())]
        print(f"| {f'**{floor}**' if floor == RELEVANCE_FLOOR else floor} | " + " | ".join(cells) + " |")
    print()
    for split in SPLITS:
        g = groups[split]
        print(f"{split}: zero-overlap hybrid_hit3={table['hybrid', split, 'paraphrase'][3]:.3f} "
              f"dense_hit3={table['dense', split, 'paraphrase'][3]:.3f}; all on-topic hybrid_hit3="
              f"{table['hybrid', split, 'all on-topic'][3]:.3f} dense_hit3={table['dense', split, 'all on-topic'][3]:.3f} "
              f"offtopic_empty={empty(split):.3f} ({len(g['all on-topic'])} on-topic questions)")
    print(
        f"paraphrase: hybrid_hit3={table['hybrid', 'test', 'all on-topic'][3]:.3f} "
        f"dense_hit3={table['dense', 'test', 'all on-topic'][3]:.3f} "
        f"bm25_hit3={table['bm25', 'test', 'all on-topic'][3]:.3f} offtopic_empty={empty('test'):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
