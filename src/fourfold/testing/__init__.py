"""What you need to test your own agent against fourfold: deterministic fakes and throwaway servers.

- `ScriptedModel`: a chat model that answers from a script and records what it was sent;
- `FakeLLMServer` (`ErrorReply`, `RecordedRequest`): a local HTTP server speaking the Anthropic
  Messages and OpenAI chat APIs, for the real SDKs;
- `fourfold.testing.postgres.PostgresServer`: a throwaway PostgreSQL with pgvector on loopback;
- `fourfold.testing.chroma_server.ChromaServer`: a throwaway Chroma server (`chroma run`) on loopback.

The hash embedder (`fourfold.embeddings.HashEmbedder`) and the in-memory store
(`fourfold.stores.InMemoryVectorStore`) live beside the real ones. Exports load on first access so
that importing this package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fourfold.models.scripted import ScriptedModel
    from fourfold.testing.fake_llm_server import ErrorReply, FakeLLMServer, RecordedRequest

__all__ = ["ErrorReply", "FakeLLMServer", "RecordedRequest", "ScriptedModel"]

_FAKE_SERVER_NAMES = {"ErrorReply", "FakeLLMServer", "RecordedRequest"}


def __getattr__(name: str) -> object:
    if name in _FAKE_SERVER_NAMES:
        from fourfold.testing import fake_llm_server

        return getattr(fake_llm_server, name)
    if name == "ScriptedModel":
        from fourfold.models.scripted import ScriptedModel

        return ScriptedModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
