"""The `Memory` facade: one data dir, the manifest, forget_scope across stores, processes."""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import OpenMemory
from engines import assert_erased
from fourfold import EmbedderMismatch, InvalidInput, Memory, StoreCorrupt
from fourfold.embeddings import HashEmbedder
from fourfold.shortterm.threads import Thread


def test_import_is_light() -> None:
    import subprocess
    import sys

    code = "import sys, fourfold; print(sorted(m for m in ('torch','chromadb','numpy','anthropic') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_seed_style_api_round_trip(open_memory: OpenMemory, memory_target: Path | str) -> None:
    mem = open_memory(memory_target)
    mid = mem.long_term.remember("Prefers email", scope="customer:42", kind="preference", metadata={"src": "t"})
    assert mem.long_term.recall("email", scope="customer:42", k=3, kinds=("preference",))[0].id == mid
    ep = mem.episodes.record(goal="deploy 502", actions=["restart worker"], outcome="fixed", success=True)
    assert mem.episodes.similar_successes("deploy returns 502", k=3)[0].id == ep.id
    mem.facts.set("refund_window_days", 30)
    assert mem.facts.lookup("refund_window_days") == "30"
    assert mem.facts.lookup("nope") == "UNKNOWN — escalate to a human"
    assert mem.facts.tool_schema()["name"] == "lookup_policy"
    ids = mem.docs.ingest("# Refunds\n\nRefunds go back to the original card within 5 days.", source="refunds.md")
    assert ids and mem.docs.search("refund card", k=5)[0].source == "refunds.md"
    # documents never leak into long-term recall, memories never into docs.search
    assert all(r.kind != "doc" for r in mem.long_term.recall("refund card", k=10))
    assert all(h.source == "refunds.md" for h in mem.docs.search("email", k=10))


def test_docs_ingest_a_file_and_reingest_is_idempotent(open_memory: OpenMemory, tmp_path: Path, memory_target: Path | str) -> None:
    doc = tmp_path / "manual.md"
    doc.write_text("# Setup\n\nInstall the app.\n\n## Login\n\nUse SSO to log in. " + "More detail. " * 200)
    mem = open_memory(memory_target)
    first = mem.docs.ingest(doc)
    assert mem.docs.ingest(doc) == first and len(first) > 1
    hit = mem.docs.search("log in with SSO", k=1)[0]
    assert (hit.source, hit.heading) == ("manual.md", "Setup > Login")


def test_forget_scope_erases_every_store_and_the_bytes_on_disk(open_memory: OpenMemory, memory_target: Path | str) -> None:
    mem = open_memory(memory_target)
    mem.long_term.remember("Zanzibar shipping address", scope="A")
    mem.long_term.remember("Reykjavik shipping address", scope="B")
    mem.episodes.record(goal="Zanzibar parcel", actions=[], outcome="sent", success=True, scope="A")
    mem.episodes.similar_successes("Zanzibar parcel", scope="A")  # stores the episode's vector too
    mem.conversations.save(Thread("A", messages=({"role": "user", "content": "I live in Zanzibar"},)))
    mem.docs.ingest_text("Zanzibar depot opening hours: nine to five.", source="depot.md", scope="A")
    counts = mem.forget_scope("A")
    assert counts == {"memories": 2, "episodes": 1, "cases": 0, "conversations": 1}
    assert mem.long_term.recall("shipping address", scope="A", k=5) == []
    assert [r.text for r in mem.long_term.recall("shipping address", scope="B", k=5)] == ["Reykjavik shipping address"]
    if isinstance(memory_target, Path):
        for path in memory_target.rglob("*"):  # no byte of the scope is left in any file, log included
            assert not path.is_file() or b"zanzibar" not in path.read_bytes().lower(), path  # kept tokens too
    else:
        for table in ("memories", "episodes", "threads"):
            assert_erased(memory_target, table)
    with pytest.raises(InvalidInput):
        mem.forget_scope(None)  # type: ignore[arg-type]


