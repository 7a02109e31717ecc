"""The OpenAI Agents SDK over fourfold: a `Session` kept in a short-term thread, and recall /
remember as function tools over a scope's long-term memory.

    from agents import Agent, Runner
    from fourfold.integrations.openai_agents import FourfoldSession, memory_tools

    session = FourfoldSession("user:ann", memory)
    agent = Agent(name="Assistant", tools=memory_tools(memory, scope="user:ann"))
    await Runner.run(agent, "I'm vegetarian", session=session)

The session's id is the thread's scope; `Identity(user_id=..., run_id=...).scope`
(`fourfold.compat.identity`) names one the way Mem0's ids do. Items are stored as the SDK
gives them (JSON), with the text of messages redacted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from fourfold.integrations._require import require_framework

require_framework("agents", "openai-agents", what="fourfold.integrations.openai_agents")

from agents import FunctionTool, function_tool  # noqa: E402
from agents.items import TResponseInputItem  # noqa: E402
from agents.memory import SessionABC, SessionSettings  # noqa: E402
from agents.memory.session_settings import resolve_session_limit  # noqa: E402

from fourfold.errors import InvalidInput  # noqa: E402
from fourfold.integrations.threads import ThreadLog  # noqa: E402
from fourfold.memory import Memory  # noqa: E402

__all__ = ["FourfoldSession", "memory_tools"]


class FourfoldSession(SessionABC):
    """An Agents SDK session whose items live in the thread of the scope `session_id`."""

    def __init__(self, session_id: str, memory: Memory, *, session_settings: SessionSettings | None = None) -> None:
        self.session_id = session_id
        self.session_settings = session_settings
        self.thread = ThreadLog(memory, session_id)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The items, oldest first; with `limit` (or the settings' limit), the newest that many."""
        found = await asyncio.to_thread(self.thread.read, resolve_session_limit(limit, self.session_settings))
        return [_item(raw) for raw in found]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        await asyncio.to_thread(self.thread.extend, [dict(item) for item in items])

    async def pop_item(self) -> TResponseInputItem | None:
        raw = await asyncio.to_thread(self.thread.pop)
        return None if raw is None else _item(raw)

    async def clear_session(self) -> None:
        await asyncio.to_thread(self.thread.clear)


def memory_tools(memory: Memory, *, scope: str, k: int = 5) -> list[FunctionTool]:
    """`recall` and `remember` as function tools over one scope's long-term memory."""

    async def recall(query: str) -> str:
        """Search what is remembered about the user for what helps with this request.

        Args:
            query: What to look for, in a few words.
        """
        found = await asyncio.to_thread(memory.long_term.recall, query, scope=scope, k=k)
        return _lines([r.text for r in found]) or "Nothing relevant is remembered."

    async def remember(fact: str) -> str:
        """Keep a lasting fact or preference about the user for later conversations.

        Args:
            fact: One self-contained sentence, e.g. "Ann is vegetarian".
        """
        try:
            kept = await asyncio.to_thread(memory.long_term.remember, fact, scope=scope)
        except InvalidInput as exc:  # the model learns why, and may phrase it again
            return f"Not remembered: {exc}"
        return "Remembered." if kept.created else "Already remembered."

    return [function_tool(recall), function_tool(remember)]


def _item(raw: dict[str, Any]) -> TResponseInputItem:
    return raw  # type: ignore[return-value]  # stored as the SDK gave it: one of its input item shapes


def _lines(texts: Sequence[str]) -> str:
    return "\n".join(f"- {t}" for t in texts)
