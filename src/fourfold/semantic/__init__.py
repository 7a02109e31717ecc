"""Semantic memory: facts with history and the `lookup_policy` tool over them, and documents
chunked into long-term memory for search."""

from fourfold.semantic.chunking import Chunk, chunk_text
from fourfold.semantic.docs import DocumentStore
from fourfold.semantic.facts import FactStore
from fourfold.semantic.tools import PolicyTool

__all__ = ["Chunk", "DocumentStore", "FactStore", "PolicyTool", "chunk_text"]
