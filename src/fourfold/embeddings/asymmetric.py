"""Asymmetric embedding: memories with the exact model, queries with a cheaper approximation of it.

A service embeds a query on every read and waits for it; the memories it stores are embedded
once, off the reader's path. An int8 MiniLM (`OnnxMiniLMInt8Embedder`) embeds a query with
much less CPU than the fp32 model, with vectors close to its (see its docstring for the
measured cosines and recall), so the stored vectors stay exact and only the query side is
approximated.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager

from fourfold.embeddings.base import Embedder, Vectors
from fourfold.embeddings.coalescing import for_reader
from fourfold.errors import InvalidInput

__all__ = ["AsymmetricEmbedder"]


class AsymmetricEmbedder(Embedder):
    """`embed` (one query a reader waits on) goes to `queries`; everything else to `documents`.

    The identity is the documents model's: stores hold only its vectors. `queries` must be
    the same model or declare, as `approximates`, that it approximates the documents model.
    Episodes, memories and documents are always embedded by `documents`, even when a reader
    waits on them (a search embedding episodes not embedded yet), since those vectors are kept.
    """

    def __init__(self, documents: Embedder, queries: Embedder) -> None:
        if queries.dimension != documents.dimension or (
            queries.identity != documents.identity and queries.approximates != documents.identity
        ):
            raise InvalidInput(
                f"the query embedder {queries.identity} is not an approximation of {documents.identity}"
            )
        self.documents = documents
        self.queries = queries
        self.name = documents.name
        self.dimension = documents.dimension
        self.batch_size = documents.batch_size
        self.query_cache_size = 0  # `queries` keeps its own

    def embed(self, text: str) -> Vectors:
        return self.queries.embed(text)

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        return self.documents.embed_batch(texts)

    def embed_many(self, texts: Sequence[str]) -> Vectors:
        return self.documents.embed_many(texts)

    def urgent(self) -> AbstractContextManager[None]:
        """Documents embedded in this block are waited on by a reader (see `for_reader`)."""
        return for_reader(self.documents)
