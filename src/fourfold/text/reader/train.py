"""Train the reader's heads and write them as package data (`reader.npz`).

    python -m fourfold.text.reader.train --locomo PATH --beam PATH [--seed 7] [--messages 30000]

Needs Faker and scikit-learn (training only: reading needs numpy alone). The same seed and
data give the same weights. LoCoMo's dev conversations and BEAM's chats are read from where
they were fetched (`--locomo`, `--beam`: a JSON file, a BEAM git directory or checkout) and
are not shipped; without them the real dialogue is left out.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fourfold.text.reader._features import (
    BUCKETS,
    sentence_features,
    sentences,
    token_features,
    words,
)
from fourfold.text.reader._generate import Example, Generator, dialogue, render
from fourfold.text.reader._model import KEY_CLASSES, ROLES, SPAN_KINDS, WEIGHTS

__all__ = ["main", "token_labels"]


def token_labels(text: str, spans: Sequence[tuple[int, int, str]]) -> tuple[list[tuple[int, int, str]], list[int], set[int]]:
    """The text's tokens, each one's label (0: outside any span, else 1 + the kind's index)
    and the indices of the tokens that open a sentence."""
    tokens = words(text)
    labels = []
    for start, end, _ in tokens:
        label = 0
        for s, e, kind in spans:
            if s <= start and end <= e:
                label = 1 + SPAN_KINDS.index(kind)
                break
        labels.append(label)
    openers = {s for s, _ in sentences(text)}
    first = {i for i, (start, _, _) in enumerate(tokens) if start in openers}
    return tokens, labels, first


def _matrix(rows: list[list[int]]) -> object:
    from scipy.sparse import csr_matrix  # type: ignore[import-untyped]

    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.fromiter((i for r in rows for i in r), dtype=np.int32, count=int(indptr[-1]))
    return csr_matrix((np.ones(len(indices), dtype=np.float32), indices, indptr), shape=(len(rows), BUCKETS))


def _fit(x: object, y: np.ndarray, classes: int, seed: int) -> np.ndarray:
    """A multinomial logistic regression; its weights as (buckets, classes) float32 with the
    intercept folded into the "bias" feature's bucket."""
    from sklearn.linear_model import SGDClassifier  # type: ignore[import-untyped]

    model = SGDClassifier(loss="log_loss", alpha=2e-6, max_iter=12, tol=None, random_state=seed, average=True)
    model.fit(x, y)
    weights = np.zeros((BUCKETS, classes), dtype=np.float32)
    for n, label in enumerate(model.classes_):
        weights[:, int(label)] = model.coef_[n] if len(model.classes_) > 2 else (model.coef_[0] if n else -model.coef_[0])
    bias = np.zeros(classes, dtype=np.float32)
    for n, label in enumerate(model.classes_):
        bias[int(label)] = model.intercept_[n] if len(model.classes_) > 2 else (model.intercept_[0] if n else -model.intercept_[0])
    missing = sorted(set(range(classes)) - {int(c) for c in model.classes_})
    weights[:, missing] = 0.0
    bias[missing] = -1e3
    return np.vstack([weights, bias[None, :]])


def build(seed: int, messages: int, locomo: Path | None, beam: Path | None) -> dict[str, np.ndarray]:
    lines = dialogue(locomo, beam, seed=seed)
    gen = Generator(seed, lines)
    token_rows: list[list[int]] = []
    token_y: list[int] = []
    sent_rows: list[list[int]] = []
    sent_y: list[int] = []
    key_rows: list[list[int]] = []
    key_y: list[int] = []
    for _ in range(messages):
        examples: list[Example] = gen.message()
        text, sents, spans = render(examples)
        tokens, labels, first = token_labels(text, spans)
        token_rows += token_features(tokens, first)
        token_y += labels
        for start, end, role, key in sents:
            feats = sentence_features(text[start:end])
            sent_rows.append(feats)
            sent_y.append(ROLES.index(role))
            if key is not None:
                key_rows.append(feats)
                key_y.append(KEY_CLASSES.index(key))
    started = time.perf_counter()
    out = {
        "tokens": _fit(_matrix(token_rows), np.array(token_y), 1 + len(SPAN_KINDS), seed),
        "roles": _fit(_matrix(sent_rows), np.array(sent_y), len(ROLES), seed),
        "keys": _fit(_matrix(key_rows), np.array(key_y), len(KEY_CLASSES), seed),
    }
    print(f"trained on {len(token_y)} tokens, {len(sent_y)} sentences, {len(key_y)} preferences "
          f"in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return out


def _quantized(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 weights with one scale per class: a quarter of float32's size."""
    scale = np.maximum(np.abs(weights).max(axis=0), 1e-9) / 127.0
    return np.round(weights / scale).astype(np.int8), scale.astype(np.float32)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--messages", type=int, default=30000)
    parser.add_argument("--locomo", type=Path)
    parser.add_argument("--beam", type=Path)
    parser.add_argument("--out", type=Path, default=WEIGHTS)
    args = parser.parse_args(argv)
    random.seed(args.seed)
    heads = build(args.seed, args.messages, args.locomo, args.beam)
    arrays: dict[str, np.ndarray] = {}
    for name, weights in heads.items():
        arrays[name], arrays[f"{name}_scale"] = _quantized(weights)
    np.savez_compressed(args.out, **arrays)  # type: ignore[arg-type]
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
