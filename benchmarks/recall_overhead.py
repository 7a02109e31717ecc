"""What calibrated recall costs over the plain ranking it wraps, timed in one process.

`LongTermMemory.recall` now also takes the query's background similarity and each result's
parts (`explain`). This times it against the bare ranking of the same cached scope index
(`ScopeIndex.search`, what recall did before), alternating the two on fresh query texts so
that load on a shared machine hits both alike. The query is embedded by the bundled MiniLM in
both (the latency floor), and separately with the vector given, to show the ranker's own cost.

    python benchmarks/recall_overhead.py [--queries N]

Last line: ``recall_overhead: p50_ratio=X p50_ratio_embedding_excluded=X``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import _paraphrase_data as data
from _embed_cache import CACHE_DIR, CachedEmbedder


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--queries", type=int, default=400)
    args = p.parse_args(argv)
    from fourfold._validate import check_k, check_scope, check_text
    from fourfold.embeddings.default import default_embedder
    from fourfold.longterm import LongTermMemory
    from fourfold.longterm.store import _kind_filter, _recalled
    from fourfold.longterm.versions import validity
    from fourfold.stores import InMemoryVectorStore

    cached = CachedEmbedder(CACHE_DIR / "paraphrase-minilm.npz")
    dataset = data.build()
    lt = LongTermMemory(InMemoryVectorStore(embedder_identity=cached.identity), cached)
    for customer in dataset.customers:  # a desk of 300 scopes, plus one of 2,000 memories
        lt.remember_many([{"text": t, "scope": customer.id} for t in customer.memories])
    big = [f"{t} (ticket {n})" for n, t in enumerate(t for c in dataset.customers for t in c.memories)][:2000]
    lt.remember_many([{"text": t, "scope": "big"} for t in big])
    cached.save()
    real = default_embedder()
    lt.embedder = real
    rng = random.Random(19)
    questions = dataset.on_topic()
    lt.recall("warm up the model", scope="big")

    def plain(text: str, scope: str, vector: Any) -> Any:
        """Recall as it was before calibration: the same checks, filters (kinds, current
        versions) and ranking, with no background null."""
        text = check_text(text, what="query", max_chars=lt.max_chars)
        k, checked = check_k(5), check_scope(scope)
        keep_kind, holds = _kind_filter(None), validity(None, False)
        index = lt._index(checked)
        hits = index.search(real.embed(text) if vector is None else vector, text, k=k,
                            keep=lambda r: bool(keep_kind(r.kind)) and holds(r), weights=lt.weights)
        return [_recalled(r, s) for r, s in hits]

    def calibrated(text: str, scope: str, vector: Any) -> Any:
        if vector is not None:
            lt.embedder = _Given(real, vector)
        try:
            return lt.recall(text, scope=scope, k=5)
        finally:
            lt.embedder = real

    times: dict[str, list[float]] = {"plain": [], "calibrated": [], "plain_ex": [], "calibrated_ex": []}
    for n in range(args.queries):
        q = rng.choice(questions)
        scope = "big" if n % 2 else q.customer
        for name, fn in (("plain", plain), ("calibrated", calibrated)) if n % 4 < 2 else (("calibrated", calibrated), ("plain", plain)):
            text = f"{q.text} #{n} {name}"  # never embedded before: no cache hit
            times[name].append(_timed(fn, text, scope, None))
            vector = real.embed(text + " ex")
            times[name + "_ex"].append(_timed(fn, text, scope, vector))
    p50 = {k: statistics.median(v) for k, v in times.items()}
    for k, v in p50.items():
        print(f"{k}: p50 {v * 1000:.3f} ms")
    print(f"recall_overhead: p50_ratio={p50['calibrated'] / p50['plain']:.3f} "
          f"p50_ratio_embedding_excluded={p50['calibrated_ex'] / p50['plain_ex']:.3f}")
    return 0


class _Given:
    """An embedder whose `embed` returns a vector computed beforehand."""

    def __init__(self, real: Any, vector: Any) -> None:
        self._real, self._vector = real, vector
        self.identity = real.identity

    def embed(self, text: str) -> Any:
        return self._vector


def _timed(fn: Callable[..., Any], *args: Any) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
