"""The embedder seam: one required method, conveniences derived here."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from fourfold.errors import InvalidInput

__all__ = ["Embedder", "Vectors"]

Vectors = npt.NDArray[np.float32]


class Embedder(ABC):
    """Turns texts into unit-length float32 vectors.

    Subclasses implement `embed_batch` and set `name` and `dimension`; `name` plus
    `dimension` is the identity a store records so that it is never queried with
    vectors from another model.
    """

    name: str = "embedder"
    dimension: int = 0
    batch_size: int = 64

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Embed texts; returns an array of shape (len(texts), dimension), L2-normalised."""

    @property
    def identity(self) -> str:
        return f"{self.name}:{self.dimension}"

    def embed(self, text: str) -> Vectors:
        """Embed one text; shape (dimension,)."""
        vectors: Vectors = self.embed_many([text])[0]
        return vectors

    def embed_many(self, texts: Sequence[str]) -> Vectors:
        """Embed any number of texts in batches of `batch_size`."""
        if isinstance(texts, str):
            raise InvalidInput("embed_many takes a sequence of texts, not one string")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self.embed_batch(texts[i : i + self.batch_size])
            for i in range(0, len(texts), self.batch_size)
        ]
        out = np.concatenate(parts).astype(np.float32, copy=False)
        return normalize(out)


def normalize(vectors: Vectors) -> Vectors:
    """L2-normalise rows, leaving zero rows as they are."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Vectors = (vectors / norms).astype(np.float32, copy=False)
    return result
