"""The scope catalog beside embedded Chroma: a scope is read by id, and never misses a record."""

from __future__ import annotations

from pathlib import Path

import pytest

from fourfold.embeddings import HashEmbedder
from fourfold.errors import StoreUnavailable
from fourfold.stores.catalog import ScopeCatalog, catalog_path
from fourfold.stores.chroma import ChromaVectorStore
from fourfold.stores.vector import VectorRecord

COLLECTION = "fourfold_memories"


def rec(e: HashEmbedder, i: int, scope: str | None) -> VectorRecord:
    text = f"customer note {i}: the parcel went to depot {i % 7}"
    return VectorRecord(f"id-{i}", text, e.embed(text), scope, "note", 1000.0 + i)


def ids_of(records: list[VectorRecord]) -> set[str]:
    return {r.id for r in records}


class CountingWhere:
    """Wraps a store's `where` scan to count how often a scope is read the slow way."""

    def __init__(self, store: ChromaVectorStore) -> None:
        self.calls = 0
        inner = store._scan_where

        def counted(scope: str | None) -> list[VectorRecord]:
            self.calls += 1
            return inner(scope)

        store._scan_where = counted  # type: ignore[method-assign]


def test_a_new_store_reads_every_scope_by_id(tmp_path: Path, embedder: HashEmbedder) -> None:
    store = ChromaVectorStore.persistent(tmp_path / "v", embedder)
    store.add([rec(embedder, i, ["a", "b", None][i % 3]) for i in range(30)])
    where = CountingWhere(store)
    assert ids_of(store.scan("a")) == {f"id-{i}" for i in range(0, 30, 3)}
    assert ids_of(store.scan(None)) == {f"id-{i}" for i in range(2, 30, 3)}
    assert store.scan("nobody") == []
    assert where.calls == 0


def test_a_store_older_than_its_catalog_fills_each_scope_once(tmp_path: Path, embedder: HashEmbedder) -> None:
    store = ChromaVectorStore.persistent(tmp_path / "v", embedder)
    store.add([rec(embedder, i, "a" if i % 2 else "b") for i in range(20)])
    store.close()
    catalog_path(tmp_path / "v", COLLECTION).unlink()  # as if written before catalogs existed
    reopened = ChromaVectorStore.persistent(tmp_path / "v", embedder)
    where = CountingWhere(reopened)
    expected = {f"id-{i}" for i in range(1, 20, 2)}
    assert ids_of(reopened.scan("a")) == expected
    reopened.add([rec(embedder, 101, "a")])
    assert ids_of(reopened.scan("a")) == expected | {"id-101"}
    assert where.calls == 1  # the first read listed the scope; later ones go by id
    assert len(reopened.scan("b")) == 10 and where.calls == 2


def test_an_id_the_store_lost_in_a_crash_is_skipped(tmp_path: Path, embedder: HashEmbedder) -> None:
    store = ChromaVectorStore.persistent(tmp_path / "v", embedder)
    store.add([rec(embedder, 1, "a")])
    assert store._catalog is not None
    store._catalog.add([("a", "id-never-written")])  # a crash between catalog and Chroma
    assert ids_of(store.scan("a")) == {"id-1"}


def test_deletes_leave_the_catalog_and_no_scope_name_in_it(tmp_path: Path, embedder: HashEmbedder) -> None:
    store = ChromaVectorStore.persistent(tmp_path / "v", embedder)
    store.add([rec(embedder, i, "customer:secret-name" if i < 5 else "other") for i in range(10)])
    store.delete(["id-7"])
    assert store.delete_scope("customer:secret-name") == 5
    assert store.scan("customer:secret-name") == []
    assert ids_of(store.scan("other")) == {"id-5", "id-6", "id-8", "id-9"}
    assert store._catalog is not None
    assert store._catalog.ids("customer:secret-name") == []
    store.close()
    path = catalog_path(tmp_path / "v", COLLECTION)
    raw = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
    assert b"secret-name" not in raw and b"parcel" not in raw


def test_a_damaged_catalog_is_set_aside_and_rebuilt(tmp_path: Path, embedder: HashEmbedder) -> None:
    store = ChromaVectorStore.persistent(tmp_path / "v", embedder)
    store.add([rec(embedder, i, "a") for i in range(6)])
    store.close()
    path = catalog_path(tmp_path / "v", COLLECTION)
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    reopened = ChromaVectorStore.persistent(tmp_path / "v", embedder)
    assert ids_of(reopened.scan("a")) == {f"id-{i}" for i in range(6)}  # nothing missed
    assert path.with_name(path.name + ".damaged").exists()


def test_only_an_empty_store_gets_a_complete_catalog(tmp_path: Path) -> None:
    empty = ScopeCatalog.open(tmp_path / "a.sqlite3", store_is_empty=lambda: True)
    older = ScopeCatalog.open(tmp_path / "b.sqlite3", store_is_empty=lambda: False)
    assert empty.ids("x") == []
    assert older.ids("x") is None
    older.fill("x", ["id-1"])
    assert older.ids("x") == ["id-1"] and older.ids("y") is None


def test_an_unreadable_catalog_path_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable):
        ScopeCatalog.open(tmp_path / "missing-dir" / "c.sqlite3", store_is_empty=lambda: True)


def test_existing_asks_chroma_only_about_ids_the_catalog_lists(tmp_path: Path, embedder: HashEmbedder) -> None:
    store = ChromaVectorStore.persistent(tmp_path / "v", embedder)
    store.add([rec(embedder, i, "a") for i in range(3)])
    assert store._catalog is not None
    store._catalog.add([("a", "id-crashed")])  # listed, never reached Chroma
    asked: list[list[str]] = []
    collection = store._collection
    original_get = collection.get

    def counting_get(*args: object, **kwargs: object) -> object:
        asked.append(list(kwargs.get("ids") or []))  # type: ignore[call-overload]
        return original_get(*args, **kwargs)

    collection.get = counting_get
    assert store.existing(["id-new-1", "id-new-2"]) == set()
    assert asked == []  # a complete catalog answers for ids it does not list
    assert store.existing(["id-1", "id-crashed", "id-new-1"]) == {"id-1"}
    assert asked == [["id-1", "id-crashed"]]


def test_an_older_store_asks_chroma_about_every_id(tmp_path: Path, embedder: HashEmbedder) -> None:
    store = ChromaVectorStore.persistent(tmp_path / "v", embedder)
    store.add([rec(embedder, 1, "a")])
    store.close()
    catalog_path(tmp_path / "v", COLLECTION).unlink()
    reopened = ChromaVectorStore.persistent(tmp_path / "v", embedder)
    assert reopened.existing(["id-1", "id-2"]) == {"id-1"}  # not listed, yet stored


def test_the_reliability_suite_counts_records_the_read_path_misses(tmp_path: Path, embedder: HashEmbedder) -> None:
    from harness import reliability as rel

    store = ChromaVectorStore.persistent(tmp_path / "v", embedder)
    store.add([rec(embedder, i, "a" if i % 2 else None) for i in range(6)])
    assert rel._index_damage(store) == 0
    assert store._catalog is not None
    store._catalog.remove(["id-3"])  # a catalog that lost a record Chroma holds
    assert rel._index_damage(store) == 1
