"""Scale on PostgreSQL: many small scopes plus one large one, recall latency and the ANN path's
agreement with an exact search.

Vectors have the structure of real embeddings: the bundled MiniLM embeds a few thousand real
turns of the LoCoMo dev set once (cached under ~/.cache/fourfold), and each stored memory is one
of them perturbed (cosine about 0.9 to its source), with its source's text plus a word of
another turn. Rows go in with COPY; the large scope is then promoted (its ranking features
computed, its HNSW index built in bulk, the table vacuumed). Measured: recall p50 in small scopes (ranked exactly in
memory) and in the large one (pgvector + full-text candidates ranked by fourfold), the large
path's top-10 overlap with an exact search of the whole scope, and this process's peak RSS
before the exact reference is built.

    python benchmarks/scale.py                      # 1M rows: 10k scopes of 80, one of 200k
    python benchmarks/scale.py --rows 150000 --large 60000 --scopes 1000

Last line: scale: rows=N small_p50_ms=X large_p50_ms=X large_recall_vs_exact=X rss_mb=X
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import time
from pathlib import Path

import numpy as np
import psycopg

from _embed_cache import CACHE_DIR, CachedEmbedder
from fourfold.longterm import LongTermMemory
from fourfold.longterm.large import DENSE, LEXICAL
from fourfold.longterm.retrieval import ScopeIndex
from fourfold.stores.pgvector import PostgresVectorStore
from fourfold.stores.postgres import PostgresDatabase
from fourfold.testing.postgres import PostgresServer
from fourfold.text import is_chatter

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo" / "locomo-dev.json"
LARGE = "shared:cases"


def _texts(limit: int) -> list[str]:
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("text"), str):
                found.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(LOCOMO.read_text(encoding="utf-8")))
    texts = [t for t in dict.fromkeys(found) if len(t) > 20 and not is_chatter(t)]
    return texts[:limit]


def _rows(n: int, scope_of: list[str], texts: list[str], vectors: np.ndarray, seed: int) -> list[tuple[object, ...]]:
    rng = np.random.default_rng(seed)
    words = [t.split() for t in texts]
    noise = rng.normal(0.0, 0.0247, size=(n, vectors.shape[1])).astype(np.float32)
    base = rng.integers(0, len(texts), size=n)
    extra = rng.integers(0, len(texts), size=n)
    rows: list[tuple[object, ...]] = []
    start = time.time() - 86_400.0
    for j in range(n):
        v = vectors[base[j]] + noise[j]
        v /= np.linalg.norm(v)
        text = f"{texts[base[j]]} {random.Random(int(extra[j])).choice(words[extra[j]])}"
        # Ids are hashes, as fourfold's are (memory_id).
        rows.append((f"mem_{hashlib.blake2b(f'{seed}/{j}'.encode(), digest_size=16).hexdigest()}", scope_of[j], "note", text, "{}", "[]", start + j * 0.01, 0,
                     v.astype(np.float32).tobytes()))
    return rows


def _copy(db: PostgresDatabase, rows: list[tuple[object, ...]]) -> None:
    with db.write() as conn:
        with conn.raw.cursor().copy(
            "COPY memories (id, scope, kind, text, metadata, extra, created_at, seq, embedding) FROM STDIN"
        ) as copy:
            for row in rows:
                copy.write_row(row)
        db.bump(conn, {f"memories/{row[1]}" for row in rows})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="memories in all (the large scope included)")
    parser.add_argument("--large", type=int, default=200_000, help="memories in the one large scope")
    parser.add_argument("--scopes", type=int, default=10_000, help="small scopes")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--texts", type=int, default=3_000)
    parser.add_argument("--ef-search", type=int, default=None, help="HNSW's hnsw.ef_search (default: the store's)")
    args = parser.parse_args()
    t0, load0 = time.time(), os.getloadavg()[0]
    texts = _texts(args.texts)
    embedder = CachedEmbedder(CACHE_DIR / "scale-minilm.npz")
    vectors = embedder.embed_many(texts)
    embedder.save()
    print(f"embedded {len(texts)} real texts in {time.time() - t0:.0f}s", flush=True)
    small = args.rows - args.large
    # shared_buffers holds the HNSW index of the large scope (~400 MB at 200k): with 256 MB
    # every query read a few thousand of its pages from the OS cache.
    with PostgresServer(settings={"shared_buffers": "1GB", "maintenance_work_mem": "1GB",
                                  "max_parallel_maintenance_workers": "2", "synchronous_commit": "off"}) as server:
        db = PostgresDatabase(server.url + "?schema=scale")
        store = PostgresVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension)
        store.ef_search = args.ef_search
        memory = LongTermMemory(store, embedder)
        t1 = time.time()
        scopes = [f"customer:{i}" for i in range(args.scopes)]
        for part in range(0, small, 100_000):
            n = min(100_000, small - part)
            _copy(db, _rows(n, [scopes[(part + j) % args.scopes] for j in range(n)], texts, vectors, seed=part // 100_000))
        for part in range(0, args.large, 100_000):
            n = min(100_000, args.large - part)
            _copy(db, _rows(n, [LARGE] * n, texts, vectors, seed=100 + part // 100_000))
        print(f"loaded {args.rows} rows in {time.time() - t1:.0f}s", flush=True)
        t2 = time.time()
        with db.write() as conn:
            conn.execute("DROP INDEX IF EXISTS memories_ann")  # built in bulk below: much faster than row by row
        store.promote(LARGE)
        with db.write() as conn:
            conn.execute("CREATE INDEX memories_ann ON memories USING hnsw (ann vector_cosine_ops)")
        # The promotion rewrote the scope's rows: VACUUM now what autovacuum would do in the next
        # minute, so that the recalls below are measured beside it, not behind it (a vacuum
        # running during them slows every query it overlaps).
        with psycopg.connect(server.url, autocommit=True) as admin:
            admin.execute("SET search_path TO scale, public")
            admin.execute("VACUUM (ANALYZE) memories")
        assert store.is_large(LARGE)
        with db.read() as conn:
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            plan = conn.execute(
                "EXPLAIN SELECT id FROM memories WHERE scope = ? AND ann IS NOT NULL ORDER BY ann <=> CAST(? AS vector)"
                " LIMIT 200", (LARGE, "[" + ",".join(["0.05"] * embedder.dimension) + "]"),
            ).fetchall()
        print("ANN plan:", " / ".join(row[0].strip()[:60] for row in plan[:2]), flush=True)
        print(f"promoted the large scope in {time.time() - t2:.0f}s", flush=True)

        rng = random.Random(7)
        queries = [" ".join(rng.choice(texts).split()[:8]) for _ in range(args.queries)]
        small_ms = []
        for i, query in enumerate(queries * 2):
            started = time.perf_counter()
            memory.recall(query, scope=scopes[i % min(len(scopes), 50)], k=10)
            small_ms.append((time.perf_counter() - started) * 1000)
        memory.recall(queries[0], scope=LARGE, k=10)  # counts the scope's size once
        large_ms, got = [], []
        for query in queries:
            started = time.perf_counter()
            got.append([r.id for r in memory.recall(query, scope=LARGE, k=10)])
            large_ms.append((time.perf_counter() - started) * 1000)
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"measured in {time.time() - t2:.0f}s; building the exact reference", flush=True)
        exact = ScopeIndex(store.scan(LARGE), embedder.dimension)
        overlap = covered = 0
        for query, ids in zip(queries, got, strict=True):
            vector = embedder.embed(query)
            want = [r.id for r, _ in exact.search(vector, query, k=10, keep=lambda r: r.kind != "doc")]
            overlap += len(set(ids) & set(want))
            offered = {r.id for r in store.candidates(LARGE, vector, query, dense=DENSE, lexical=LEXICAL)[0]}
            covered += len(offered & set(want))
        recall = overlap / (10 * len(queries))
        print(f"exact top-10 among the candidates: {covered / (10 * len(queries)):.3f}", flush=True)
        db.close()
    print(f"total {time.time() - t0:.0f}s; load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end",
          flush=True)
    print(
        f"scale: rows={args.rows} small_p50_ms={statistics.median(small_ms):.1f} "
        f"large_p50_ms={statistics.median(large_ms):.1f} large_recall_vs_exact={recall:.3f} rss_mb={rss_mb:.0f}"
    )


if __name__ == "__main__":
    main()
