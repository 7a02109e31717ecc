"""What the reader adds to a write: embedding a message alone, against embedding it and reading it.

    python benchmarks/reader.py [--embedder minilm|hash] [--texts N] [--repeats N]

The texts are support messages and operator notes made by the reader's own data generator
(seeded; Faker needed) or, with `--set PATH`, the texts of a ticket set. Each text is
embedded one at a time, as a write does, and read once; the two are alternated in each
repeat so both see the same machine load. The last line:

    reader: embed_ms=X read_ms=X write_ratio=X

(`write_ratio` = (embedding + reading) / embedding; the goal is at most 2).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from fourfold.embeddings import Embedder, HashEmbedder
from fourfold.text.reader import read


def _texts(n: int, ticket_set: Path | None) -> list[str]:
    if ticket_set is not None:
        out: list[str] = []
        for line in ticket_set.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            for key in ("first_ticket", "second_ticket", "later_ticket"):
                out += item.get(key, [])
            if "first" in item:
                out += [*item["first"]["customer_messages"], item["first"]["operator_note"]]
            out += [s["text"] for s in item.get("sentences", [])]
        return out[:n]
    from fourfold.text.reader._generate import Generator, render

    gen = Generator(11)
    return [render(gen.message())[0] for _ in range(n)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--set", type=Path, dest="ticket_set")
    args = parser.parse_args(argv)
    if args.embedder == "minilm":
        from fourfold.embeddings.spec import embedder_from_spec

        embedder: Embedder = embedder_from_spec("minilm")
    else:
        embedder = HashEmbedder()
    texts = _texts(args.texts, args.ticket_set)
    embedder.embed_many(texts[:8])  # warm both up
    for t in texts[:8]:
        read(t)
    embed_runs, read_runs = [], []
    for _ in range(args.repeats):
        started = time.perf_counter()
        for t in texts:
            embedder.embed_many([t])
        embed_runs.append((time.perf_counter() - started) / len(texts))
        started = time.perf_counter()
        for t in texts:
            read(t)
        read_runs.append((time.perf_counter() - started) / len(texts))
    embed_s, read_s = statistics.median(embed_runs), statistics.median(read_runs)
    print(f"{len(texts)} texts, {args.repeats} repeats, {embedder.identity}; median per text")
    print(f"reader: embed_ms={embed_s * 1e3:.2f} read_ms={read_s * 1e3:.2f} write_ratio={(embed_s + read_s) / embed_s:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
