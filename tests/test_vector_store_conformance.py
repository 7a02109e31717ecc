"""One conformance suite for every VectorStore backend (in-memory, embedded Chroma, Chroma server)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fourfold.embeddings import HashEmbedder
from fourfold.stores.vector import NO_VECTOR, VERSION_KEY, VectorRecord, VectorStore, record_tokens


def rec(e: HashEmbedder, i: int, scope: str | None, *, meta: dict | None = None) -> VectorRecord:  # type: ignore[type-arg]
    text = f"memory number {i} about topic {i % 3}"
    return VectorRecord(f"id-{i}", text, e.embed(text), scope, "note", 1000.0 + i, meta or {})


def test_add_then_get_round_trips_every_field(vector_store: VectorStore, embedder: HashEmbedder) -> None:
    original = rec(embedder, 1, "customer:1", meta={"nested": {"a": [1, None]}, "none": None, "empty": []})
    vector_store.add([original])
    (got,) = vector_store.get(["id-1"])
    assert (got.id, got.text, got.scope, got.kind, got.created_at) == (
        original.id, original.text, original.scope, original.kind, original.created_at,
    )
    assert got.metadata == {"nested": {"a": [1, None]}, "none": None, "empty": []}
    np.testing.assert_allclose(got.embedding, original.embedding, rtol=1e-6, atol=1e-6)


def test_scan_returns_exactly_one_scope(vector_store: VectorStore, embedder: HashEmbedder) -> None:
    vector_store.add([rec(embedder, i, ["a", "b", None][i % 3]) for i in range(30)])
    assert {r.id for r in vector_store.scan("a")} == {f"id-{i}" for i in range(30) if i % 3 == 0}
    assert {r.id for r in vector_store.scan(None)} == {f"id-{i}" for i in range(30) if i % 3 == 2}
    assert vector_store.scan("nobody") == []
    assert set(vector_store.scopes()) == {"a", "b", None}


def test_scan_matrix_is_the_scope_in_write_order_with_its_vectors_apart(
    vector_store: VectorStore, embedder: HashEmbedder
) -> None:
    # written out of order, two of them in one batch (same created_at, told apart by seq)
    records = [rec(embedder, i, "a") for i in (5, 2, 9)] + [rec(embedder, 7, "b")]
    records.append(VectorRecord("id-x", "batch second", embedder.embed("batch second"), "a", "note", 1002.0, seq=1))
    vector_store.add(records)
    got, matrix, version = vector_store.scan_matrix("a")
    assert [r.id for r in got] == ["id-2", "id-x", "id-5", "id-9"]
    assert all(r.embedding.size == 0 for r in got)
    assert matrix.dtype == np.float32 and matrix.shape == (4, embedder.dimension)
    by_id = {r.id: r for r in records}
    for row, record in zip(matrix, got, strict=True):
        np.testing.assert_allclose(row, by_id[record.id].embedding, rtol=1e-6, atol=1e-6)
        assert (record.text, record.created_at, record.seq) == (by_id[record.id].text, by_id[record.id].created_at,
                                                                by_id[record.id].seq)
    assert version == vector_store.scan_versioned("a")[1]
    empty, none, _ = vector_store.scan_matrix("nobody")
    assert empty == [] and len(none) == 0


def test_scan_tokens_is_scan_matrix_with_each_records_tokens(vector_store: VectorStore, embedder: HashEmbedder) -> None:
    """Whether a store keeps tokens or makes them on read, they are the records' own words."""
    records = [rec(embedder, i, "a") for i in (3, 1, 2)]
    records.append(VectorRecord("id-e", "Zoë's café, naïve façade", embedder.embed("Zoë"), "a", "note", 1004.0,
                                extra=("Prefers decaf",)))
    records.append(VectorRecord("id-0", "the and of", embedder.embed("stop words"), "a", "note", 1005.0))  # no tokens
    vector_store.add(records)
    got, matrix, tokens, version = vector_store.scan_tokens("a")
    want, want_matrix, want_version = vector_store.scan_matrix("a")
    assert [r.id for r in got] == [r.id for r in want] == ["id-1", "id-2", "id-3", "id-e", "id-0"]
    assert matrix.tobytes() == want_matrix.tobytes() and version == want_version
    assert tokens == record_tokens(want)
    assert tokens[3] == ["zoë", "café", "naïv", "façad", "prefer", "decaf"] and tokens[4] == []
    assert vector_store.scan_tokens("nobody")[2] == []