def test_reopen_with_another_embedder_is_a_clear_error(open_memory: OpenMemory, memory_target: Path | str) -> None:
    open_memory(memory_target).close()
    with pytest.raises(EmbedderMismatch, match="hash-v1:256"):
        open_memory(memory_target, embedder=HashEmbedder(dimension=64))


def test_data_dir_from_a_newer_version_is_refused(open_memory: OpenMemory, tmp_path: Path) -> None:
    (tmp_path / "fourfold.json").write_text(json.dumps({"format": 99, "embedder": "hash-v1:256"}))
    with pytest.raises(StoreCorrupt, match="newer fourfold"):
        open_memory(tmp_path)


def test_data_dir_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOURFOLD_DATA_DIR", str(tmp_path / "from-env"))
    with Memory.open(embedder=HashEmbedder()) as mem:  # no path: the subject is Memory.open's default
        assert mem.data_dir == tmp_path / "from-env"


def _distinct_text(worker: int, i: int) -> str:
    """Six random-looking words: far apart under the hash embedder, so self-search is exact."""
    digest = hashlib.sha256(f"{worker}-{i}".encode()).hexdigest()
    return " ".join(digest[j : j + 6] for j in range(0, 36, 6))


def _writer(data_dir: str, worker: int, n: int) -> None:
    """One spawned process's writes (no fixtures there: it opens the store itself)."""
    with Memory.open(data_dir, embedder=HashEmbedder()) as mem:
        for i in range(n):
            mem.long_term.remember(_distinct_text(worker, i), scope=f"w{worker}")


def test_several_processes_write_one_store_safely(open_memory: OpenMemory, memory_target: Path | str) -> None:
    """Four processes write one data dir (or one PostgreSQL schema) at once: nothing is lost."""
    open_memory(memory_target).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(memory_target), w, 40)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    embedder = HashEmbedder()
    mem = open_memory(memory_target, embedder=embedder)
    store = mem.long_term.store
    assert store.count() == 160
    # Every memory comes back from its scope with the vector its text was given (fourfold
    # reads scopes and ranks them itself; it never searches Chroma's HNSW graph).
    for w in range(4):
        records = {r.text: r for r in store.scan(f"w{w}")}
        assert set(records) == {_distinct_text(w, i) for i in range(40)}
        for text, record in records.items():
            np.testing.assert_allclose(record.embedding, embedder.embed(text), atol=1e-6)
        hits = mem.long_term.recall(_distinct_text(w, 7), scope=f"w{w}", k=1)
        assert [h.text for h in hits] == [_distinct_text(w, 7)]


def test_delete_source_removes_every_chunk_and_only_that_source(open_memory: OpenMemory, memory_target: Path | str) -> None:
    with open_memory(memory_target) as mem:
        long_doc = "# Returns\n\n" + "Returns are accepted within thirty days of delivery. " * 60
        n = len(mem.docs.ingest_text(long_doc, source="returns.md"))
        mem.docs.ingest_text("# Shipping\n\nParcels ship in two days.", source="shipping.md")
        assert n > 1 and mem.docs.delete_source("returns.md") == n
        assert mem.docs.sources() == ["shipping.md"]
    if isinstance(memory_target, str):
        assert_erased(memory_target, "memories")
        return
    for path in memory_target.rglob("*"):  # nothing on disk still holds the deleted text
        assert not path.is_file() or b"thirty days" not in path.read_bytes(), path


# -- readers do not create stores; scopes; erasing the wrong scope -----------------------------


def test_open_without_create_refuses_a_missing_data_dir(open_memory: OpenMemory, tmp_path: Path) -> None:
    from fourfold import StoreUnavailable

    missing = tmp_path / "a" / "b"
    with pytest.raises(StoreUnavailable, match="no fourfold data dir at"):
        open_memory(missing, create=False)
    assert not (tmp_path / "a").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreUnavailable):  # a folder that is not a data dir is not made into one
        open_memory(tmp_path / "empty", create=False)
    assert list((tmp_path / "empty").iterdir()) == []
    open_memory(missing).close()  # the library default still creates
    open_memory(missing, create=False).close()


