"""A secrets set written by someone who never saw the detector: kinds caught, clean items kept.

    python benchmarks/secrets_heldout.py FILE.jsonl [--show]

Each line of FILE is {"id", "family", "kind", "label": "secret"|"clean", "text", "secrets": [...]}.
A `secret` item is caught if none of its `secrets` survives, both where text is redacted
(`redact`, what every write stores) and where a JSON value's strings are (`redact_json`,
with the text as an object key, three levels down); a kind is caught if every item of it
is. A `clean` item passes if it comes back exactly as written both ways. Runs with the
vendored rule file and with structure alone, and prints for each:

    heldout (rules): kinds=N of M (P%) items=N of M clean=N of M
    heldout (structure): kinds=N of M (P%) items=N of M clean=N of M

`--show` lists each missed item and each changed clean item (for a file you may read).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from fourfold.text import redact
from fourfold.text.redact import redact_json, structure_only


def _stored(text: str) -> Iterator[str]:
    """What each way in keeps of `text`: the redacted text, and the JSON around it."""
    yield redact(text)[0]
    yield json.dumps(redact_json({"a": {"b": [{text: text}]}})[0], ensure_ascii=False)


def _caught(item: dict[str, Any]) -> bool:
    escaped = [json.dumps(s, ensure_ascii=False)[1:-1] for s in item["secrets"]]
    return all(not any(s in kept for s in (*item["secrets"], *escaped)) for kept in _stored(item["text"]))


def _kept(item: dict[str, Any]) -> bool:
    text = item["text"]
    return redact(text) == (text, ()) and not redact_json({"a": {"b": [{text: text}]}})[1]


def score(items: list[dict[str, Any]], mode: AbstractContextManager[Any], *, show: bool) -> str:
    by_kind: dict[str, list[bool]] = defaultdict(list)
    clean: list[bool] = []
    with mode:
        for item in items:
            if item["label"] == "secret":
                ok = _caught(item)
                by_kind[item["kind"]].append(ok)
            else:
                ok = _kept(item)
                clean.append(ok)
            if show and not ok:
                print(f"  {item['label']:<6} {item['family']}/{item['kind']} {item['id']}: {item['text'][:160]!r}")
    kinds = sum(all(v) for v in by_kind.values())
    passed = sum(sum(v) for v in by_kind.values())
    total = sum(len(v) for v in by_kind.values())
    share = 100 * kinds / len(by_kind) if by_kind else 0.0
    return (f"kinds={kinds} of {len(by_kind)} ({share:.1f}%) items={passed} of {total} "
            f"clean={sum(clean)} of {len(clean)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("file", type=Path)
    parser.add_argument("--show", action="store_true", help="list misses and changed clean items")
    args = parser.parse_args(argv)
    items = [json.loads(line) for line in args.file.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(f"heldout (rules): {score(items, nullcontext(), show=args.show)}")
    print(f"heldout (structure): {score(items, structure_only(), show=args.show)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
