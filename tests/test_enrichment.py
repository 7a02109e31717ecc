"""Write-time enrichment: off by default, behind the ChatModel seam, never able to lose a write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import OpenMemory
from fourfold import Memory
from fourfold.embeddings import HashEmbedder
from fourfold.longterm import LongTermMemory, ModelEnricher
from fourfold.models import ChatResponse, ScriptedModel
from fourfold.stores import InMemoryVectorStore


def facts_reply(*lists: list[str]) -> str:
    return "Here you go: " + json.dumps({"facts": list(lists)})


def lt_with(model: ScriptedModel) -> LongTermMemory:
    e = HashEmbedder()
    return LongTermMemory(InMemoryVectorStore(embedder_identity=e.identity), e, enricher=ModelEnricher(model))


def test_extracted_facts_make_implied_memories_recallable() -> None:
    model = ScriptedModel([facts_reply(["Melanie has a dog named Luna"], [])])
    lt = lt_with(model)
    luna, pottery = lt.remember_many([
        {"text": "Melanie: Luna chewed my sneakers again, naughty girl!", "scope": "c"},
        {"text": "Melanie: I started a pottery class downtown", "scope": "c"},
    ])
    assert lt.store.get([luna.id])[0].extra == ("Melanie has a dog named Luna",)
    assert lt.store.get([pottery.id])[0].extra == ()
    hit = lt.recall("which dog does Melanie have?", scope="c", k=1)[0]
    assert hit.text == "Melanie: Luna chewed my sneakers again, naughty girl!"  # shown as written
    sent = model.requests[0]["messages"][0]["content"]
    assert "Luna chewed my sneakers" in sent and "pottery class" in sent


def test_without_an_enricher_nothing_calls_a_model(memory: Memory) -> None:
    assert memory.long_term.enricher is None


def test_a_failed_or_malformed_answer_stores_the_memories_anyway() -> None:
    for reply in ["not json at all", facts_reply(["only one list"]), json.dumps({"facts": "oops"})]:
        lt = lt_with(ScriptedModel([reply]))
        lt.remember_many([{"text": "keeps invoices in PDF", "scope": "c"}, {"text": "lives in Oslo", "scope": "c"}])
        assert sorted(r.text for r in lt.all(scope="c")) == ["keeps invoices in PDF", "lives in Oslo"]
    lt = lt_with(ScriptedModel([]))  # an exhausted script raises ModelError: the write still lands
    lt.remember("prefers phone calls in the morning", scope="c")
    assert [r.text for r in lt.all(scope="c")] == ["prefers phone calls in the morning"]


def test_extracted_facts_are_redacted_and_documents_skipped(open_memory: OpenMemory, tmp_path: Path) -> None:
    secret = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    calls: list[Any] = []

    def reply(messages: Any, system: str, tools: Any) -> ChatResponse:
        calls.append(messages)
        return ChatResponse(facts_reply([f"their key is {secret}"]))

    mem = open_memory(enricher=ModelEnricher(ScriptedModel(reply)))
    mem.long_term.remember("set up the staging account", scope="c")
    mem.docs.ingest_text("# Refunds\n\nRefunds take five days.", source="refunds.md")
    assert len(calls) == 1  # the document chunk was not sent
    assert secret.encode() not in b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
