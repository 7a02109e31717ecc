"""LangChain's `BaseChatMessageHistory` over a fourfold short-term thread.

    from fourfold.integrations.langchain import FourfoldChatMessageHistory

    history = FourfoldChatMessageHistory("user:ann/run:r1", memory)
    RunnableWithMessageHistory(chain, lambda session_id: FourfoldChatMessageHistory(session_id, memory))

A message is kept as a chat message (`role`, `content`) with LangChain's own fields beside it, so
the thread reads as any other fourfold conversation, and a thread written by fourfold (the
support agent's) reads back as LangChain messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fourfold.integrations._require import require_framework

require_framework("langchain_core", "langchain", what="fourfold.integrations.langchain")

from langchain_core.chat_history import BaseChatMessageHistory  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    BaseMessage,
    convert_to_messages,
    message_to_dict,
    messages_from_dict,
)

from fourfold.integrations.threads import ThreadLog  # noqa: E402
from fourfold.memory import Memory  # noqa: E402

__all__ = ["FourfoldChatMessageHistory"]

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
_LANGCHAIN = "langchain"  # the message as LangChain serialises it, but for its content


class FourfoldChatMessageHistory(BaseChatMessageHistory):
    """The messages of the thread of the scope `session_id`, as LangChain messages."""

    def __init__(self, session_id: str, memory: Memory) -> None:
        self.session_id = session_id
        self.thread = ThreadLog(memory, session_id)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]  # a property, as LangChain's docs show
        return [_message(raw) for raw in self.thread.read()]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.thread.extend([_stored(m) for m in messages])

    def clear(self) -> None:
        self.thread.clear()


def _stored(message: BaseMessage) -> dict[str, Any]:
    whole = message_to_dict(message)
    content = whole["data"].pop("content")
    return {"role": _ROLES.get(message.type, message.type), "content": content, _LANGCHAIN: whole}


def _message(raw: dict[str, Any]) -> BaseMessage:
    whole = raw.get(_LANGCHAIN)
    if isinstance(whole, dict) and isinstance(whole.get("data"), dict):
        return messages_from_dict([{**whole, "data": {**whole["data"], "content": raw.get("content", "")}}])[0]
    return convert_to_messages([{"role": raw.get("role", "user"), "content": raw.get("content", "")}])[0]
