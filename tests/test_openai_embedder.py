"""The OpenAI-compatible embedder through the real `openai` SDK against a local server."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import OpenMemory
from fourfold import EmbedderMismatch, ModelError
from fourfold.embeddings import OpenAIEmbedder
from fourfold.testing import FakeLLMServer


def test_embeds_batches_in_order_and_stores_work(open_memory: OpenMemory, tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        emb = OpenAIEmbedder(model="nomic-embed-text", dimension=8, base_url=server.openai_url, batch_size=2)
        vectors = emb.embed_many(["alpha beta", "gamma", "alpha beta"])
        assert vectors.shape == (3, 8)
        np.testing.assert_allclose(vectors[0], vectors[2], atol=1e-6)
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        bodies = [r.body for r in server.requests if r.path == "/v1/embeddings"]
        sent = [t for b in bodies for t in b["input"]]
        assert sorted(set(sent)) == ["alpha beta", "gamma"] and all(len(b["input"]) <= 2 for b in bodies)
        assert bodies[0]["model"] == "nomic-embed-text"
        with open_memory(tmp_path, embedder=emb) as mem:
            mem.long_term.remember("alpha beta durable fact", scope="s")
            assert mem.long_term.recall("alpha beta", scope="s", k=1)[0].text == "alpha beta durable fact"
    with pytest.raises(EmbedderMismatch, match="openai:nomic-embed-text:8"):
        open_memory(tmp_path, embedder=OpenAIEmbedder(model="other", dimension=8, base_url="http://127.0.0.1:9"))


def test_wrong_dimension_and_dead_server_are_model_errors() -> None:
    with FakeLLMServer() as server:
        with pytest.raises(ModelError, match="expected"):
            OpenAIEmbedder(model="m", dimension=384, base_url=server.openai_url).embed("x")
    with pytest.raises(ModelError):
        OpenAIEmbedder(model="m", dimension=8, base_url="http://127.0.0.1:9/v1", timeout=2).embed("x")


@pytest.mark.parametrize(("given", "env", "sent"), [
    ("ffk_given", "sk-env", "Bearer ffk_given"),
    (None, "sk-env", "Bearer sk-env"),
    (None, None, "Bearer not-needed"),
])
def test_the_key_is_chosen_as_the_chat_model_chooses_it(
    monkeypatch: pytest.MonkeyPatch, given: str | None, env: str | None, sent: str
) -> None:
    """The argument, else $OPENAI_API_KEY, else a placeholder for local servers: one rule for both clients."""
    from fourfold.models import OpenAICompatModel

    if env is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", env)
    with FakeLLMServer(["ok"]) as server:
        OpenAIEmbedder(model="m", dimension=8, base_url=server.openai_url, api_key=given).embed("x")
        OpenAICompatModel(model="m", base_url=server.openai_url, api_key=given).chat([{"role": "user", "content": "hi"}])
        assert [r.headers["authorization"] for r in server.requests] == [sent, sent]


def test_the_embedder_takes_the_chat_models_connection_keywords() -> None:
    """One set of keywords (`SDKOptions`) for every SDK client, each reaching the SDK; a misspelt
    one fails at construction, as a plain signature would, not at the first request."""
    from fourfold.models import AnthropicModel, OpenAICompatModel

    emb = OpenAIEmbedder(model="m", dimension=8, base_url="http://127.0.0.1:9/v1", timeout=3, max_retries=0)
    assert (emb.client.max_retries, emb.client.timeout, str(emb.client.base_url)) == (0, 3, "http://127.0.0.1:9/v1/")
    assert OpenAIEmbedder(model="m", dimension=8).client.max_retries == 1
    assert OpenAICompatModel(model="m").client.max_retries == 2
    makers = [lambda **kw: OpenAIEmbedder(model="m", dimension=8, **kw),
              lambda **kw: OpenAICompatModel(model="m", **kw), lambda **kw: AnthropicModel(**kw)]
    for make in makers:
        with pytest.raises(TypeError, match="unexpected keyword arguments: timout"):
            make(timout=5)
