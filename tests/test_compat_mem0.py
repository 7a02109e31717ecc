"""Mem0's API over fourfold: its quickstart runs unchanged but for the import, its return shapes
hold, and ids map onto scopes so that one user's memories never reach another."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import OpenMemory
from fourfold.compat.identity import Identity
from fourfold.compat.mem0 import Memory, MemoryNotFound
from fourfold.errors import InvalidInput, NotFound
from fourfold.models import OfflineModel

PAGE = Path(__file__).resolve().parent.parent / "docs" / "integrations" / "mem0.md"
#: The keys of Mem0's `MemoryItem`, in its order, as `search` returns them for a user's memory.
ITEM_KEYS = ["id", "memory", "hash", "metadata", "score", "created_at", "updated_at", "user_id"]


@pytest.fixture
def m(open_memory: OpenMemory) -> Memory:
    return Memory(memory=open_memory(), model=OfflineModel())


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def _run(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "FOURFOLD_MODEL")}
    ran = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300,
                         env={**clean, "FOURFOLD_EMBEDDER": "hash", "FOURFOLD_DATA_DIR": str(cwd / "data"), **env})
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran


def test_the_pages_examples_run_as_written(tmp_path: Path) -> None:
    quickstart, tour = _blocks()
    ran = _run(quickstart + "\n" + tour, tmp_path)
    lines = ran.stdout.splitlines()
    assert lines[0] == "{'results': []}"  # offline, the greeting holds nothing lasting
    assert lines[1] == "[('User said: I prefer aisle seats.', 'travel')]"  # alice's, never bob's window seat
    assert lines[2] == "I'm vegan."
    assert lines[3] == "[('ADD', \"User said: I'm vegetarian and allergic to nuts.\"), ('UPDATE', \"I'm vegan.\")]"
    assert lines[4] == "{'results': []} 1"


@pytest.mark.slow
def test_the_quickstart_runs_unchanged_with_a_model_and_never_shows_another_user(tmp_path: Path) -> None:
    """Mem0's quickstart, its import changed, on the bundled embedder, with the model reached over
    the Messages API; Sam's memory says the same of Sam and must not be found for Alex."""
    from fourfold.testing import FakeLLMServer

    def extraction(body: dict[str, Any]) -> str:
        said = body["messages"][-1]["content"]
        if "Alex" in str(said):
            return json.dumps({"memories": [{"text": "Name is Alex. Enjoys basketball and gaming.", "kind": "fact"}]})
        return json.dumps({"memories": [{"text": "Name is Sam. Enjoys basketball and gaming too.", "kind": "fact"}]})

    quickstart = _blocks()[0]
    other = ("from fourfold.compat.mem0 import Memory\n"
             "Memory().add([{'role': 'user', 'content': 'I am Sam, basketball is my thing.'}], user_id='sam')\n")
    with FakeLLMServer(extraction) as server:
        env = {"FOURFOLD_MODEL": f"anthropic:claude-haiku-4-5@{server.url}", "ANTHROPIC_API_KEY": "test-key",
               "FOURFOLD_EMBEDDER": "minilm"}
        _run(other, tmp_path, **env)
        ran = _run(quickstart, tmp_path, **env)
    printed = eval(ran.stdout.strip())  # the quickstart prints the result dict
    results = printed["results"]
    assert [r["memory"] for r in results] == ["Name is Alex. Enjoys basketball and gaming."]
    assert all(r["user_id"] == "alex" for r in results)
    assert list(results[0]) == ITEM_KEYS


def test_a_users_search_ranks_every_agent_of_theirs_in_one_list(m: Memory) -> None:
    m.add("I prefer window seats.", user_id="ann")
    m.add("I prefer aisle seats.", user_id="ann", agent_id="travel")
    m.add("I prefer exit row seats.", user_id="ann", agent_id="travel", run_id="r1")
    m.add("I prefer bulkhead seats.", user_id="bo", agent_id="travel")
    every = m.search("which seats do I prefer?", filters={"user_id": "ann"})["results"]
    assert {r["memory"] for r in every} == {
        "User said: I prefer window seats.", "User said: I prefer aisle seats.", "User said: I prefer exit row seats."}
    assert [r["score"] for r in every] == sorted((r["score"] for r in every), reverse=True)
    travel = m.search("seats", filters={"user_id": "ann", "agent_id": "travel"})["results"]
    assert {(r["agent_id"], r.get("run_id")) for r in travel} == {("travel", None), ("travel", "r1")}
    agent_wide = m.search("seats", filters={"agent_id": "travel"}, top_k=10)["results"]
    assert {r["user_id"] for r in agent_wide} == {"ann", "bo"}
    assert m.search("seats", filters={"user_id": "ann"}, top_k=1)["results"][0]["id"] == every[0]["id"]


