"""A deterministic, dependency-free embedder for tests and offline tooling."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from fourfold.embeddings.base import Embedder, Vectors, normalize

__all__ = ["HashEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder(Embedder):
    """Feature-hashing of lower-cased words and character trigrams.

    Texts that share words get close vectors, so similarity tests are meaningful,
    and the same text always gives the same vector in every process.
    """

    def __init__(self, dimension: int = 256) -> None:
        self.dimension = dimension
        self.name = "hash-v1"

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
                h = int.from_bytes(digest, "little")
                sign = 1.0 if h & 1 else -1.0
                out[row, (h >> 1) % self.dimension] += sign * weight
        return normalize(out)


def _features(text: str) -> list[tuple[str, float]]:
    words = _WORD.findall(text.lower())
    feats: list[tuple[str, float]] = [("w:" + w, 1.0) for w in words]
    for w in words:
        padded = f"#{w}#"
        feats.extend(("c:" + padded[i : i + 3], 0.3) for i in range(len(padded) - 2))
    return feats