def test_scopes_count_and_forget_scope_can_refuse_unknown_scopes(memory: Memory) -> None:
    from fourfold import NotFound

    memory.long_term.remember("Prefers email", scope="customer:alice")
    memory.docs.ingest_text("# Plan\n\nAlice is on the gold plan.", source="plan.md", scope="customer:alice")
    memory.episodes.record(goal="late parcel", actions=[], outcome="re-shipped", success=True, scope="customer:bob")
    memory.long_term.remember("Prefers phone", scope="customer:bob", key="contact")
    memory.long_term.remember("Prefers email", scope="customer:bob", key="contact")
    assert memory.scopes() == {
        "customer:alice": {"memories": 1, "old_versions": 0, "docs": 1, "episodes": 0, "conversations": 0},
        # a listing of the scope shows its one current memory; the old version is counted apart
        "customer:bob": {"memories": 1, "old_versions": 1, "docs": 0, "episodes": 1, "conversations": 0},
    }
    with pytest.raises(NotFound, match="did you mean 'customer:alice'"):
        memory.forget_scope("alice", missing_ok=False)
    assert memory.forget_scope("alice") == {"memories": 0, "episodes": 0, "cases": 0, "conversations": 0}  # default: idempotent
    assert memory.forget_scope("customer:alice", missing_ok=False)["memories"] == 2
    assert list(memory.scopes()) == ["customer:bob"]


def test_a_document_source_holds_one_version(memory: Memory) -> None:
    seen: list[tuple[str, int, int]] = []
    first = memory.docs.ingest_text("# Refunds\n\nBack to the card within 30 days.", source="refunds.md",
                                    on_progress=lambda *p: seen.append(p))
    assert seen == [("refunds.md", 1, 1)]
    assert memory.docs.ingest_text("# Refunds\n\nBack to the card within 30 days.", source="refunds.md") == first
    memory.docs.ingest_text("# Refunds\n\nStore credit within 14 days.", source="refunds.md")
    assert [h.text for h in memory.docs.search("refund", k=5)] == ["# Refunds\n\nStore credit within 14 days."]
    assert [(d.source, d.chunks) for d in memory.docs.list()] == [("refunds.md", 1)]


def test_folder_ingest_is_bounded_and_an_empty_folder_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fourfold import NotFound
    from fourfold.errors import TooLarge
    from fourfold.semantic import docs

    (tmp_path / "empty" / ".hidden").mkdir(parents=True)
    (tmp_path / "empty" / ".hidden" / "notes.md").write_text("# Hidden\n\nnot a document")
    with pytest.raises(NotFound, match="no text or Markdown files"):
        docs.find_documents([tmp_path / "empty"])
    for i in range(4):
        (tmp_path / "many" / f"{i}.md").parent.mkdir(exist_ok=True)
        (tmp_path / "many" / f"{i}.md").write_text(f"# Doc {i}\n\ntext {i}")
    monkeypatch.setattr(docs, "MAX_FILES", 3)
    with pytest.raises(TooLarge, match="more than 3 documents"):
        docs.find_documents([tmp_path / "many"])


