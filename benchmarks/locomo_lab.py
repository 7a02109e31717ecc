"""Fast tuning loop for fourfold's recall on LoCoMo: cached MiniLM vectors, in-memory store.

The library's own `LongTermMemory` indexes each conversation exactly as `locomo.py` does
(same items, same batches), but over `InMemoryVectorStore` and an embedder that reads vectors
from a cache file, so a sweep of `Weights` takes seconds. Final numbers come from `locomo.py`.

    python benchmarks/locomo_lab.py [--set context=0.3,context_window=2 ...] [--loo NAME=V1,V2,...]

Each `--set` is one configuration (fields of `fourfold.longterm.retrieval.Weights`); `--loo`
sweeps one field and reports leave-one-conversation-out: the value chosen on four
conversations, scored on the fifth. Tune only on the dev file.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _locomo_data as data
import locomo
from _embed_cache import CACHE_DIR, CachedEmbedder
from fourfold.longterm import LongTermMemory
from fourfold.longterm.retrieval import Weights
from fourfold.stores import InMemoryVectorStore

CACHE = CACHE_DIR / "locomo-lab-minilm.npz"


def rankings(
    memories: dict[str, LongTermMemory], dataset: data.Dataset, weights: Weights
) -> dict[str, list[tuple[data.Question, list[str]]]]:
    """Per conversation: each question with the dia_ids recall ranks for it (top 20)."""
    out: dict[str, list[tuple[data.Question, list[str]]]] = {}
    for conversation in dataset.conversations:
        lt = memories[conversation.sample_id]
        lt.weights = weights  # the scope's index is rebuilt when its weights change
        results = []
        for q in conversation.questions:
            hits = lt.recall(q.question, scope=conversation.sample_id, k=20)
            results.append((q, [str(h.metadata["dia_id"]) for h in hits]))
        out[conversation.sample_id] = results
    return out


def r_at(results: Sequence[tuple[data.Question, list[str]]], k: int, group: str = "cat1-4") -> float:
    return data.score(results, [k])[group].recall[k]


def report(name: str, ranked: dict[str, list[tuple[data.Question, list[str]]]]) -> None:
    allres = [r for rs in ranked.values() for r in rs]
    s = data.score(allres, [1, 5, 10, 20])
    head = " ".join(f"R@{k}={100 * s['cat1-4'].recall[k]:.1f}" for k in (1, 5, 10, 20))
    cats = " ".join(f"c{c}={100 * s[f'cat{c}'].recall[10]:.1f}" for c in range(1, 6))
    per_conv = " ".join(f"{100 * r_at(rs, 10):.1f}" for rs in ranked.values())
    print(f"{name:<48} {head} | R@10 {cats} | conv {per_conv}", flush=True)


def parse_set(text: str) -> Weights:
    base = Weights()
    changes: dict[str, Any] = {}
    fields = {f.name: f for f in dataclasses.fields(Weights)}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        kind = type(getattr(base, key))
        changes[key] = (value.lower() in ("1", "true", "yes")) if kind is bool else kind(value)
        assert key in fields
    return dataclasses.replace(base, **changes)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--data", type=Path, default=locomo.default_data_path())
    p.add_argument("--set", action="append", default=[], help="a Weights configuration")
    p.add_argument("--loo", action="append", default=[], help="FIELD=V1,V2,...: leave one out")
    p.add_argument("--k", type=int, default=10)
    args = p.parse_args(argv)
    dataset = data.load(args.data)
    embedder = CachedEmbedder(CACHE)
    memories: dict[str, LongTermMemory] = {}
    for conversation in dataset.conversations:
        lt = LongTermMemory(InMemoryVectorStore(embedder_identity=embedder.identity), embedder)
        locomo.remember_conversation(lt, conversation, {})
        memories[conversation.sample_id] = lt
        # questions are embedded once here so later sweeps never touch the model
        embedder.embed_many([q.question for q in conversation.questions])
    embedder.save()
    for text in args.set or ([] if args.loo else [""]):
        report(text or "default", rankings(memories, dataset, parse_set(text)))
    for sweep in args.loo:
        key, _, values = sweep.partition("=")
        configs = {v: parse_set(f"{key}={v}") for v in values.split(",")}
        ranked = {v: rankings(memories, dataset, w) for v, w in configs.items()}
        for v in configs:
            report(f"{key}={v}", ranked[v])
        convs = [c.sample_id for c in dataset.conversations]
        held: list[tuple[data.Question, list[str]]] = []
        chosen = []
        for out in convs:
            train = {
                v: r_at([r for c in convs if c != out for r in ranked[v][c]], args.k)
                for v in configs
            }
            best = max(configs, key=train.__getitem__)
            chosen.append(best)
            held += ranked[best][out]
        s = data.score(held, [5, 10])["cat1-4"]
        print(
            f"LOO {key}: chosen per held-out conversation {dict(zip(convs, chosen, strict=True))}; "
            f"held-out R@5={100 * s.recall[5]:.1f} R@10={100 * s.recall[10]:.1f}"
        )
    embedder.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
