"""Vector-store backends behind one small interface: embedded Chroma, Chroma server, in-memory."""

from fourfold.stores.inmemory import InMemoryVectorStore
from fourfold.stores.vector import VectorRecord, VectorStore

__all__ = ["ChromaVectorStore", "InMemoryVectorStore", "VectorRecord", "VectorStore"]


def __getattr__(name: str) -> object:
    if name == "ChromaVectorStore":  # chromadb is slow to import: only when asked
        from fourfold.stores.chroma import ChromaVectorStore

        return ChromaVectorStore
    raise AttributeError(name)
