"""`where` filters: one table of cases, run on the pure predicate and through every engine."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from fourfold.embeddings import HashEmbedder
from fourfold.errors import InvalidInput
from fourfold.longterm import LongTermMemory
from fourfold.longterm.where import compile_where, fields_of
from fourfold.stores.vector import VectorRecord


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


EMBEDDER = HashEmbedder()
#: id -> (metadata, created_at): the memories every case is run against.
ROWS: dict[str, tuple[dict[str, Any], float]] = {
    "a": ({"product": "web", "priority": 3, "tags": ["billing", "urgent"], "vip": True}, _at("2026-10-15T08:00")),
    "b": ({"product": "app", "priority": 1, "tags": ["billing"], "vip": False}, _at("2026-11-02T08:00")),
    "c": ({"product": "web", "priority": 2, "region": "eu", "created_at": "not the record's"}, _at("2026-11-20T12:00")),
    "d": ({"product": "api", "priority": 5.5, "vip": 1}, _at("2026-12-01T00:00")),
}
ALL = set(ROWS)

#: (filter, the ids it keeps). Every engine must agree with every line.
CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({}, ALL),
    ({"product": "web"}, {"a", "c"}),
    ({"tags": "billing"}, {"a", "b"}),                      # a list field holds the value
    ({"product": {"$eq": "web"}}, {"a", "c"}),
    ({"product": {"$ne": "web"}}, {"b", "d"}),
    ({"region": {"$ne": "eu"}}, {"a", "b", "d"}),            # a missing field is "not equal"
    ({"product": {"$in": ["web", "api"]}}, {"a", "c", "d"}),
    ({"tags": {"$in": ["urgent", "nope"]}}, {"a"}),
    ({"product": {"$nin": ["web"]}}, {"b", "d"}),
    ({"priority": {"$gt": 2}}, {"a", "d"}),
    ({"priority": {"$gte": 2}}, {"a", "c", "d"}),
    ({"priority": {"$lt": 2}}, {"b"}),
    ({"priority": {"$lte": 2, "$gt": 1}}, {"c"}),            # both operators hold
    ({"priority": {"$gt": "2"}}, set()),                     # no comparison across types
    ({"vip": True}, {"a"}),                                  # a bool equals only a bool
    ({"vip": 1}, {"d"}),
    ({"product": "web", "priority": 3}, {"a"}),              # several fields: all hold
    ({"$or": [{"product": "app"}, {"priority": {"$gt": 4}}]}, {"b", "d"}),
    ({"$and": [{"product": "web"}, {"priority": {"$lt": 3}}]}, {"c"}),
    ({"$or": [{"$and": [{"product": "web"}, {"vip": True}]}, {"region": "eu"}]}, {"a", "c"}),
    ({"created_at": {"$gte": "2026-11-01"}}, {"b", "c", "d"}),  # the record's time, not metadata's
    ({"created_at": {"$gte": "2026-11-01", "$lt": "2026-12-01"}}, {"b", "c"}),
    ({"created_at": {"$lt": "2026-11-20T13:00:00+01:00"}}, {"a", "b"}),
    ({"created_at": {"$lte": "2026-11-20T13:00:00+01:00"}}, {"a", "b", "c"}),
    ({"created_at": {"$gt": _at("2026-11-30T00:00")}}, {"d"}),
    ({"created_at": {"$gte": "2026-11-20T12:00:00Z", "$lte": "2026-11-20T12:00:00Z"}}, {"c"}),
    ({"valid_from": {"$gte": "2026-11-01"}}, {"b", "c", "d"}),  # unversioned: valid since written
    ({"missing": {"$gt": 0}}, set()),
    ({"missing": {"$nin": [1]}}, ALL),
]

MALFORMED: list[Any] = [
    "product=web",
    ["product", "web"],
    {"$foo": 1},
    {"product": {"$regex": "w"}},
    {"product": {"$in": "web"}},
    {"$or": []},
    {"$and": {"product": "web"}},
    {"$or": ["product"]},
    {"priority": {"$gt": [1]}},
    {"priority": {"$gt": None}},
    {"priority": {"$gt": True}},
    {"priority": {"$gt": 1, "plain": 2}},
    {"created_at": {"$gte": "last tuesday"}},
    {"created_at": {"$gte": True}},
    {"created_at": "yesterday"},
    {"": 1},
]


def _record(id_: str) -> VectorRecord:
    metadata, created = ROWS[id_]
    return VectorRecord(id=f"mem_{id_}", text=f"memory {id_} about the order", embedding=EMBEDDER.embed(f"memory {id_}"),
                        scope="s", kind="note", created_at=created, metadata=metadata)


@pytest.mark.parametrize(("where", "expected"), CASES, ids=[str(w) for w, _ in CASES])
def test_the_predicate(where: dict[str, Any], expected: set[str]) -> None:
    match = compile_where(where)
    assert {i for i in ROWS if match(fields_of(_record(i)))} == expected


def test_every_engine_agrees_with_the_table(vector_store: Any) -> None:
    with vector_store.writing():
        vector_store.add([_record(i) for i in sorted(ROWS)])
    lt = LongTermMemory(vector_store, EMBEDDER)
    for where, expected in CASES:
        assert {r.id[4:] for r in lt.all(scope="s", where=where)} == expected, where
        found = lt.recall("memory about the order", scope="s", k=10, where=where)
        assert {r.id[4:] for r in found} == expected, where
    assert [r.id for r in lt.all(scope="s", where={"product": "web"})] == ["mem_a", "mem_c"]  # oldest first


@pytest.mark.parametrize("where", MALFORMED, ids=[repr(w)[:40] for w in MALFORMED])
def test_a_malformed_filter_is_invalid_input(where: Any) -> None:
    with pytest.raises(InvalidInput):
        compile_where(where)


def test_a_malformed_filter_is_refused_before_reading_and_nesting_is_bounded(embedder: HashEmbedder) -> None:
    from fourfold.stores import InMemoryVectorStore

    lt = LongTermMemory(InMemoryVectorStore(embedder_identity=embedder.identity), embedder)
    with pytest.raises(InvalidInput, match=r"unknown where operator '\$regex'"):
        lt.recall("x", where={"product": {"$regex": "w"}})
    with pytest.raises(InvalidInput, match="non-empty list"):
        lt.all(where={"$or": []})
    deep: dict[str, Any] = {"product": "web"}
    for _ in range(40):
        deep = {"$and": [deep]}
    with pytest.raises(InvalidInput, match="nested deeper"):
        compile_where(deep)


def test_dates_follow_the_memorys_versions(embedder: HashEmbedder) -> None:
    from fourfold.stores import InMemoryVectorStore

    lt = LongTermMemory(InMemoryVectorStore(embedder_identity=embedder.identity), embedder)
    lyon = lt.remember("Lives in Lyon", scope="c", key="city", valid_from=_at("2025-03-01T00:00"))
    lt.remember("Lives in Paris", scope="c", key="city", valid_from=_at("2026-06-01T00:00"))
    lt.remember("Met at the fair", scope="c", metadata={"occurred_at": "2024-05-04"})
    since_2026 = {"valid_from": {"$gte": "2026-01-01"}}
    assert [r.text for r in lt.all(scope="c", where=since_2026)] == ["Lives in Paris"]
    assert [r.text for r in lt.all(scope="c", where={"valid_from": {"$lt": "2025-01-01"}})] == ["Met at the fair"]
    ended = {"valid_to": {"$lte": "2026-06-01"}}  # only a superseded version has an end
    assert lt.all(scope="c", where=ended) == []
    assert [r.id for r in lt.all(scope="c", where=ended, include_superseded=True)] == [lyon]
    assert [r.text for r in lt.all(scope="c", where={"created_at": {"$gte": "2026-01-01"}})] == [
        "Lives in Paris", "Met at the fair"]  # written now, whatever they say about the past
