"""Embedders: the interface, a hash-based test embedder, MiniLM and OpenAI-compatible clients.

`CoalescingEmbedder` wraps any of them so concurrent calls share one batch (for services).
"""

from fourfold.embeddings.base import Embedder, Vectors
from fourfold.embeddings.coalescing import CoalescingEmbedder
from fourfold.embeddings.hashing import HashEmbedder

__all__ = [
    "CoalescingEmbedder",
    "Embedder",
    "HashEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "Vectors",
    "default_embedder",
]


def __getattr__(name: str) -> object:
    # Heavy backends load lazily so `import fourfold` stays fast.
    if name == "MiniLMEmbedder":
        from fourfold.embeddings.minilm import MiniLMEmbedder

        return MiniLMEmbedder
    if name == "OpenAIEmbedder":
        from fourfold.embeddings.openai_compat import OpenAIEmbedder

        return OpenAIEmbedder
    if name == "default_embedder":
        from fourfold.embeddings.default import default_embedder

        return default_embedder
    raise AttributeError(name)
