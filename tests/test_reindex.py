"""`reindex`: moving a store to another embedder, on both engines, and from the command line."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import OpenMemory
from fourfold.embeddings import HashEmbedder
from fourfold.errors import EmbedderMismatch, InvalidInput
from fourfold.memory import Memory
from fourfold.reindex import reindex
from fourfold.transfer import export_memory, import_memory

OLD, NEW = HashEmbedder(64), HashEmbedder(32)


def _fill(mem: Memory) -> None:
    mem.long_term.remember("Prefers email over phone", scope="customer:alice", kind="preference")
    mem.long_term.remember("Ships to the Lyon warehouse", scope="customer:bob")
    mem.docs.ingest_text("# Returns\n\nReturns are accepted within thirty days.", source="returns.md")
    mem.episodes.record(goal="Invoice PDF fails with 502", actions=["cleared the cache"], outcome="fixed",
                        success=True, scope="customer:alice")
    mem.episodes.similar_successes("invoice 502", scope="customer:alice")  # stores the episode's vector
    mem.facts.set("refund_window_days", 30)


def _vectors(mem: Memory) -> dict[str, np.ndarray]:
    store = mem.long_term.store
    return {r.text: r.embedding for scope in store.scopes() for r in store.scan(scope)}


def test_reindex_gives_the_vectors_a_fresh_store_of_the_new_embedder_has(
    memory_target: Path | str, open_memory: OpenMemory, tmp_path: Path
) -> None:
    with open_memory(memory_target, embedder=OLD) as mem:
        _fill(mem)
    with pytest.raises(EmbedderMismatch, match="reindex --embedder"):
        open_memory(memory_target, embedder=NEW)
    done = reindex(memory_target, NEW)
    assert (done.before, done.after, done.memories, done.episodes_cleared) == (OLD.identity, NEW.identity, 3, 1)
    fresh = open_memory(tmp_path / "fresh", embedder=NEW)
    _fill(fresh)
    expected = _vectors(fresh)
    with open_memory(memory_target, embedder=NEW) as mem:
        got = _vectors(mem)
        assert got.keys() == expected.keys()
        for text, vector in expected.items():
            np.testing.assert_allclose(got[text], vector, rtol=1e-6)
        assert mem.long_term.recall("email or phone", scope="customer:alice", k=1)[0].text == "Prefers email over phone"
        assert [h.source for h in mem.docs.search("returns thirty days")] == ["returns.md"]
        assert [e.goal for e in mem.episodes.similar_successes("invoice 502", scope="customer:alice")] == [
            "Invoice PDF fails with 502"]
        assert mem.facts.get("refund_window_days").value == 30
    with pytest.raises(EmbedderMismatch):  # the old embedder is now the wrong one
        open_memory(memory_target, embedder=OLD)
    assert reindex(memory_target, NEW).memories == 0  # again: nothing to do


def test_a_chroma_data_dir_is_refused_and_moves_by_export_and_reembedding_import(open_memory: OpenMemory, tmp_path: Path) -> None:
    with open_memory(tmp_path / "chroma", embedder=OLD, store="chroma") as mem:
        _fill(mem)
        dump = io.StringIO()
        export_memory(mem, dump)
    with pytest.raises(InvalidInput, match="import --reembed"):
        reindex(tmp_path / "chroma", NEW)
    with open_memory(tmp_path / "new", embedder=NEW) as mem:
        with pytest.raises(EmbedderMismatch, match="reembed"):
            import_memory(mem, dump.getvalue().splitlines())
        counts = import_memory(mem, dump.getvalue().splitlines(), reembed=True)
        assert (counts.memories, counts.doc_chunks, counts.episodes, counts.facts) == (2, 1, 1, 1)
        assert mem.long_term.recall("email or phone", scope="customer:alice", k=1)[0].text == "Prefers email over phone"
        assert [e.goal for e in mem.episodes.similar_successes("invoice 502", scope="customer:alice")] == [
            "Invoice PDF fails with 502"]
    fresh = open_memory(tmp_path / "fresh", embedder=NEW)
    _fill(fresh)
    expected = _vectors(fresh)
    with open_memory(tmp_path / "new", embedder=NEW) as mem:
        got = _vectors(mem)
    for text, vector in expected.items():
        np.testing.assert_allclose(got[text], vector, rtol=1e-6)


def test_the_reindex_command_moves_a_data_dir_named_in_the_mismatch_error(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "FOURFOLD_EMBEDDER": "hash:64"}
    env.pop("FOURFOLD_DATA_DIR", None)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "fourfold.cli", "--data-dir", str(tmp_path / "d"), *args],
                              capture_output=True, text=True, timeout=120, env=env)

    assert cli("remember", "Prefers email over phone", "--scope", "c:1").returncode == 0
    refused = cli("--embedder", "hash:32", "recall", "email", "--scope", "c:1")
    assert refused.returncode == 1 and "fourfold --data-dir" in refused.stderr and "reindex --embedder SPEC" in refused.stderr
    done = cli("reindex", "--embedder", "hash:32", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["memories"] == 1
    hits = json.loads(cli("--embedder", "hash:32", "--json", "recall", "email", "--scope", "c:1").stdout)
    assert [h["text"] for h in hits] == ["Prefers email over phone"]
    assert cli("recall", "email", "--scope", "c:1").returncode == 1  # hash:64 is now the wrong one
    assert "nothing to do" in cli("--embedder", "hash:32", "reindex").stdout
