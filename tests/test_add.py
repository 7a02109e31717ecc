"""`memory.add(messages, scope=...)`: keep what a conversation says that is worth remembering,
in every interface."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from fourfold import InvalidInput, Memory
from fourfold.models import ScriptedModel
from fourfold.service.mcp import build_mcp_server
from fourfold.service.testing import LiveService

CONVERSATION: list[Any] = [
    {"role": "user", "content": "Hi! I live in Porto and I work at a bakery. Please email me the invoices."},
    {"role": "assistant", "content": "Sure. I am an assistant and I live in the cloud."},
    {"role": "user", "content": [{"type": "text", "text": "I am having trouble logging in. Can you help?"}]},
    "Thanks!",
]
KEPT = ["User said: I live in Porto and I work at a bakery.", "User said: Please email me the invoices."]


def test_offline_rules_keep_lasting_facts_and_preferences_only(memory: Memory) -> None:
    done = memory.add(CONVERSATION, scope="user:1")
    assert [r.text for r in done] == KEPT and all(r.created for r in done)
    stored = {m.text: (m.kind, m.key) for m in memory.long_term.all(scope="user:1")}
    assert stored == {KEPT[0]: ("fact", None), KEPT[1]: ("preference", "contact_channel")}
    again = memory.add(CONVERSATION, scope="user:1")
    assert [r.created for r in again] == [False, False]  # nothing piles up
    changed = memory.add(["From now on, text me instead of email."], scope="user:1")
    assert changed[0].supersedes == (done[1].id,)
    assert sorted(m.text for m in memory.long_term.all(scope="user:1")) == [
        "User said: From now on, text me instead of email.", KEPT[0]]
    assert memory.add(["Can you help me?", "ok"], scope="user:1") == []
    with pytest.raises(InvalidInput):
        memory.add("just one string", scope="user:1")  # type: ignore[arg-type]


def test_a_chat_model_extracts_in_one_call(memory: Memory) -> None:
    model = ScriptedModel([json.dumps({"memories": [
        {"text": "Lives in Porto", "kind": "fact"},
        {"text": "Prefers invoices by email", "kind": "preference", "key": "contact_channel"},
    ]})])
    done = memory.add(CONVERSATION, scope="user:2", model=model)
    assert [r.text for r in done] == ["Lives in Porto", "Prefers invoices by email"]
    assert len(model.requests) == 1  # nothing similar was stored yet: no consolidation call
    prompt = model.requests[0]["messages"][0]["content"]
    assert "I live in Porto" in prompt and "I am an assistant" not in prompt  # only the user's messages
    unreadable = ScriptedModel(["I would remember that they live in Porto."])
    fallback = memory.add(CONVERSATION, scope="user:3", model=unreadable)
    assert [r.text for r in fallback] == KEPT


def test_add_over_mcp(memory: Memory) -> None:
    async def main() -> None:
        async with Client(build_mcp_server(lambda _r: memory, scope="user:me")) as client:
            result = await client.call_tool("remember_conversation", {"messages": [
                "I live in Porto and I work at a bakery.", "Please email me the invoices."]})
            assert not result.is_error
            kept = result.structured_content["result"]
            assert [k["text"] for k in kept] == KEPT
            outside = await client.call_tool("remember_conversation", {"messages": ["I live in Oslo."], "scope": "x"})
            assert outside.is_error
    anyio.run(main)
    assert sorted(m.text for m in memory.long_term.all(scope="user:me")) == KEPT


@pytest.mark.slow  # a real `fourfold serve` process
def test_add_through_a_real_service_and_the_cli(tmp_path: Path) -> None:
    with LiveService(tmp_path / "served", keys={"acme": 1}) as live:
        http = httpx.Client(base_url=f"{live.url}/v1", headers=live.headers("acme"))
        r = http.post("/memories/add", json={"messages": CONVERSATION, "scope": "user:1"})
        assert r.status_code == 201 and [x["text"] for x in r.json()["results"]] == KEPT
        assert http.post("/memories/add", json={"messages": "not a list"}).status_code == 422
        http.close()
        from fourfold.remote import connect

        with connect(live.url, api_key=live.keys["acme"][0]) as remote:
            again = remote.add(["From now on, text me instead of email."], scope="user:1")
            assert again[0].supersedes and again[0].created
    proc = subprocess.run(
        [sys.executable, "-m", "fourfold.cli", "--data-dir", str(tmp_path / "cli"), "--embedder", "hash", "--json",
         "add", "--scope", "user:9"],
        input=json.dumps(CONVERSATION), capture_output=True, text=True, timeout=120, env=_offline_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert [r["text"] for r in json.loads(proc.stdout)] == KEPT
    plain = subprocess.run(
        [sys.executable, "-m", "fourfold.cli", "--data-dir", str(tmp_path / "cli"), "--embedder", "hash", "add", "-",
         "--scope", "user:9"],
        input="I speak Portuguese and English.\nhow are you?\n", capture_output=True, text=True, timeout=120,
        env=_offline_env(),
    )
    assert plain.returncode == 0, plain.stderr
    assert "User said: I speak Portuguese and English." in plain.stdout


def _offline_env() -> dict[str, str]:
    import os

    return {**os.environ, "ANTHROPIC_API_KEY": "", "FOURFOLD_MODEL": "offline"}
