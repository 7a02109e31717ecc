"""Embedders: the interface, a hash-based test embedder, MiniLM and OpenAI-compatible clients.

`CoalescingEmbedder` wraps any of them so concurrent calls share one batch (for services).
Importing them is cheap: each loads its model runtime or SDK when first used.
"""

from fourfold.embeddings.base import Embedder, Vectors
from fourfold.embeddings.coalescing import CoalescingEmbedder
from fourfold.embeddings.default import default_embedder
from fourfold.embeddings.hashing import HashEmbedder
from fourfold.embeddings.minilm import MiniLMEmbedder
from fourfold.embeddings.openai_compat import OpenAIEmbedder

__all__ = [
    "CoalescingEmbedder",
    "Embedder",
    "HashEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "Vectors",
    "default_embedder",
]

