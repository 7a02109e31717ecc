"""The public API is exactly the intended names: the package root and each concept's package
declare `__all__`, every name in it resolves, and a name added or dropped fails here first."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import fourfold

PUBLIC = {
    "fourfold": {
        "BudgetExceeded", "DocHit", "DocSource", "EmbedderMismatch", "Episode", "Fact", "Forbidden", "FourfoldError",
        "Ingested", "InvalidInput", "LockTimeout", "Memory", "MissingDependency", "ModelError", "NotFound", "Recalled",
        "Redaction", "Remembered", "StorageFull", "StoreCorrupt", "StoreReadOnly", "StoreUnavailable", "TooLarge", "__version__",
    },
    "fourfold.agent": {
        "DATA_CLOSE", "DATA_OPEN", "OpenTicket", "PromptParts", "Reply", "Resolution", "SupportAgent", "ToolUse",
        "TurnReport", "assemble_system", "customer_scope",
    },
    "fourfold.cli": {"main"},
    "fourfold.compat": {"Identity"},
    "fourfold.integrations": set(),
    "fourfold.embeddings": {
        "CoalescingEmbedder", "Embedder", "HashEmbedder", "MiniLMEmbedder", "OpenAIEmbedder", "Vectors", "default_embedder",
    },
    "fourfold.episodic": {
        "EpisodeLog", "PENDING_SCOPE", "SHARED_SCOPE", "dense_text", "lexical_text", "render_episode", "render_episodes",
        "render_ticket",
    },
    "fourfold.longterm": {"DOC_KIND", "Enricher", "LongTermMemory", "MemoryInput", "ModelEnricher", "Weights"},
    "fourfold.models": {
        "AnthropicModel", "ChatModel", "ChatRequest", "ChatResponse", "MODEL_ENV", "Message", "ModelSpec", "OfflineModel",
        "OpenAICompatModel", "ScriptedModel", "ToolCall", "Usage", "default_model", "from_spec", "parse_spec",
    },
    "fourfold.ranking": {
        "EPISODES", "MEMORIES", "RELEVANCE_FLOOR", "BM25Index", "BM25Table", "Background", "Calibration",
        "CollectionStats", "Fusion", "Parts", "evidence_of", "lexical_share", "rank", "relevance", "typicality",
    },
    "fourfold.semantic": {"Chunk", "DocumentStore", "FactStore", "PolicyTool", "chunk_text"},
    "fourfold.service": {"ApiKey", "DEFAULT_TENANT", "KeyStore", "Tenants", "create_app"},
    "fourfold.shortterm": {
        "AnthropicCounter", "EstimateCounter", "ExtractiveSummarizer", "ModelSummarizer", "Pipeline", "SUMMARY_PREFIX",
        "SlidingWindow", "Strategy", "Summarize", "Summarizer", "TRUNCATION_MARKER", "TokenBudget", "TokenCounter",
        "TurnGroup", "group_turns", "is_summary",
    },
    "fourfold.stores": {
        "ChromaVectorStore", "InMemoryVectorStore", "PostgresVectorStore", "SQLiteVectorStore", "VectorRecord",
        "VectorStore",
    },
    "fourfold.testing": {"ErrorReply", "FakeLLMServer", "RecordedRequest", "ScriptedModel"},
    "fourfold.text": {
        "DATE_KEYS", "POLICIES", "Policy", "STOPWORDS", "detect", "is_chatter", "memory_date", "parse_date", "redact",
        "time_words", "tokenize",
    },
}
#: Names whose backend is an optional extra, checked only when it is installed.
OPTIONAL = {("fourfold.stores", "ChromaVectorStore"): "chromadb", ("fourfold.stores", "PostgresVectorStore"): "psycopg",
            ("fourfold.service", "create_app"): "fastapi"}


def test_every_public_package_is_pinned() -> None:
    packages = {"fourfold"} | {f"fourfold.{m.name}" for m in pkgutil.iter_modules(fourfold.__path__)
                               if m.ispkg and not m.name.startswith("_")}
    assert packages == set(PUBLIC)


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_exported_names_are_exactly_the_public_api(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) == PUBLIC[package]
    assert len(module.__all__) == len(set(module.__all__))
    for name in module.__all__:
        if (extra := OPTIONAL.get((package, name))) is not None:
            pytest.importorskip(extra)
        assert getattr(module, name) is not None


def test_every_error_of_the_hierarchy_is_exported_at_the_root() -> None:
    assert set(fourfold.errors.__all__) <= set(fourfold.__all__)
    assert all(issubclass(getattr(fourfold, n), fourfold.FourfoldError) for n in fourfold.errors.__all__)
