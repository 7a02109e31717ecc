"""Embeddings from any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

import numpy as np

from fourfold._extras import SDKClient, SDKOptions
from fourfold.embeddings.base import Embedder, Vectors, normalize
from fourfold.errors import ModelError

__all__ = ["OpenAIEmbedder"]


class OpenAIEmbedder(SDKClient, Embedder):
    """`POST {base_url}/embeddings` through the official `openai` SDK.

    The dimension must be given (a store records it before the first call), and is
    checked against what the server returns. `api_key` None reads OPENAI_API_KEY, else a
    placeholder (local servers such as Ollama ignore it), as `OpenAICompatModel` does. The
    connection keywords (`api_key`, `base_url`, `timeout`, `max_retries`, `client`) are the
    chat models' (`SDKOptions`).
    """

    #: One try again, not the chat models' two: a write or a recall waits on the embedder.
    default_retries = 1

    def __init__(self, *, model: str, dimension: int, batch_size: int = 64, **options: Unpack[SDKOptions]) -> None:
        self.name = f"openai:{model}"
        self.model = model
        self.dimension = dimension
        self.batch_size = batch_size
        self._keep_client(options)

    def _make_client(self) -> Any:
        from fourfold.models.openai_compat import openai_client

        return openai_client(**self._options, what="OpenAIEmbedder")

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        try:
            response = self.client.embeddings.create(model=self.model, input=list(texts))
        except Exception as exc:  # the SDK's error types vary by version; all are model errors
            raise ModelError(f"embedding request to {self._options['base_url'] or 'OpenAI'} failed: {exc}") from exc
        rows = sorted(response.data, key=lambda d: d.index)
        vectors = np.asarray([row.embedding for row in rows], dtype=np.float32)
        if vectors.shape != (len(texts), self.dimension):
            raise ModelError(
                f"{self.model} returned vectors of shape {vectors.shape}, expected ({len(texts)}, {self.dimension})"
            )
        return normalize(vectors)
