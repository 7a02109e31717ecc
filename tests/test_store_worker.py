"""The store worker: embedded Chroma in a child process, reached over pipes.

The conformance suite runs against `WorkerVectorStore` (backend "chroma-worker" in conftest);
these tests cover what only a child process can do: typed errors across the pipe, a child
that dies, embedding in the child, and a closed worker.
"""

from __future__ import annotations

import os
import pickle
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from fourfold.embeddings import HashEmbedder
from fourfold.errors import EmbedderMismatch, StoreUnavailable
from fourfold.stores.vector import VectorRecord
from fourfold.stores.worker import StoreWorker, WorkerEmbedder

pytestmark = pytest.mark.slow  # each test starts a child that imports chromadb


def _record(e: HashEmbedder, i: int, scope: str = "s") -> VectorRecord:
    text = f"memory {i} about a parcel"
    return VectorRecord(f"id-{i}", text, e.embed(text), scope, "note", 1000.0 + i, {})


def _wait_dead(pid: int) -> None:
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def test_a_dead_child_loses_nothing_acknowledged_and_reads_recover_at_once(tmp_path: Path) -> None:
    e = HashEmbedder()
    worker = StoreWorker(tmp_path / "vectors")
    try:
        store = worker.store("fourfold_memories", e.identity)
        store.add([_record(e, i) for i in range(5)])
        pid = worker.pid
        assert pid is not None and pid != os.getpid()
        os.kill(pid, signal.SIGKILL)
        _wait_dead(pid)
        # A read is retried once on a new child, which reopens the collection from disk.
        assert {r.id for r in store.scan("s")} == {f"id-{i}" for i in range(5)}
        assert worker.pid not in (None, pid)
        second = worker.pid
        assert second is not None
        os.kill(second, signal.SIGKILL)
        _wait_dead(second)
        store.add([_record(e, 5)])  # a child found dead before a call is replaced first
        assert store.count() == 6
    finally:
        worker.close()


class _Crashing(HashEmbedder):
    """Kills the process it runs in when asked to embed 'crash' (a child dying mid-call)."""

    def embed_batch(self, texts):  # type: ignore[no-untyped-def]
        if "crash" in texts:
            os._exit(3)
        return super().embed_batch(texts)


def test_a_child_dying_during_a_call_is_a_typed_error_and_the_next_call_works(tmp_path: Path) -> None:
    e = _Crashing()
    worker = StoreWorker(tmp_path / "vectors", embedder=e)
    try:
        store = worker.store("fourfold_memories", e.identity)
        store.add([_record(e, 1)])
        remote = WorkerEmbedder(worker, e)
        with pytest.raises(StoreUnavailable, match="exited"):  # not retried: it may have had effects
            remote.embed_batch(["crash"])
        np.testing.assert_array_equal(remote.embed_batch(["fine"]), e.embed_batch(["fine"]))
        assert [r.id for r in store.get(["id-1"])] == ["id-1"]
    finally:
        worker.close()


def test_errors_cross_the_pipe_typed(tmp_path: Path) -> None:
    worker = StoreWorker(tmp_path / "vectors")
    try:
        worker.store("coll", HashEmbedder(64).identity)
        with pytest.raises(EmbedderMismatch):
            worker.store("coll", HashEmbedder(32).identity)
        with pytest.raises(StoreUnavailable, match="no open collection"):
            worker.call("scan", "never-opened", "s")
    finally:
        worker.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        worker.call("count", "coll")


def test_the_child_embeds_with_a_copy_of_the_embedder(tmp_path: Path) -> None:
    e = HashEmbedder()
    worker = StoreWorker(tmp_path / "vectors", embedder=e, niceness=5)
    try:
        remote = WorkerEmbedder(worker, e)
        texts = ["refund window", "a parcel arrived damaged", "vpn drops every hour"]
        np.testing.assert_array_equal(remote.embed_batch(texts), e.embed_batch(texts))
        assert remote.identity == e.identity
        assert remote.embed_batch([]).shape == (0, e.dimension)
    finally:
        worker.close()
    with pytest.raises(StoreUnavailable):  # a worker given no embedder cannot stand in for one
        WorkerEmbedder(StoreWorker(tmp_path / "other"), e)


def test_embedders_pickle_without_their_loaded_state() -> None:
    from fourfold.embeddings.onnx import OnnxMiniLMEmbedder

    hashing = HashEmbedder()
    hashing.embed("fills the query cache, which holds a lock")
    copy = pickle.loads(pickle.dumps(hashing))
    np.testing.assert_array_equal(copy.embed("parcel"), hashing.embed("parcel"))
    onnx = pickle.loads(pickle.dumps(OnnxMiniLMEmbedder(threads=1)))
    assert onnx._loaded is None and onnx.identity == "all-MiniLM-L6-v2:384"


class _Chatty(HashEmbedder):
    """Prints while embedding, as a library might."""

    def embed_batch(self, texts):  # type: ignore[no-untyped-def]
        print("chatty library output", flush=True)
        os.write(1, b"raw fd 1 output\n")
        return super().embed_batch(texts)


def test_the_child_never_writes_to_the_callers_stdout(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # `fourfold mcp` speaks MCP over its stdout: a byte from the child there would corrupt it.
    e = _Chatty()
    worker = StoreWorker(tmp_path / "vectors", embedder=e)
    try:
        WorkerEmbedder(worker, e).embed_batch(["hello"])
    finally:
        worker.close()
    out, err = capfd.readouterr()
    assert "chatty" not in out and "raw fd 1" not in out
    assert "chatty library output" in err and "raw fd 1 output" in err
