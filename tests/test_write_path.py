"""The write path's economies: one generation bump per write, no re-embedding of repeats,
slow work of big writes outside the cross-process lock."""

from __future__ import annotations

import fcntl
import os
import struct
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fourfold.embeddings import Embedder, HashEmbedder, Vectors
from fourfold.errors import StoreUnavailable
from fourfold.longterm.store import LongTermMemory, MemoryInput
from fourfold.stores.chroma import ChromaVectorStore
from fourfold.stores.vector import VectorRecord


class Recording(Embedder):
    """HashEmbedder's vectors; records each batch and whether the data dir's write lock was free."""

    def __init__(self, lock_file: Path, *, batch_size: int = 4) -> None:
        self.inner = HashEmbedder()
        self.name, self.dimension, self.batch_size = self.inner.name, self.inner.dimension, batch_size
        self.lock_file = lock_file
        self.batches: list[list[str]] = []
        self.lock_free: list[bool] = []
        self.on_first_batch: Callable[[], None] | None = None

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(list(texts))
        self.lock_free.append(_lock_is_free(self.lock_file))
        if self.on_first_batch is not None:
            hook, self.on_first_batch = self.on_first_batch, None
            hook()
        return self.inner.embed_batch(texts)

    @property
    def texts(self) -> list[str]:
        return [t for batch in self.batches for t in batch]


def _lock_is_free(path: Path) -> bool:
    """Whether another writer could take the write lock now (a second open file, as another process has)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


def _memory(tmp_path: Path) -> tuple[LongTermMemory, Recording]:
    root = tmp_path / "vectors"
    embedder = Recording(root / ".fourfold-write.lock")
    return LongTermMemory(ChromaVectorStore.persistent(root, embedder), embedder), embedder


def _count(store: ChromaVectorStore) -> int:
    generation = store.generation()
    assert isinstance(generation, bytes)
    return int(struct.unpack("<Q", generation)[0])


def _record(text: str) -> VectorRecord:
    return VectorRecord(f"id-{text}", text, HashEmbedder().embed(text), "s", "note", 1.0)


def test_a_write_with_a_nested_add_bumps_the_generation_once(tmp_path: Path) -> None:
    store = ChromaVectorStore.persistent(tmp_path / "vectors", HashEmbedder())
    store.add([_record("first")])
    before = _count(store)
    with store.writing() as ticket:
        store.add([_record("second")])
        store.add([_record("third")])
    assert _count(store) == before + 1
    assert ticket.generation == store.generation()
    assert store.count() == 3


def test_the_generation_is_rewritten_in_place_and_repaired_when_damaged(tmp_path: Path) -> None:
    store = ChromaVectorStore.persistent(tmp_path / "vectors", HashEmbedder())
    store.add([_record("first")])
    path = tmp_path / "vectors" / ".fourfold-generation"
    inode = path.stat().st_ino
    store.add([_record("second")])
    assert path.stat().st_ino == inode  # no new file renamed over it
    path.write_bytes(b"\x07" * 12)  # damaged: not 8 bytes
    store.add([_record("third")])
    assert path.read_bytes() == struct.pack("<Q", 1)
    assert not list(path.parent.glob("*.tmp"))


def test_a_repeated_memory_is_not_embedded_again(tmp_path: Path) -> None:
    lt, embedder = _memory(tmp_path)
    first = lt.remember("Prefers email over phone calls", scope="c1")
    embedded = len(embedder.texts)
    again = lt.remember("Prefers email over phone calls", scope="c1")
    assert (first.created, again.created) == (True, False)
    assert str(again) == str(first)
    assert len(embedder.texts) == embedded


def test_a_write_embeds_only_new_memories_and_outside_the_write_lock(tmp_path: Path) -> None:
    lt, embedder = _memory(tmp_path)
    old = [f"Resolved ticket {i}: clearing the cache fixed the export" for i in range(3)]
    lt.remember_many([MemoryInput(t, "c1") for t in old])
    assert embedder.lock_free == [True]  # embedded before the lock is taken
    embedder.batches.clear()
    embedder.lock_free.clear()
    new = [f"Resolved ticket {i}: re-issuing the API key fixed the webhook" for i in range(10)]
    results = lt.remember_many([MemoryInput(t, "c1") for t in old + new])
    assert [r.created for r in results] == [False] * 3 + [True] * 10
    assert sorted(embedder.texts) == sorted(new)
    assert len(embedder.batches) > 1 and all(embedder.lock_free)
    assert {r.text for r in lt.recall("API key webhook", scope="c1", k=20)} >= set(new)


def test_a_memory_deleted_while_a_big_write_embeds_is_written_again(tmp_path: Path) -> None:
    lt, embedder = _memory(tmp_path)
    gone = lt.remember("Wants replies in German", scope="c1")
    items = [MemoryInput("Wants replies in German", "c1")]
    items += [MemoryInput(f"Resolved ticket {i}: a new shipping label fixed it", "c1") for i in range(8)]
    # Another writer deletes it after this write looked (unlocked) and before it locks.
    embedder.on_first_batch = lambda: lt.forget(gone)
    results = lt.remember_many(items)
    assert all(r.created for r in results)
    found = lt.get(gone)
    assert found.text == "Wants replies in German"
    assert np.allclose(lt.store.get([gone])[0].embedding, HashEmbedder().embed("Wants replies in German"))


def test_metadata_that_reads_back_as_its_default_is_not_stored(tmp_path: Path) -> None:
    store = ChromaVectorStore.persistent(tmp_path / "vectors", HashEmbedder())
    plain = VectorRecord("plain", "Prefers email", HashEmbedder().embed("Prefers email"), None, "note", 5.0)
    full = VectorRecord(
        "full", "Uses the API", HashEmbedder().embed("Uses the API"), "c1", "fact", 6.0, {"source": "chat"}, 3, ("x",)
    )
    store.add([plain, full])
    for original, back in zip([plain, full], sorted(store.get(["plain", "full"]), key=lambda r: r.id != "plain"), strict=True):
        assert back.id == original.id and back.text == original.text and back.scope == original.scope
        assert (back.kind, back.created_at, dict(back.metadata), back.seq, back.extra) == (
            original.kind, original.created_at, dict(original.metadata), original.seq, original.extra
        )
    stored = store._collection.get(ids=["plain", "full"], include=["metadatas"])
    keys = {i: set(m) for i, m in zip(stored["ids"], stored["metadatas"], strict=True)}
    assert keys["plain"] == {"ff_scope", "ff_created"}
    assert keys["full"] == {"ff_scope", "ff_kind", "ff_created", "ff_seq", "ff_meta", "ff_extra"}
    assert [r.id for r in store.scan(None)] == ["plain"]


def test_new_collections_build_a_small_hnsw_graph_and_older_ones_keep_theirs(tmp_path: Path) -> None:
    """fourfold never searches Chroma's index, so it asks for the cheapest graph to maintain."""
    from fourfold.embeddings import HashEmbedder
    from fourfold.stores.chroma import ChromaVectorStore

    embedder = HashEmbedder()
    store = ChromaVectorStore.persistent(tmp_path / "new", embedder)
    hnsw = store._collection.configuration_json["hnsw"]
    assert (hnsw["ef_construction"], hnsw["max_neighbors"], hnsw["space"]) == (16, 4, "cosine")

    import chromadb
    from chromadb.config import Settings

    old = chromadb.PersistentClient(path=str(tmp_path / "old"), settings=Settings(anonymized_telemetry=False))
    from fourfold.stores.chroma import _EmbedderFunction

    old.create_collection(  # as fourfold created collections before
        "fourfold_memories", configuration={"hnsw": {"space": "cosine"}},
        metadata={"fourfold_embedder": embedder.identity, "fourfold_format": 1},
        embedding_function=_EmbedderFunction(embedder),  # type: ignore[arg-type]
    )
    reopened = ChromaVectorStore.persistent(tmp_path / "old", embedder)
    assert reopened._collection.configuration_json["hnsw"]["max_neighbors"] == 16  # not rebuilt
    assert reopened.scan(None) == []


