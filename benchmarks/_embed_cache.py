"""MiniLM vectors cached on disk between benchmark runs, so tuning loops never wait on the model."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fourfold.embeddings.base import Embedder, Vectors

__all__ = ["CACHE_DIR", "CachedEmbedder"]

# Outside the repo: a cache is no source file.
CACHE_DIR = Path.home() / ".cache" / "fourfold"


class CachedEmbedder(Embedder):
    """The bundled MiniLM's vectors keyed by a hash of the text, kept in an .npz file between runs.

    Its vectors are the model's own, so results equal those of the model itself.
    """

    name = "all-MiniLM-L6-v2"
    dimension = 384

    def __init__(self, path: Path) -> None:
        self.path = path
        self._vectors: dict[str, Vectors] = {}
        if path.exists():
            with np.load(path) as npz:
                self._vectors = {key: npz[key] for key in npz.files}
        self._model: Any = None
        self.dirty = False

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        keys = [self._key(t) for t in texts]
        missing = [t for t, key in zip(texts, keys, strict=True) if key not in self._vectors]
        if missing:
            from fourfold.embeddings.default import default_embedder

            fresh = default_embedder().embed_many(missing)
            for text, vector in zip(missing, fresh, strict=True):
                self._vectors[self._key(text)] = vector
            self.dirty = True
        return np.stack([self._vectors[key] for key in keys])

    def save(self) -> None:
        if self.dirty:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(self.path, **self._vectors)  # type: ignore[arg-type]  # numpy's stub
            self.dirty = False
