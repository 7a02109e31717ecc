"""Secrets: the test_text corpus is redacted before storage in every store that keeps customer
text; ordinary support sentences are stored unchanged.

"Every store" here means: long-term memories (and their metadata), episodes, and the
persisted conversation threads written by the agent. Facts are authoritative values an
admin sets and every customer's model sees through lookup_policy: a secret must not be
stored there at all, so `facts.set` should refuse it, not rewrite it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import secrets_corpus
from conftest import OpenMemory
from fourfold import InvalidInput, Memory
from fourfold.agent import SupportAgent
from fourfold.models import ScriptedModel
from fourfold.shortterm.threads import Thread
from fourfold.text.tokenize import tokenize
from harness import secrets_channels
from test_text import ORDINARY, SECRETS, _secret_of

if TYPE_CHECKING:
    from fourfold.testing.postgres import PostgresServer


def _files(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def _on_disk(case: tuple[str, str, str], blob: bytes) -> bool:
    """Whether a secret's bytes are in the files, or any of its distinctive words as lexical
    search keeps them (lowercased, split at punctuation, stemmed: a store's kept tokens)."""
    secret = _secret_of(case)
    words = {w for stem in (True, False) for w in tokenize(secret, stem=stem)
             if len(w) >= 10 or (len(w) >= 6 and any(c.isdigit() for c in w))}
    lowered = blob.lower()
    return secret.encode() in blob or any(w.encode() in lowered for w in words)


def test_corpus_is_broad_enough() -> None:
    assert len(SECRETS) >= 30 and len({kind for _, _, kind in SECRETS}) >= 10
    assert len(set(ORDINARY)) >= 200


def test_secrets_never_reach_long_term_memory_or_its_files(open_memory: OpenMemory, tmp_path: Path) -> None:
    with open_memory(tmp_path) as mem:
        for i, (text, _, kind) in enumerate(SECRETS):
            mid = mem.long_term.remember(f"Ticket {i}: {text}", scope=f"customer:{i}", metadata={"note": text})
            assert mid.redactions, kind
            stored = mem.long_term.get(mid)
            assert _secret_of(SECRETS[i]) not in stored.text + json.dumps(stored.metadata)
    blob = _files(tmp_path)
    assert [case[2] for case in SECRETS if _on_disk(case, blob)] == []


def test_secrets_never_reach_the_episode_log(open_memory: OpenMemory, tmp_path: Path) -> None:
    with open_memory(tmp_path) as mem:
        for i, (text, _, _) in enumerate(SECRETS):
            mem.episodes.record(goal=f"Ticket {i}: {text}", actions=[text], outcome=f"Rotated: {text}", success=True,
                                scope=f"customer:{i}")
        assert len(mem.episodes) == len(SECRETS)
        mem.episodes.similar_successes("ticket rotated", k=3)  # writes the vector cache too
    blob = _files(tmp_path)
    assert [case[2] for case in SECRETS if _on_disk(case, blob)] == []


def test_secrets_never_reach_the_agents_thread_or_the_model(open_memory: OpenMemory, tmp_path: Path) -> None:
    model = ScriptedModel(lambda *_: __import__("fourfold.models", fromlist=["ChatResponse"]).ChatResponse(text="ok"))
    with open_memory(tmp_path) as mem:
        agent = SupportAgent(mem, model, doc_k=0)
        for i, (text, _, _) in enumerate(SECRETS):
            agent.turn(f"c{i}", f"Here is my info: {text}")
            agent.resolve(f"c{i}", "Told them never to share it", success=True)
    sent = json.dumps(model.requests, ensure_ascii=False)
    blob = _files(tmp_path)
    assert [case[2] for case in SECRETS if _secret_of(case) in sent] == []
    assert [case[2] for case in SECRETS if _on_disk(case, blob)] == []


def test_a_thread_saved_directly_is_redacted_too(open_memory: OpenMemory, tmp_path: Path) -> None:
    with open_memory(tmp_path) as mem:
        text, _, _ = SECRETS[0]
        mem.conversations.save(Thread("customer:x", messages=({"role": "user", "content": text},)))
    assert _secret_of(SECRETS[0]).encode() not in _files(tmp_path / "conversations")


def test_a_secret_is_refused_as_a_fact_value(memory: Memory) -> None:
    for i, (text, _, _) in enumerate(SECRETS):
        with pytest.raises(InvalidInput):
            memory.facts.set(f"note.{i}", text)
    assert memory.facts.keys() == []


def test_ordinary_support_sentences_are_stored_unchanged_in_every_store(memory: Memory) -> None:
    results = memory.long_term.remember_many([{"text": s, "scope": "customer:o"} for s in ORDINARY])
    assert all(r.redactions == () for r in results)
    assert sorted(r.text for r in memory.long_term.all(scope="customer:o")) == sorted(set(ORDINARY))
    memory.episodes.record_many([{"goal": s, "actions": [s], "outcome": s, "success": True} for s in ORDINARY])
    assert [e.goal for e in memory.episodes.episodes()] == ORDINARY
    assert all(e.actions == (e.goal,) and e.outcome == e.goal for e in memory.episodes.episodes())
    for i, s in enumerate(ORDINARY[:60]):
        memory.facts.set(f"ordinary.{i}", s)
        assert memory.facts.get(f"ordinary.{i}").value == s
    agent = SupportAgent(memory, ScriptedModel(["noted"] * 40), doc_k=0, memory_k=1, episode_k=1)
    for s in ORDINARY[:40]:
        agent.turn("o", s)
    users = [m["content"] for m in agent.history("o") if m["role"] == "user"]
    assert users == ORDINARY[:40]


def test_the_corpus_through_every_channel_leaves_no_secret_in_reads_or_files(tmp_path: Path) -> None:
    """The benchmark's workload (harness.secrets_channels), 40+ formats x 8 channels."""
    from fourfold.stores import InMemoryVectorStore

    embedder = secrets_channels.EMBEDDER
    result = secrets_channels.run(tmp_path, secrets_corpus.SECRETS, secrets_corpus.ORDINARY, vector_store=lambda: InMemoryVectorStore(embedder_identity=embedder.identity))
    assert result.leaked_channels == {}
    assert (result.caught, result.false_positives) == (result.total, [])


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL of this test's own: its data directory holds nothing but what the test wrote."""
    from fourfold.testing.postgres import PostgresServer

    with PostgresServer() as server:
        yield server


@pytest.mark.postgres
def test_on_postgresql_the_corpus_leaves_no_secret_in_its_data_directory_or_wal(
    tmp_path: Path, own_postgres: PostgresServer
) -> None:
    """Every channel with PostgreSQL as the engine; after a CHECKPOINT, a byte scan of the
    server's data directory (tables, TOAST, indexes, pg_wal/) and log finds no secret."""
    result = secrets_channels.run(tmp_path, secrets_corpus.SECRETS, secrets_corpus.ORDINARY, postgres=own_postgres)
    assert result.leaked_channels == {}
    assert (result.caught, result.false_positives) == (result.total, [])


@pytest.mark.postgres
def test_the_postgresql_scan_sees_a_secret_written_in_clear(open_memory: OpenMemory, own_postgres: PostgresServer) -> None:
    """The control: a secret stored unredacted (around it, prose PostgreSQL would compress) is
    found on disk, in the table or the WAL; and a compressed value is reported, not missed."""
    engine = secrets_channels.PostgresEngine(own_postgres, secrets_corpus.SECRETS)
    try:
        case = secrets_corpus.SECRETS[0]
        prose = "The nightly export copies the order tables to the warehouse. " * 60
        for schema, raw in (("control", True), ("compressed", False)):
            with open_memory(engine.target(schema)):
                if raw:
                    engine.prepare()
            table = engine.target(schema).rsplit("schema=", 1)[1]
            engine.conn.execute(f'INSERT INTO "{table}".meta (name, value) VALUES (%s, %s)',
                                (schema, prose + case.secret + prose))
            if raw:
                assert engine.disk("control") == {0}
        with pytest.raises(RuntimeError, match=re.escape("compressed values in secrets_compressed.meta.value")):
            engine.check()
    finally:
        engine.close()