def test_the_1x_keywords_are_taken_too(m: Memory) -> None:
    m.add("I prefer window seats.", user_id="ann")
    assert m.search("seats", user_id="ann", limit=1)["results"][0]["memory"] == "User said: I prefer window seats."
    assert m.get_all(user_id="ann")["results"][0]["user_id"] == "ann"
    with pytest.raises(InvalidInput, match="given twice"):
        m.search("seats", user_id="ann", filters={"user_id": "bo"})
    with pytest.raises(InvalidInput, match="at least one of"):
        m.search("seats", filters={"category": "x"})


def test_a_memory_keeps_its_id_across_updates_and_any_version_names_it(m: Memory) -> None:
    added = m.add("I'm vegetarian and allergic to nuts.", user_id="ann", metadata={"category": "food"})["results"]
    assert [(r["memory"], r["event"]) for r in added] == [("User said: I'm vegetarian and allergic to nuts.", "ADD")]
    first = added[0]["id"]
    assert m.update(first, "I'm vegan.") == {"message": "Memory updated successfully!"}
    assert m.update(first, metadata={"source": "chat"}) == {"message": "Memory updated successfully!"}
    now = m.get(first)
    assert now is not None and now["id"] == first and now["memory"] == "I'm vegan."
    assert now["metadata"] == {"category": "food", "source": "chat"} and now["score"] is None
    history = m.history(first)
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history][:2] == [
        ("ADD", None, "User said: I'm vegetarian and allergic to nuts."), ("UPDATE", "User said: I'm vegetarian and allergic to nuts.", "I'm vegan.")]
    assert {h["memory_id"] for h in history} == {first}
    listed = m.get_all(filters={"user_id": "ann"})["results"]
    assert [r["id"] for r in listed] == [first] and "score" not in listed[0]
    assert m.get(history[1]["id"]) == now  # an older version's id names the memory as it reads now


@pytest.mark.xfail(reason="the reader's key head names 'I prefer window seats.' a document format", strict=True)
def test_a_changed_preference_is_an_update_of_the_same_memory(m: Memory) -> None:
    first = m.add("I prefer window seats.", user_id="ann")["results"][0]
    second = m.add("I prefer aisle seats.", user_id="ann")["results"]
    assert second == [{"id": first["id"], "memory": "User said: I prefer aisle seats.", "event": "UPDATE"}]
    assert [r["memory"] for r in m.get_all(filters={"user_id": "ann"})["results"]] == ["User said: I prefer aisle seats."]


def test_delete_erases_every_version_and_a_missing_memory_is_a_value_error(m: Memory) -> None:
    mid = m.add("I'm vegetarian and allergic to nuts.", user_id="ann")["results"][0]["id"]
    m.update(mid, "I'm vegan.")
    assert m.delete(mid) == {"message": "Memory deleted successfully!"}
    assert m.get(mid) is None and m.history(mid) == []
    assert m.get_all(filters={"user_id": "ann"}) == {"results": []}
    with pytest.raises(MemoryNotFound) as raised:
        m.delete(mid)
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, NotFound)
    with pytest.raises(ValueError):
        m.update("mem_nothing", "x")


def test_delete_all_and_reset_leave_other_users_and_plain_scopes_alone(m: Memory) -> None:
    m.add("I'm vegetarian and allergic to nuts.", user_id="ann")
    m.add("I'm a pilot.", user_id="ann", agent_id="travel")
    m.add("I'm a baker.", user_id="bo")
    m.memory.long_term.remember("Prefers email.", scope="customer:42")
    with pytest.raises(InvalidInput, match="reset"):
        m.delete_all()
    assert m.delete_all(user_id="ann") == {"message": "Memories deleted successfully!"}
    assert sorted(m.memory.scopes()) == ["customer:42", "user:bo"]
    m.reset()
    assert sorted(m.memory.scopes()) == ["customer:42"]
    assert m.get(m.memory.long_term.all(scope="customer:42")[0].id) is None  # not kept through this API


