"""The LangGraph store: the same operations give the same answers as LangGraph's own
`InMemoryStore` (sync and async), search is fourfold's recall over the indexed fields, and the
page's examples run as written."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from conftest import OpenMemory
from fourfold.embeddings import HashEmbedder
from fourfold.errors import MissingDependency
from fourfold.integrations._require import require_framework
from fourfold.integrations.langgraph import FourfoldStore, namespace_of, scope_of
from fourfold.memory import Memory

PAGE = Path(__file__).resolve().parent.parent / "docs" / "integrations" / "langgraph.md"


@pytest.fixture
def store(open_memory: OpenMemory) -> FourfoldStore:
    return FourfoldStore(open_memory(), index={"dims": 256, "fields": ["text"]})


def _shape(result: Any) -> Any:
    """What two stores must agree on: namespaces, keys and values (times and scores differ)."""
    if isinstance(result, Item):
        return (result.namespace, result.key, result.value)
    if isinstance(result, list):
        return [_shape(r) for r in result]
    return result


#: Operations with every feature the interface has, in an order where each depends on the last.
SCRIPT: list[Op] = [
    PutOp(("users", "ann", "notes"), "a", {"text": "likes green tea", "n": 1, "tags": ["drink"]}),
    PutOp(("users", "ann", "notes"), "b", {"text": "works night shifts", "n": 2}),
    PutOp(("users", "bo", "notes"), "a", {"text": "likes black coffee", "n": 3}),
    PutOp(("users", "bo", "prefs"), "lang", {"text": "speaks Portuguese", "n": 4, "nested": {"x": 1}}),
    PutOp(("docs", "v1"), "readme", {"text": "installation guide", "n": 5}),
    GetOp(("users", "ann", "notes"), "a"),
    GetOp(("users", "ann", "notes"), "missing"),
    PutOp(("users", "ann", "notes"), "a", {"text": "likes oolong tea", "n": 6}),
    GetOp(("users", "ann", "notes"), "a"),
    SearchOp(("users", "ann", "notes")),
    SearchOp(("users",), filter={"n": {"$gte": 3}}),
    SearchOp(("users",), filter={"n": {"$lt": 3}, "text": "works night shifts"}),
    SearchOp(("users",), filter={"n": {"$ne": 2}}, limit=2, offset=1),
    SearchOp(("users",), filter={"nested": {"x": 1}}),
    SearchOp((), limit=3),
    ListNamespacesOp(),
    ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("users",)),)),
    ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("notes",)),)),
    ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("users", "*", "notes")),)),
    ListNamespacesOp(max_depth=2),
    ListNamespacesOp(limit=2, offset=1),
    PutOp(("users", "ann", "notes"), "b", None),
    GetOp(("users", "ann", "notes"), "b"),
    PutOp(("docs", "v1"), "readme", None),
    SearchOp(("docs",)),
    SearchOp(("users", "ann")),
]


def _answers(store: BaseStore, run: Callable[[BaseStore, list[Op]], list[Any]]) -> list[Any]:
    """Each op of the script, run alone (so a later op sees an earlier one's write)."""
    return [_shape(run(store, [op])[0]) for op in SCRIPT]


def _sync(store: BaseStore, ops: list[Op]) -> list[Any]:
    return store.batch(ops)


def _async(store: BaseStore, ops: list[Op]) -> list[Any]:
    return asyncio.run(store.abatch(ops))


@pytest.mark.parametrize("run", [_sync, _async], ids=["batch", "abatch"])
def test_every_operation_answers_as_langgraphs_own_store(open_memory: OpenMemory, run: Callable[..., Any]) -> None:
    ours = FourfoldStore(open_memory(), index={"dims": 256, "fields": ["text"]})
    assert _answers(ours, run) == _answers(InMemoryStore(), run)


def test_one_batch_runs_in_order(store: FourfoldStore) -> None:
    results = store.batch([PutOp(("a",), "k", {"text": "first value"}), GetOp(("a",), "k"),
                           PutOp(("a",), "k", None), GetOp(("a",), "k")])
    assert _shape(results) == [None, (("a",), "k", {"text": "first value"}), None, None]
    store.put(("a", "b"), "k", {"text": "deeper value"})
    assert store.get(("a",), "k") is None  # a prefix is not the namespace (LangGraph's in-memory
    # store would also list ("a",) as a namespace from then on, empty: a quirk not copied here)
    store.delete(("a", "b"), "k")
    assert store.list_namespaces() == []  # emptied, as in LangGraph's PostgreSQL store


def test_a_put_over_a_key_keeps_created_at_and_versions(store: FourfoldStore) -> None:
    store.put(("u",), "k", {"text": "prefers email"})
    first = store.get(("u",), "k")
    store.put(("u",), "k", {"text": "prefers phone calls"})
    second = store.get(("u",), "k")
    assert first is not None and second is not None
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    (current,) = store.memory.long_term.all(scope="u", kinds=("item",))
    assert [v.text for v in store.memory.long_term.history(current.id)] == ["prefers email", "prefers phone calls"]


def test_search_ranks_by_recall_over_the_indexed_fields_only(store: FourfoldStore) -> None:
    ns = ("users", "ann")
    store.put(ns, "tea", {"text": "drinks green tea every morning", "note": "unrelated"})
    store.put(ns, "cats", {"text": "has two cats", "note": "green tea green tea green tea"})
    store.put(ns, "title", {"text": "nothing here", "title": "green tea ceremony"}, index=["title"])
    store.put(ns, "hidden", {"text": "green tea forever"}, index=False)
    texts = {r.text for r in store.memory.long_term.all(scope="users/ann", kinds=("item",))}
    assert {"drinks green tea every morning", "has two cats", "green tea ceremony"} <= texts
    found = store.search(ns, query="green tea", limit=10)
    assert [i.key for i in found][:2] in (["tea", "title"], ["title", "tea"])
    assert found[-1].key == "hidden" and found[-1].score is None  # never ranked, listed after
    ranked = [i.score for i in found if i.score is not None]
    assert ranked == sorted(ranked, reverse=True) and all(0 <= s <= 1 for s in ranked)
    cats = next(i for i in found if i.key == "cats")
    assert cats.score is not None and cats.score < found[0].score  # type: ignore[operator]


def test_the_filter_applies_before_ranking(store: FourfoldStore) -> None:
    store.put(("u",), "best", {"text": "green tea", "kind": "drink"})
    store.put(("u",), "next", {"text": "green tea leaves in the garden", "kind": "plant"})
    assert [i.key for i in store.search(("u",), query="green tea", limit=1)] == ["best"]
    assert [i.key for i in store.search(("u",), query="green tea", filter={"kind": "plant"}, limit=1)] == ["next"]


def test_small_talk_is_kept_but_not_ranked(store: FourfoldStore) -> None:
    store.put(("u",), "k", {"text": "ok"})
    item = store.get(("u",), "k")
    assert item is not None and item.value == {"text": "ok"}
    assert [(i.key, i.score) for i in store.search(("u",), query="ok")] == [("k", None)]


def test_namespaces_are_scopes_both_ways(store: FourfoldStore) -> None:
    store.put(("users", "a/b", "100%"), "k", {"text": "a label with a slash"})
    assert "users/a%2Fb/100%25" in store.memory.scopes()
    assert store.list_namespaces() == [("users", "a/b", "100%")]
    for ns in [("a",), ("a", "b/c"), ("%2F", "x%", "/")]:
        assert namespace_of(scope_of(ns)) == ns


def test_other_scopes_are_not_items(store: FourfoldStore) -> None:
    store.memory.long_term.remember("Prefers email.", scope="customer:42")
    assert store.list_namespaces() == [] and store.search(()) == []


labels = st.sampled_from(["a", "b", "c/d"])
namespaces = st.tuples(labels) | st.tuples(labels, labels)
values = st.fixed_dictionaries({"text": st.sampled_from(["red apples", "green pears", "blue plums"]),
                                "n": st.integers(0, 3)})
ops = st.lists(st.tuples(namespaces, st.sampled_from(["k1", "k2"]), st.none() | values), min_size=1, max_size=8)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=ops)
def test_any_writes_leave_both_stores_agreeing(tmp_path: Path, writes: list[Any]) -> None:
    ours_memory = Memory.open(tmp_path / f"d{len(os.listdir(tmp_path))}", embedder=HashEmbedder())
    try:
        stores = (FourfoldStore(ours_memory), InMemoryStore())
        for store in stores:
            for namespace, key, value in writes:
                store.put(namespace, key, value) if value is not None else store.delete(namespace, key)
        reads: list[Op] = [ListNamespacesOp(), SearchOp(()), SearchOp(("a",), filter={"n": {"$gte": 2}}),
                           *(GetOp(ns, k) for ns, k, _ in writes)]
        theirs, ours = (_shape(s.batch(reads)) for s in reversed(stores))
        assert ours[3:] == theirs[3:]
        # LangGraph's in-memory store also lists a namespace that a delete or a get touched, empty
        assert ours[0] == sorted({namespace for namespace, _, _ in theirs[1]})
        # items in the same namespaces, in the same order within each
        for listed in (1, 2):
            assert sorted(ours[listed], key=_place) == sorted(theirs[listed], key=_place)
    finally:
        ours_memory.close()


def _place(shape: tuple[tuple[str, ...], str, dict[str, Any]]) -> tuple[tuple[str, ...], str]:
    return shape[0], shape[1]


def test_a_missing_framework_names_the_extra() -> None:
    with pytest.raises(MissingDependency, match=re.escape("pip install 'fourfold[langgraph]'")):
        require_framework("langgraph_not_installed_here", "langgraph", what="fourfold.integrations.langgraph")


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


@pytest.fixture
def run_page(tmp_path: Path) -> Iterator[Callable[[str], str]]:
    def run(code: str) -> str:
        env = {**os.environ, "FOURFOLD_EMBEDDER": "hash"}
        ran = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                             timeout=300, env=env)
        assert ran.returncode == 0, ran.stderr[-3000:]
        return ran.stdout

    yield run


def test_the_pages_examples_run_as_written(run_page: Callable[[str], str]) -> None:
    graph, concurrent = _blocks()
    assert run_page(graph).splitlines() == [
        "['I am allergic to peanuts']", "[('users', 'ann', 'memories'), ('users', 'bo', 'memories')]"]
    assert run_page(concurrent).splitlines() == ["[('diet', 'Cy is vegetarian')]"]
