"""FactStore, the policy tool schemas and the tool handler."""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fourfold.errors import InvalidInput, NotFound, StoreCorrupt, StoreUnavailable
from fourfold.semantic.facts import MAX_VALUE_BYTES, UNKNOWN, FactStore
from fourfold.semantic.tools import (
    DEFAULT_DESCRIPTION,
    PolicyTool,
    openai_function_schema,
    policy_tool_schema,
)
from fourfold.types import Fact


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "facts.sqlite3"


@pytest.fixture
def path(database_target: Path | str, sqlite_path: Path) -> Path | str:
    """A SQLite file, or a fresh PostgreSQL schema: the behaviour tests run on both engines."""
    return sqlite_path if isinstance(database_target, Path) else database_target


@pytest.fixture
def facts(path: Path | str) -> Iterator[FactStore]:
    with FactStore(path) as store:
        yield store


def same_json(a: Any, b: Any) -> bool:
    """Equal, and of exactly the same types all the way down (30 is not 30.0 nor True)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_json(a[k], b[k]) for k in a)
    return bool(a == b)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=20,
)


# --- round trips ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [30, "30", 30.0, 0.1, -0.0, True, False, None, "", [1, "a", None], {"a": {"b": [1.5]}}, []],
)
def test_round_trip_keeps_value_and_type(facts: FactStore, path: Path | str, value: Any) -> None:
    facts.set("k", value)
    assert same_json(facts.get("k").value, value)
    with FactStore(path) as fresh:  # from disk, not from the cache
        assert same_json(fresh.get("k").value, value)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=json_values)
def test_any_json_value_round_trips(facts: FactStore, value: Any) -> None:
    facts.set("prop", value)
    assert same_json(facts.get("prop").value, value)
    expected = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    assert facts.lookup("prop") == expected


def test_set_returns_the_fact(facts: FactStore) -> None:
    fact = facts.set("refund_window_days", 30, description="Days to request a refund")
    assert fact == facts.get("refund_window_days")
    assert (fact.key, fact.value, fact.description) == (
        "refund_window_days",
        30,
        "Days to request a refund",
    )
    assert fact.updated_at > 0


def test_description_none_keeps_previous(facts: FactStore) -> None:
    facts.set("k", 1, description="first")
    facts.set("k", 2)
    assert facts.get("k").description == "first"
    facts.set("k", 3, description="")
    assert facts.get("k").description == ""


def test_returned_values_are_copies(facts: FactStore) -> None:
    original = {"tiers": [1, 2]}
    facts.set("k", original)
    original["tiers"].append(3)
    facts.get("k").value["tiers"].append(4)
    assert facts.get("k").value == {"tiers": [1, 2]}
    assert facts.lookup("k") == '{"tiers": [1, 2]}'


def test_list_and_keys_sorted(facts: FactStore) -> None:
    for key in ["b", "a", "C", "a.b"]:
        facts.set(key, key)
    assert facts.keys() == ["C", "a", "a.b", "b"]
    assert [f.key for f in facts.list()] == facts.keys()
    assert all(isinstance(f, Fact) and f.value == f.key for f in facts.list())


# --- lookup --------------------------------------------------------------------------------


def test_lookup_renders_for_a_model(facts: FactStore) -> None:
    facts.set("refund_window_days", 30)
    facts.set("support_hours", "9-17 CET")
    facts.set("options", ["card", "paypal"])
    facts.set("flag", False)
    facts.set("nothing", None)
    facts.set("name", "Zoë")
    assert facts.lookup("refund_window_days") == "30"
    assert facts.lookup("support_hours") == "9-17 CET"
    assert facts.lookup("options") == '["card", "paypal"]'
    assert facts.lookup("flag") == "false"
    assert facts.lookup("nothing") == "null"
    assert facts.lookup("name") == "Zoë"


@pytest.mark.parametrize("key", ["missing", "", "bad key", "x" * 129, None, 3, ["k"], {"k": 1}])
def test_lookup_unknown_is_exactly_unknown(facts: FactStore, key: Any) -> None:
    assert facts.lookup(key) == "UNKNOWN — escalate to a human"
    assert UNKNOWN == "UNKNOWN \u2014 escalate to a human"


def test_lookup_sees_updates_and_deletes(facts: FactStore) -> None:
    assert facts.lookup("k") == UNKNOWN  # cached as absent...
    facts.set("k", "v1")
    assert facts.lookup("k") == "v1"  # ...and the write replaced that
    facts.set("k", "v2")
    assert facts.lookup("k") == "v2"
    facts.delete("k")
    assert facts.lookup("k") == UNKNOWN


# --- delete and history --------------------------------------------------------------------


def test_get_and_delete_unknown_raise_not_found(facts: FactStore) -> None:
    with pytest.raises(NotFound, match="missing"):
        facts.get("missing")
    with pytest.raises(NotFound):
        facts.delete("missing")


def test_history_keeps_replaced_and_deleted_values(facts: FactStore) -> None:
    assert facts.history("k") == []
    facts.set("k", 30)
    facts.set("k", "30")
    facts.set("k", "30")  # unchanged: not a new version
    facts.set("k", [30])
    facts.delete("k")
    history = facts.history("k")
    assert [v for v, _ in history] == [30, "30", [30]]
    assert same_json(history[1][0], "30")
    times = [t for _, t in history]
    assert times == sorted(times) and all(t > 0 for t in times)
    with pytest.raises(NotFound):
        facts.get("k")


def test_history_survives_reopen(facts: FactStore, path: Path | str) -> None:
    facts.set("k", 1)
    facts.set("k", 2)
    facts.close()
    with FactStore(path) as again:
        assert [v for v, _ in again.history("k")] == [1]
        assert again.get("k").value == 2


def test_description_change_alone_is_a_new_version(facts: FactStore) -> None:
    facts.set("k", 1, description="old")
    facts.set("k", 1, description="new")
    assert [v for v, _ in facts.history("k")] == [1]
    assert facts.get("k").description == "new"


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["a", "A-z_0.9:x", "x" * 128])
def test_valid_keys(facts: FactStore, key: str) -> None:
    facts.set(key, 1)
    assert facts.get(key).value == 1


@pytest.mark.parametrize(
    "key", ["", "x" * 129, "has space", "ünï", "a/b", "a\n", "key\x00", None, 5, b"bytes"]
)
def test_invalid_keys(facts: FactStore, key: Any) -> None:
    with pytest.raises(InvalidInput, match="fact keys"):
        facts.set(key, 1)
    with pytest.raises(InvalidInput):
        facts.get(key)
    assert facts.keys() == []


@pytest.mark.parametrize(
    "value",
    [
        {1, 2},
        (1, 2),
        object(),
        float("nan"),
        float("inf"),
        [float("-inf")],
        {1: "int key"},
        b"bytes",
        "lone \ud800 surrogate",
        "x" * (MAX_VALUE_BYTES + 1),
        "é" * (MAX_VALUE_BYTES // 2 + 1),  # under the limit in chars, over it in bytes
        10**5000,
    ],
    ids=lambda v: type(v).__name__,
)
def test_invalid_values(facts: FactStore, value: Any) -> None:
    with pytest.raises(InvalidInput):
        facts.set("k", value)
    assert facts.lookup("k") == UNKNOWN


def test_deep_nesting_is_refused_cleanly(facts: FactStore) -> None:
    value: Any = 1
    for _ in range(5000):
        value = [value]
    with pytest.raises(InvalidInput, match="nested"):
        facts.set("k", value)


def test_value_at_the_size_limit_is_accepted(facts: FactStore) -> None:
    value = "x" * (MAX_VALUE_BYTES - 2)  # plus two quotes in JSON
    facts.set("big", value)
    assert facts.lookup("big") == value


@pytest.mark.parametrize("description", [3, "bad \udfff", "d" * (MAX_VALUE_BYTES + 1)])
def test_invalid_descriptions(facts: FactStore, description: Any) -> None:
    with pytest.raises(InvalidInput):
        facts.set("k", 1, description=description)


def test_closed_store_raises(path: Path | str) -> None:
    store = FactStore(path)
    store.close()
    store.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        store.lookup("k")


# --- tool schemas --------------------------------------------------------------------------


def test_policy_schema_shape() -> None:
    schema = policy_tool_schema(["support_hours", "refund_window_days", "support_hours"])
    assert schema == {
        "name": "lookup_policy",
        "description": DEFAULT_DESCRIPTION,
        "input_schema": {
            "type": "object",
            "properties": {
                "key": {
                    "type": "string",
                    "enum": ["refund_window_days", "support_hours"],
                    "description": schema["input_schema"]["properties"]["key"]["description"],
                }
            },
            "required": ["key"],
            "additionalProperties": False,
        },
    }
    json.dumps(schema)  # serialisable as-is


def test_empty_schema_has_no_enum_and_says_so() -> None:
    schema = policy_tool_schema([])
    key = schema["input_schema"]["properties"]["key"]
    assert "enum" not in key and key["type"] == "string"
    assert "No policies are recorded yet" in schema["description"]


@pytest.mark.parametrize(
    "kwargs",
    [{"name": ""}, {"name": "has space"}, {"name": "x" * 65}, {"description": " "}],
)
def test_schema_rejects_bad_name_or_description(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        policy_tool_schema(["k"], **kwargs)


def test_schema_rejects_bad_keys() -> None:
    with pytest.raises(InvalidInput):
        policy_tool_schema("refund_window_days")
    with pytest.raises(InvalidInput):
        policy_tool_schema(["ok", "not ok"])


def test_openai_schema_shape() -> None:
    anthropic = policy_tool_schema(["a"], name="policy", description="Policies.")
    openai = openai_function_schema(anthropic)
    assert openai == {
        "type": "function",
        "function": {
            "name": "policy",
            "description": "Policies.",
            "parameters": anthropic["input_schema"],
        },
    }
    openai["function"]["parameters"]["properties"]["key"]["enum"].append("b")
    assert anthropic["input_schema"]["properties"]["key"]["enum"] == ["a"]
    with pytest.raises(InvalidInput):
        openai_function_schema({"description": "no name"})


def test_tool_schema_tracks_current_keys(facts: FactStore) -> None:
    tool = PolicyTool(facts)
    assert "enum" not in tool.schema()["input_schema"]["properties"]["key"]
    facts.set("refund_window_days", 30)
    facts.set("max_file_upload_mb", 25)
    enum = tool.schema()["input_schema"]["properties"]["key"]["enum"]
    assert enum == ["max_file_upload_mb", "refund_window_days"]
    assert tool.openai_schema()["function"]["parameters"]["properties"]["key"]["enum"] == enum
    facts.delete("max_file_upload_mb")
    assert facts.tool_schema()["input_schema"]["properties"]["key"]["enum"] == [
        "refund_window_days"
    ]
    assert facts.tool_schema(name="p", description="d")["name"] == "p"


def test_the_operators_tool_description_is_stored_and_reaches_every_schema(path: Path | str) -> None:
    with FactStore(path) as facts:
        tool = PolicyTool(facts)
        assert facts.tool_description() == DEFAULT_DESCRIPTION == tool.schema()["description"].split(" No policies")[0]
        facts.set("refund_window_days", 30)
        assert facts.set_tool_description("Values of the Acme returns desk.") == "Values of the Acme returns desk."
        assert tool.schema()["description"] == "Values of the Acme returns desk."  # re-read, like the keys
        assert tool.openai_schema()["function"]["description"] == "Values of the Acme returns desk."
        assert facts.tool_schema()["description"] == "Values of the Acme returns desk."
        assert PolicyTool(facts, description="This once.").schema()["description"] == "This once."
    with FactStore(path) as again:  # stored: another process of the data dir sees it
        assert again.tool_description() == "Values of the Acme returns desk."
        assert again.set_tool_description(None) == DEFAULT_DESCRIPTION
        assert again.tool_schema()["description"] == DEFAULT_DESCRIPTION


@pytest.mark.parametrize("bad", ["", "   ", 3, "d" * (MAX_VALUE_BYTES + 1), "Call us with key sk-ant-api03-" + "a" * 40])
def test_a_bad_tool_description_is_refused_and_the_old_one_kept(facts: FactStore, bad: Any) -> None:
    facts.set_tool_description("Acme policies.")
    with pytest.raises(InvalidInput):
        facts.set_tool_description(bad)
    assert facts.tool_description() == "Acme policies."


def test_handler_answers_tool_calls(facts: FactStore) -> None:
    facts.set("refund_window_days", 30)
    tool = PolicyTool(facts)
    assert tool.handle({"key": "refund_window_days"}) == "30"
    assert tool.handle('{"key": "refund_window_days"}') == "30"  # OpenAI's arguments string
    assert tool.handle({"key": "refund_window_days", "extra": 1}) == "30"


@pytest.mark.parametrize(
    "tool_input",
    [
        {},
        {"key": None},
        {"key": 30},
        {"key": ["refund_window_days"]},
        {"key": "no such"},
        {"key": "missing"},
        {"other": "refund_window_days"},
        None,
        [],
        "not json",
        '"str"',
        "[]",
        "[" * 100_000,
    ],
)
def test_handler_bad_calls_are_unknown(facts: FactStore, tool_input: Any) -> None:
    facts.set("refund_window_days", 30)
    assert PolicyTool(facts).handle(tool_input) == UNKNOWN


# --- concurrency and files -----------------------------------------------------------------


def test_two_instances_see_each_others_writes(path: Path | str) -> None:
    with FactStore(path) as a, FactStore(path) as b:
        assert b.lookup("k") == UNKNOWN  # b now caches "absent"
        a.set("k", 1)
        assert b.lookup("k") == "1"
        b.set("k", 2)
        assert a.lookup("k") == "2"
        assert a.get("k").value == 2
        a.delete("k")
        assert b.lookup("k") == UNKNOWN


def test_another_process_write_is_seen(facts: FactStore, path: Path | str) -> None:
    assert facts.lookup("limit") == UNKNOWN
    code = (
        "import sys; from fourfold.semantic.facts import FactStore\n"
        "with FactStore(sys.argv[1]) as s: s.set('limit', 42)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=120)
    assert facts.lookup("limit") == "42"
    assert facts.get("limit").value == 42


def _write_many(path: str, worker: int, count: int) -> None:
    with FactStore(path) as store:
        for i in range(count):
            store.set("shared", f"{worker}:{i}")
            store.set(f"own.{worker}", i)


def test_concurrent_processes_lose_no_writes(path: Path | str) -> None:
    workers, count = 4, 25
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(str(path), w, count)) for w in range(workers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    with FactStore(path) as store:
        versions = [v for v, _ in store.history("shared")] + [store.get("shared").value]
        assert sorted(versions) == sorted(f"{w}:{i}" for w in range(workers) for i in range(count))
        for w in range(workers):
            assert store.get(f"own.{w}").value == count - 1
            assert len(store.history(f"own.{w}")) == count - 1


def test_threads_share_one_store(facts: FactStore) -> None:
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(50):
                facts.set(f"t{n}", i)
                assert facts.lookup(f"t{n}") == str(i)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [facts.get(f"t{n}").value for n in range(4)] == [49] * 4


def test_uses_wal_and_records_schema_version(sqlite_path: Path) -> None:
    path = sqlite_path
    with FactStore(path) as facts:
        facts.set("k", 1)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT value FROM meta WHERE name='schema_version'").fetchone() == (
            "1",
        )
        columns = [r[1] for r in conn.execute("PRAGMA table_info(facts)")]
        assert columns == ["key", "value_json", "description", "updated_at"]
    finally:
        conn.close()


def test_damaged_file_is_store_corrupt(sqlite_path: Path) -> None:
    path = sqlite_path
    path.parent.mkdir(parents=True)
    path.write_bytes(os.urandom(8192))
    with pytest.raises(StoreCorrupt) as info:
        FactStore(path)
    message = str(info.value)
    assert str(path) in message
    assert "backup" in message and "move it aside" in message


def test_newer_schema_version_is_store_corrupt(sqlite_path: Path) -> None:
    path = sqlite_path
    with FactStore(path) as facts:
        facts.set("k", 1)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE meta SET value = '2' WHERE name = 'schema_version'")
    conn.close()
    with pytest.raises(StoreCorrupt, match="newer fourfold"):
        FactStore(path)


def test_foreign_sqlite_database_is_refused(sqlite_path: Path) -> None:
    path = sqlite_path
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.close()
    with pytest.raises(StoreCorrupt, match="not fourfold"):
        FactStore(path)


def test_unopenable_path_is_store_unavailable(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable):
        FactStore(tmp_path)  # a directory, not a file


def test_a_purged_fact_leaves_no_value_on_disk(tmp_path: Path) -> None:
    with FactStore(tmp_path / "db" / "fourfold.sqlite3") as store:
        store.set("escalation_phone", "call Zebulon-9 first")
        store.set("escalation_phone", "call Quixote-4 first")
        store.set("kept", "another value")
        store.delete("escalation_phone")
        assert [v for v, _ in store.history("escalation_phone")] == ["call Zebulon-9 first", "call Quixote-4 first"]
        store.delete("escalation_phone", purge=True)
        assert store.history("escalation_phone") == [] and store.get("kept").value == "another value"
        on_disk = b"".join(p.read_bytes() for p in (tmp_path / "db").iterdir())
        assert b"Zebulon-9" not in on_disk and b"Quixote-4" not in on_disk and b"another value" in on_disk