def test_raw_messages_keep_their_role_and_speaker(m: Memory) -> None:
    added = m.add([
        {"role": "system", "content": "You are a travel agent."},
        {"role": "user", "content": "I'm planning a trip to Tokyo next month.", "name": "ann"},
        {"role": "assistant", "content": "Great, I'll suggest places in Tokyo."},
        {"role": "user", "content": "thanks!"},
    ], user_id="ann", metadata={"category": "trips", "user_id": "bo"}, infer=False)["results"]
    assert [(r["memory"], r["role"], r["actor_id"], r["event"]) for r in added] == [
        ("I'm planning a trip to Tokyo next month.", "user", "ann", "ADD"),
        ("Great, I'll suggest places in Tokyo.", "assistant", None, "ADD")]
    found = m.search("Tokyo trip", filters={"user_id": "ann", "role": "user"})["results"]
    assert [(r["memory"], r["role"], r["actor_id"], r["user_id"], r["metadata"]) for r in found] == [
        ("I'm planning a trip to Tokyo next month.", "user", "ann", "ann", {"category": "trips"})]


def test_metadata_filters_translate_or_refuse(m: Memory) -> None:
    m.add("I prefer window seats.", user_id="ann", metadata={"priority": 1, "topic": "seat"})
    m.add("I'm vegetarian and allergic to nuts.", user_id="ann", metadata={"priority": 3, "topic": "food"})
    def memories(**filters: Any) -> list[str]:
        found = m.get_all(filters={"user_id": "ann", **filters})["results"]
        return sorted(r["memory"] for r in found)
    assert memories(priority={"gte": 2}) == ["User said: I'm vegetarian and allergic to nuts."]
    assert memories(topic={"in": ["seat"]}) == ["User said: I prefer window seats."]
    assert len(memories(OR=[{"topic": "seat"}, {"priority": {"gt": 2}}])) == 2
    assert memories(AND=[{"topic": "seat"}, {"priority": {"gt": 2}}]) == []
    for refused in ({"topic": {"contains": "se"}}, {"NOT": [{"topic": "seat"}]}, {"topic": "*"}):
        with pytest.raises(InvalidInput, match="not supported"):
            m.get_all(filters={"user_id": "ann", **refused})


def test_an_expired_memory_is_hidden_unless_asked_for(m: Memory) -> None:
    m.add("I'm vegetarian and allergic to nuts.", user_id="ann", expiration_date="2020-01-31")
    m.add("I'm a pilot.", user_id="ann", expiration_date="2999-01-31")
    assert [r["memory"] for r in m.get_all(filters={"user_id": "ann"})["results"]] == ["User said: I'm a pilot."]
    shown = m.get_all(filters={"user_id": "ann"}, show_expired=True)["results"]
    assert sorted(r["expiration_date"] for r in shown) == ["2020-01-31", "2999-01-31"]
    with pytest.raises(InvalidInput, match="YYYY-MM-DD"):
        m.add("I'm a pilot.", user_id="ann", expiration_date="soon")


def test_mem0s_own_configuration_is_refused_with_what_is_taken(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="vector_store"):
        Memory({"vector_store": {"provider": "qdrant"}})
    with Memory.from_config({"path": str(tmp_path / "d"), "llm": "offline"}) as m:
        assert not m.model.is_llm and m.memory.data_dir == tmp_path / "d"


ids = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=1,
              max_size=12).filter(lambda s: s.isprintable() and not any(c.isspace() for c in s))


@given(user=st.none() | ids, agent=st.none() | ids, run=st.none() | ids)
def test_ids_read_back_from_their_scope(user: str | None, agent: str | None, run: str | None) -> None:
    if user is None and agent is None and run is None:
        return
    try:
        identity = Identity(user, agent, run)
        scope = identity.scope
    except InvalidInput:  # an id that looks like a secret is refused, as any scope is
        return
    assert Identity.from_scope(scope) == identity
    assert identity.scopes_in([scope, "customer:42", None]) == [scope]


def test_a_scope_of_one_user_is_never_read_for_another() -> None:
    scopes = ["user:ann", "user:ann/agent:x", "user:anna", "user:bo/agent:x", "agent:x", "user:ann%2Fx", "customer:ann"]
    assert Identity(user_id="ann").scopes_in(scopes) == ["user:ann", "user:ann/agent:x"]
    assert Identity(agent_id="x").scopes_in(scopes) == ["agent:x", "user:ann/agent:x", "user:bo/agent:x"]
    assert Identity.from_scope("user:ann%2Fx") == Identity(user_id="ann/x")
    assert Identity.from_scope("agent:x/user:ann") is None  # out of order: not made by Identity
