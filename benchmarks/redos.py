"""Adversarial inputs against the secret detector: how long the worst crafted text takes.

    python benchmarks/redos.py [--chars 20000] [--doc-chars 500000] [--seed 1]

Cases are generated, not picked: for each rule family, the family's own vocabulary (its
credential words, separators, armour lines, digit groups, the vendored rules' keywords...)
is crossed with the shapes that make backtracking engines blow up: a long run of one
separator before a word, a word repeated with one separator, an opening never closed,
near-misses of a checksum. Each case is a memory-sized text (`--chars`, the memory limit).
Then one document (`--doc-chars`, the document limit) made of all the cases, for the
detector's throughput on adversarial text. Prints one line per family, then:

    redos: cases=N worst_ms=X doc_mb_per_s=X

worst_ms is the slowest single case (milliseconds, one `redact` call, warm); doc_mb_per_s is
millions of characters per second on the document. Every pattern is compiled by RE2, so
time grows linearly with the input; this measures the constant.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import sys
import time
from collections.abc import Iterator

from fourfold.text import redact
from fourfold.text._credentials import CONTEXT_WORDS, COPULAS
from fourfold.text._secret_rules import vendored

_SEPARATORS = list("-_=:;., /\\|'\"`@#&?+*~")


def _shapes(atom: str, rng: random.Random, n: int) -> Iterator[str]:
    """The repetition shapes of one atom, each about `n` characters."""
    sep = rng.choice(_SEPARATORS)
    other = rng.choice(_SEPARATORS)
    yield sep * n + atom  # a run of one separator, then the word
    yield (atom + sep) * (n // (len(atom) + 1) + 1)  # the word repeated with one separator
    yield ("a" + sep) * (n // 2) + atom  # word characters and separators alternating, then the word
    yield atom + sep + '"' + "x" * n  # an opening never closed
    yield (atom + sep + other) * (n // (len(atom) + 2) + 1) + "\n"


def _families(rng: random.Random, n: int) -> dict[str, list[str]]:
    words = sorted(w for w in CONTEXT_WORDS if w.isascii())
    b64 = string.ascii_letters + string.digits + "+/"
    header = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()).decode().rstrip("=")
    line = "".join(rng.choice(b64) for _ in range(64))
    families: dict[str, list[str]] = {
        "credential words": [s for w in rng.sample(words, 24) for s in _shapes(w, rng, n)],
        "copulas": [s for w in rng.sample(sorted(COPULAS), 8) for s in _shapes(f"{rng.choice(words)} {w}", rng, n)],
        "assignments": [s for name in ("db_password", "apiKey", "X-Auth-Token", "client.secret") for sep in ("=", ":", ":=", "=>")
                        for s in _shapes(name + sep, rng, n)],
        "armour": [
            "-----BEGIN RSA PRIVATE KEY-----\n" + (line + "\n") * (n // 65),
            "-----BEGIN PRIVATE KEY-----\n" * (n // 28),
            "-----END PRIVATE KEY-----\n" * (n // 26),
            (line[:20] + " ") * (n // 21) + "\n-----END OPENSSH PRIVATE KEY-----",
            "-----BEGIN " + "A " * (n // 2),
        ],
        "urls": [s for atom in ("https://a:", "postgres://u:p@", "?sig=", "&signature=", "https://hooks/") for s in _shapes(atom, rng, n)],
        "headers": [s for atom in ("Authorization: ", "Authorization: Digest a=", "Cookie: a=", "Set-Cookie: ", "Bearer ")
                    for s in _shapes(atom, rng, n)],
        "flags": [s for atom in ("--password ", "--token=", "-p", "-u a:", "--api-key ") for s in _shapes(atom, rng, n)],
        "tokens": [
            " ".join("".join(rng.choice(b64) for _ in range(rng.randrange(12, 60))) for _ in range(n // 30)),
            "".join(rng.choice(b64) for _ in range(n)),
            ".".join(header for _ in range(n // (len(header) + 1))),
            (header + "." + line[:20] + ".") * (n // 60),
        ],
        "base64": [
            base64.b64encode(("password=" * (n // 12)).encode()).decode(),
            base64.b64encode(base64.b64encode(("token: " * (n // 16)).encode())).decode(),
            base64.b64encode(b"\x30\x82\x01\x00\x02\x01\x00" * (n // 10)).decode(),
        ],
        "cards and ibans": [
            "4111 " * (n // 5),
            "4111" + rng.choice(_SEPARATORS) + ("1111" + rng.choice(_SEPARATORS)) * (n // 5),
            "".join(rng.choice(string.digits) + rng.choice(" -./") for _ in range(n // 2)),
            "DE89 " + "AB12 " * (n // 5),
            "gb82 " * (n // 5),
            "".join(rng.choice(string.ascii_uppercase) + rng.choice(string.digits) for _ in range(n // 2)),
        ],
        "normalisation": [
            "\u200b".join("token" * (n // 30)),
            "\u00a0" * n + "password",
            ("x" * 13 + "\n") * (n // 14),
            ("abcdefghijklm\\\n") * (n // 15),
        ],
    }
    keywords = sorted({k for rule in vendored().rules for k in rule.triggers})
    families["vendored keywords"] = [(k + rng.choice(_SEPARATORS)) * (n // (len(k) + 1)) for k in keywords]
    return {name: [case[:n] for case in cases] for name, cases in families.items()}


def _timed(text: str) -> float:
    start = time.perf_counter()
    redact(text)
    return (time.perf_counter() - start) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--chars", type=int, default=20_000, help="characters per case (the memory limit)")
    parser.add_argument("--doc-chars", type=int, default=500_000, help="characters of the adversarial document")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    redact("warm up: password=x")  # compile the vendored rules outside the timings
    families = _families(rng, args.chars)
    worst = 0.0
    cases = 0
    for name, texts in families.items():
        times = [_timed(text) for text in texts]
        cases += len(times)
        worst = max(worst, *times)
        print(f"  {name:<18} cases={len(times):<4} worst_ms={max(times):.1f} median_ms={sorted(times)[len(times) // 2]:.1f}")
    pieces = [text for texts in families.values() for text in texts]
    rng.shuffle(pieces)
    document = "\n\n".join(pieces)[: args.doc_chars]
    seconds = _timed(document) / 1000
    print(f"redos: cases={cases} worst_ms={worst:.1f} doc_mb_per_s={len(document) / 1e6 / seconds:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