def test_two_memories_on_one_database_see_each_others_writes_at_once(open_memory: OpenMemory, memory_target: Path | str) -> None:
    """Two processes' worth of Memory objects on one data dir (or PostgreSQL schema): each sees
    the other's remember, forget, episode, fact and thread on its next read."""
    a, b = open_memory(memory_target), open_memory(memory_target)
    assert b.long_term.recall("parcel to Oslo", scope="c1") == []  # b caches the empty scope
    mid = a.long_term.remember("ships parcels to Oslo", scope="c1")
    assert [r.id for r in b.long_term.recall("parcel to Oslo", scope="c1")] == [mid]
    b.long_term.forget(mid)
    assert a.long_term.recall("parcel to Oslo", scope="c1") == []
    ep = a.episodes.record(goal="reset 2FA", actions=["sent link"], outcome="done", success=True, scope="c1")
    assert b.episodes.episodes(scope="c1") == [ep]
    b.facts.set("refund_window_days", 30)
    assert a.facts.lookup("refund_window_days") == "30"
    a.conversations.save(Thread("c1", messages=({"role": "user", "content": "hello"},)))
    assert b.conversations.load("c1").messages == ({"role": "user", "content": "hello"},)
    assert b.forget_scope("c1") == {"memories": 0, "episodes": 1, "cases": 0, "conversations": 1}
    assert a.episodes.episodes(scope="c1") == [] and a.conversations.load("c1").messages == ()


def test_a_turn_lock_is_held_against_another_memory(open_memory: OpenMemory, memory_target: Path | str) -> None:
    """The conversation lock of one Memory keeps another (another process, another machine) out."""
    from fourfold.errors import LockTimeout

    a, b = open_memory(memory_target), open_memory(memory_target)
    with a.conversations.lock("c1").hold():
        with a.conversations.lock("c1").hold():  # re-entrant in its own thread
            pass
        import threading

        caught: list[BaseException] = []

        def other() -> None:
            try:
                with b.conversations.lock("c1").hold(timeout=0.2):
                    pass
            except BaseException as exc:
                caught.append(exc)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert len(caught) == 1 and isinstance(caught[0], LockTimeout)
        with b.conversations.lock("c2").hold(timeout=0.2):  # another scope is free
            pass
    with b.conversations.lock("c1").hold(timeout=1):  # released
        pass


def test_recall_weights_and_the_index_cache_are_set_through_open(tmp_path: Path) -> None:
    """`MemoryConfig(weights=..., max_cached_records=...)` reaches long-term memory: a named
    speaker's weight moves its memory's evidence, and a cache of no records keeps only the scope
    read last (the other is read again when asked for), where the default keeps both."""
    from fourfold.config import MemoryConfig
    from fourfold.longterm import Weights
    from fourfold.stores import InMemoryVectorStore

    class CountingStore(InMemoryVectorStore):
        scans = 0

        def scan(self, scope: str | None) -> list[Any]:
            type(self).scans += 1
            return super().scan(scope)

    def evidence_and_scans(name: str, config: MemoryConfig) -> tuple[float, int]:
        emb = HashEmbedder()
        store = CountingStore(embedder_identity=emb.identity)
        mem = Memory.open(tmp_path / name, embedder=emb, vector_store=store, config=config)
        try:
            mem.long_term.remember("the invoice came late", scope="c", metadata={"speaker": "alice"})
            mem.long_term.remember("the parcel came late", scope="c", metadata={"speaker": "bob"})
            mem.long_term.remember("the parcel came early", scope="d")
            CountingStore.scans = 0
            found = mem.long_term.explain("what did alice say", scope="c", k=2)
            mem.long_term.recall("the parcel", scope="d")
            mem.long_term.recall("what did alice say", scope="c", k=2)
            return next(parts.evidence for hit, parts in found if "invoice" in hit.text), CountingStore.scans
        finally:
            mem.close()

    default, default_scans = evidence_and_scans("default", MemoryConfig())
    tuned, tuned_scans = evidence_and_scans("tuned", MemoryConfig(weights=Weights(speaker=2.0), max_cached_records=0))
    assert tuned - default == pytest.approx(2.0 - Weights().speaker)
    assert (default_scans, tuned_scans) == (2, 3)
    with pytest.raises(InvalidInput, match="max_cached_records"):
        Memory.open(tmp_path / "bad", embedder=HashEmbedder(), config=MemoryConfig(max_cached_records=-1))