def test_existing_delete_and_count(vector_store: VectorStore, embedder: HashEmbedder) -> None:
    vector_store.add([rec(embedder, i, "a") for i in range(5)])
    assert vector_store.existing(["id-1", "id-9"]) == {"id-1"}
    vector_store.delete(["id-1", "id-unknown"])
    assert vector_store.count() == 4
    assert vector_store.get(["id-1"]) == []


def test_delete_scope_leaves_other_scopes(vector_store: VectorStore, embedder: HashEmbedder) -> None:
    vector_store.add([rec(embedder, i, "a" if i % 2 else "b") for i in range(10)])
    assert vector_store.delete_scope("a") == 5
    assert vector_store.scan("a") == []
    assert len(vector_store.scan("b")) == 5


#: What each backend can tell of writes by any process: the whole store's generation, the
#: version of each scope. A server can tell neither (readers re-read); SQLite and PostgreSQL
#: know each scope's version, not one generation. Stated per backend, so no backend passes
#: by answering None.
KNOWS = {"memory": {"generation", "version"}, "chroma": {"generation", "version"}, "sqlite": {"version"},
         "postgres": {"version"}, "chroma-server": set()}


def test_a_write_moves_what_the_backend_knows_of_writes(
    vector_store: VectorStore, embedder: HashEmbedder, request: pytest.FixtureRequest
) -> None:
    knows = KNOWS[request.node.callspec.params["vector_store"]]
    before = (vector_store.generation(), vector_store.version("a"), vector_store.version("b"))
    vector_store.add([rec(embedder, 1, "a")])
    after = (vector_store.generation(), vector_store.version("a"), vector_store.version("b"))
    if "generation" in knows:
        assert None not in (before[0], after[0]) and after[0] != before[0]
    else:
        assert before[0] is after[0] is None
    if "version" in knows:
        assert None not in (before[1], after[1]) and after[1] != before[1]
        if "generation" not in knows:  # a scope's own version: another scope's stays put
            assert after[2] == before[2] is not None
    else:
        assert before[1:] == after[1:] == (None, None)


def test_versioned_finds_ids_and_version_entries_of_one_scope(vector_store: VectorStore, embedder: HashEmbedder) -> None:
    entry = {VERSION_KEY: {"lineage": "id-0", "valid_from": 1.0, "valid_to": None}}
    vector_store.add([
        rec(embedder, 0, "a", meta=entry), rec(embedder, 1, "a"), rec(embedder, 2, "a", meta={"note": VERSION_KEY}),
        rec(embedder, 3, "b", meta=entry), rec(embedder, 4, None, meta=entry),
    ])
    assert {r.id for r in vector_store.versioned("a", ["id-1", "id-3", "id-9"])} == {"id-0", "id-1"}
    assert {r.id for r in vector_store.versioned(None)} == {"id-4"}
    (got,) = vector_store.versioned("b")
    assert got.metadata == entry and got.embedding.shape == (embedder.dimension,)


def test_update_metadata_keeps_everything_else(vector_store: VectorStore, embedder: HashEmbedder) -> None:
    original = rec(embedder, 1, "a", meta={"x": 1})
    vector_store.add([original, rec(embedder, 2, "a")])
    before = vector_store.version("a")
    vector_store.update_metadata([VectorRecord(original.id, "", original.embedding[:0], "a", "", 0.0, {"x": 2})])
    (got,) = vector_store.get([original.id])
    assert (got.text, got.kind, got.created_at, got.metadata) == (original.text, "note", original.created_at, {"x": 2})
    np.testing.assert_allclose(got.embedding, original.embedding, rtol=1e-6, atol=1e-6)
    assert vector_store.count() == 2
    if before is not None:
        assert vector_store.version("a") != before


@pytest.mark.parametrize("scope", ["a", None])
def test_a_scope_read_gives_each_record_as_written_but_its_vector(
    vector_store: VectorStore, embedder: HashEmbedder, scope: str | None
) -> None:
    """Every field of every record of `scan_tokens` (metadata, extra facts, the unscoped space as None)."""
    records = [
        rec(embedder, 1, scope, meta={"thread": "t", "nested": {"a": [1, None]}}),
        VectorRecord("id-e", "Prefers decaf", embedder.embed("decaf"), scope, "preference", 1003.0, {"speaker": "Zoë"},
                     seq=2, extra=("Drinks decaf", "Lives in Lyon")),
        rec(embedder, 2, "other"),
    ]
    vector_store.add(records)
    got, _, _, _ = vector_store.scan_tokens(scope)
    assert [type(r) for r in got] == [VectorRecord, VectorRecord]
    assert [replace(r, embedding=NO_VECTOR) for r in got] == [replace(r, embedding=NO_VECTOR) for r in records[:2]]
