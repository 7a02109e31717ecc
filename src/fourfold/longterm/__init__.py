"""Long-term memory: durable memories recalled by hybrid similarity, scoped per customer."""

from fourfold.longterm.enrich import Enricher, ModelEnricher
from fourfold.longterm.retrieval import Weights
from fourfold.longterm.store import DOC_KIND, LongTermMemory, MemoryInput

__all__ = ["DOC_KIND", "Enricher", "LongTermMemory", "MemoryInput", "ModelEnricher", "Weights"]