class _TearingCollection:
    """A Chroma collection whose first `tears` gets lose their last embedding, as a Chroma
    server's did once under concurrent writes (`zip() argument 3 is shorter`)."""

    def __init__(self, inner: Any, tears: int) -> None:
        self.inner, self.tears, self.gets = inner, tears, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        got = self.inner.get(*args, **kwargs)
        self.gets += 1
        if self.tears > 0 and got.get("embeddings") is not None and len(got["ids"]):
            self.tears -= 1
            got = {**got, "embeddings": got["embeddings"][:-1]}
        return got


class _TearingClient:
    def __init__(self, tears: int) -> None:
        import chromadb

        self.inner = chromadb.EphemeralClient()
        self.tears = tears
        self.collection: _TearingCollection | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get_or_create_collection(self, **kwargs: Any) -> Any:
        self.collection = _TearingCollection(self.inner.get_or_create_collection(**kwargs), self.tears)
        return self.collection


@pytest.mark.parametrize("tears", [2, 50])
def test_a_torn_read_is_retried_and_never_escapes_untyped(tears: int) -> None:
    embedder = HashEmbedder()
    client = _TearingClient(tears)
    store = ChromaVectorStore(client, embedder, collection=f"torn_{tears}_{time.monotonic_ns()}")
    records = [VectorRecord(f"id-{i}", f"note {i}", embedder.embed(f"note {i}"), "s", "note", 1.0 + i, {})
               for i in range(3)]
    store.add(records)
    if tears == 2:  # a transient tear: the read is retried and whole
        assert sorted(r.id for r in store.get(["id-0", "id-1", "id-2"])) == ["id-0", "id-1", "id-2"]
        assert client.collection is not None and client.collection.gets == 3
    else:  # a store that keeps tearing: a typed error, not a ValueError from zip
        with pytest.raises(StoreUnavailable, match="torn read"):
            store.get(["id-0", "id-1", "id-2"])
