"""The OpenAI Agents SDK session and tools, and LangChain's chat history, over fourfold threads:
an agent run with the SDK's own scripted model, the Session protocol, the pages' examples."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("langchain_core")

from agents import Agent, RunConfig, Runner
from agents.memory import SessionSettings
from agents.testing import ScriptedModel, assistant_message, function_call
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from conftest import OpenMemory
from fourfold.integrations.langchain import FourfoldChatMessageHistory
from fourfold.integrations.openai_agents import FourfoldSession, memory_tools
from fourfold.memory import Memory

DOCS = Path(__file__).resolve().parent.parent / "docs" / "integrations"
NO_TRACES = RunConfig(tracing_disabled=True)


@pytest.fixture
def mem(open_memory: OpenMemory) -> Memory:
    return open_memory()


def _texts(call_input: Any) -> str:
    return repr(call_input)


def test_an_agent_remembers_recalls_and_continues_its_session(mem: Memory) -> None:
    model = ScriptedModel([
        [function_call("remember", {"fact": "Ann is vegetarian"}, call_id="c1")],
        [assistant_message("Noted.")],
        [function_call("recall", {"query": "what does Ann eat"}, call_id="c2")],
        [assistant_message("The mushroom risotto.")],
    ])
    agent = Agent(name="Concierge", model=model, tools=memory_tools(mem, scope="user:ann"))

    async def runs() -> str:
        await Runner.run(agent, "I'm vegetarian.", session=FourfoldSession("user:ann/run:1", mem), run_config=NO_TRACES)
        # another session object over the same thread: what a second process would open
        result = await Runner.run(agent, "What should I order?", session=FourfoldSession("user:ann/run:1", mem),
                                  run_config=NO_TRACES)
        return str(result.final_output)

    assert asyncio.run(runs()) == "The mushroom risotto."
    assert [m.text for m in mem.long_term.all(scope="user:ann")] == ["Ann is vegetarian"]
    second_run = model.calls[2]
    assert "I'm vegetarian." in _texts(second_run.input) and "Noted." in _texts(second_run.input)
    recalled = model.calls[3]
    assert "- Ann is vegetarian" in _texts(recalled.input)
    assert "user:ann/run:1" in mem.conversations.scopes()


def test_the_session_protocol(mem: Memory) -> None:
    session = FourfoldSession("user:bo/run:2", mem)
    items: list[Any] = [{"role": "user", "content": f"message {i}"} for i in range(4)]

    async def scenario() -> list[Any]:
        await session.add_items(items[:3])
        await session.add_items(items[3:])
        every = await session.get_items()
        newest = await session.get_items(limit=2)
        popped = await session.pop_item()
        after_pop = await session.get_items()
        await session.clear_session()
        return [every, newest, popped, after_pop, await session.get_items(), await session.pop_item()]

    every, newest, popped, after_pop, cleared, nothing = asyncio.run(scenario())
    assert every == items and newest == items[2:] and popped == items[3] and after_pop == items[:3]
    assert cleared == [] and nothing is None
    limited = FourfoldSession("user:bo/run:3", mem, session_settings=SessionSettings(limit=1))
    asyncio.run(limited.add_items(items))
    assert asyncio.run(limited.get_items()) == items[3:]


def test_a_session_redacts_message_text_and_leaves_long_term_memory_alone(mem: Memory) -> None:
    session = FourfoldSession("user:cy", mem)
    mem.long_term.remember("Cy prefers email.", scope="user:cy")
    asyncio.run(session.add_items([{"role": "user", "content": "my card is 4111 1111 1111 1111"}]))
    assert asyncio.run(session.get_items()) == [{"role": "user", "content": "my card is [REDACTED:card_number]"}]
    asyncio.run(session.clear_session())
    assert [m.text for m in mem.long_term.all(scope="user:cy")] == ["Cy prefers email."]


def test_remember_tells_the_model_what_it_refused(mem: Memory) -> None:
    model = ScriptedModel([[function_call("remember", {"fact": "thanks!"}, call_id="c1")], [assistant_message("ok")]])
    agent = Agent(name="A", model=model, tools=memory_tools(mem, scope="user:dee"))
    asyncio.run(Runner.run(agent, "thanks!", run_config=NO_TRACES))
    assert "Not remembered: not a durable memory" in _texts(model.calls[1].input)
    assert mem.long_term.all(scope="user:dee") == []


def test_the_chat_history_keeps_every_kind_of_message(mem: Memory) -> None:
    history = FourfoldChatMessageHistory("user:ann/run:r1", mem)
    sent = [HumanMessage("hi, card 4111 1111 1111 1111"),
            AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": 1}, "id": "t1"}]),
            ToolMessage("42", tool_call_id="t1"), SystemMessage("be brief"), AIMessage("done")]
    history.add_messages(sent)
    back = FourfoldChatMessageHistory("user:ann/run:r1", mem).messages
    assert [type(m) for m in back] == [type(m) for m in sent]
    assert back[0].content == "hi, card [REDACTED:card_number]" and back[1:] == sent[1:]
    assert asyncio.run(history.aget_messages()) == back
    asyncio.run(history.aclear())
    assert history.messages == []


def test_a_thread_the_support_agent_wrote_reads_as_langchain_messages(mem: Memory) -> None:
    from fourfold.integrations.threads import ThreadLog

    ThreadLog(mem, "customer:42").extend([{"role": "user", "content": "Where is my refund?"},
                                          {"role": "assistant", "content": "It left on Monday."}])
    assert FourfoldChatMessageHistory("customer:42", mem).messages == [
        HumanMessage("Where is my refund?"), AIMessage("It left on Monday.")]


def _example(page: str, tmp_path: Path) -> list[str]:
    code = re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), flags=re.S)[0]
    ran = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran.stdout.splitlines()


@pytest.mark.slow
def test_the_agents_page_example_runs_as_written(tmp_path: Path) -> None:
    assert _example("openai-agents.md", tmp_path) == ["Try the mushroom risotto.", "8", "['Ann is vegetarian']"]


def test_the_langchain_page_example_runs_as_written(tmp_path: Path) -> None:
    assert _example("langchain.md", tmp_path) == ["Your name is Ann.", "['human', 'ai', 'human', 'ai']"]
