"""The embedder seam: one required method, conveniences derived here."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
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
    #: The identity of the model whose vectors this one's approximate (see `AsymmetricEmbedder`).
    approximates: str | None = None
    batch_size: int = 64

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Embed texts; returns an array of shape (len(texts), dimension), L2-normalised."""

    @property
    def identity(self) -> str:
        return f"{self.name}:{self.dimension}"

    #: How many recent single-text embeddings `embed` keeps (0 turns the cache off).
    query_cache_size: int = 128

    def embed(self, text: str) -> Vectors:
        """Embed one text; shape (dimension,).

        Recent texts are cached: one agent turn embeds the customer's message for
        long-term recall, for similar episodes and for documents, and pays once.
        """
        cache: OrderedDict[str, Vectors] = self.__dict__.setdefault("_query_cache", OrderedDict())
        lock: threading.Lock = self.__dict__.setdefault("_query_lock", threading.Lock())
        with lock:
            hit = cache.get(text)
            if hit is not None:
                cache.move_to_end(text)
                return hit.copy()
        vector: Vectors = self.embed_many([text])[0]
        if self.query_cache_size > 0 and isinstance(text, str):
            with lock:
                cache[text] = vector.copy()
                while len(cache) > self.query_cache_size:
                    cache.popitem(last=False)
        return vector

    def __getstate__(self) -> dict[str, object]:
        """Picklable (a store worker embeds in another process): the query cache stays here."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_query_cache", "_query_lock")}

    def embed_many(self, texts: Sequence[str]) -> Vectors:
        """Embed any number of texts in batches of `batch_size`."""
        if isinstance(texts, str):
            raise InvalidInput("embed_many takes a sequence of texts, not one string")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if len(texts) <= self.batch_size:
            return normalize(np.asarray(self.embed_batch(texts), dtype=np.float32))
        # Batches of similar length: a batch is padded to its longest text, so sorting
        # by length saves most of the padding work (the rows go back in input order).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        ordered = [texts[i] for i in order]
        parts = [
            self.embed_batch(ordered[i : i + self.batch_size])
            for i in range(0, len(ordered), self.batch_size)
        ]
        stacked = np.concatenate(parts).astype(np.float32, copy=False)
        out = np.empty_like(stacked)
        out[order] = stacked
        return normalize(out)


def normalize(vectors: Vectors) -> Vectors:
    """L2-normalise rows, leaving zero rows as they are."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Vectors = (vectors / norms).astype(np.float32, copy=False)
    return result
