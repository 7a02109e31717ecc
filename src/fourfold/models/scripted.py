"""A scripted chat model for tests: replies from a list, records what it was sent."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fourfold.errors import ModelError
from fourfold.models.base import ChatModel, ChatRequest, ChatResponse, Message

__all__ = ["Responder", "ScriptedModel"]

#: Computes a reply from (messages, system, tools).
Responder = Callable[[Sequence[Message], str, Sequence[Mapping[str, Any]]], ChatResponse]


class ScriptedModel(ChatModel):
    """Returns the scripted replies in order (or asks `script` if it is a callable).

    Every request is recorded in `requests` as {"messages", "system", "tools",
    "max_tokens"}, deep-copied so later changes to the caller's list do not rewrite
    history. A plain string in the script is shorthand for `ChatResponse(text=...)`.
    It stands in for an LLM in tests, so `is_llm` defaults to True.
    """

    def __init__(
        self,
        script: Sequence[ChatResponse | str] | Responder,
        *,
        name: str = "scripted",
        is_llm: bool = True,
    ) -> None:
        self.name = name
        self.is_llm = is_llm
        self._responder: Responder | None = None
        self._replies: list[ChatResponse] = []
        if callable(script):
            self._responder = script
        else:
            self._replies = [
                r if isinstance(r, ChatResponse) else ChatResponse(text=r) for r in script
            ]
        self._next = 0
        self.requests: list[dict[str, Any]] = []

    @property
    def remaining(self) -> int:
        """Scripted replies not yet used (0 for a callable script)."""
        return len(self._replies) - self._next

    def complete(self, request: ChatRequest) -> ChatResponse:
        messages, system, tools, max_tokens = request
        self.requests.append(
            {
                "messages": copy.deepcopy([dict(m) for m in messages]),
                "system": system,
                "tools": copy.deepcopy([dict(t) for t in tools]),
                "max_tokens": max_tokens,
            }
        )
        if self._responder is not None:
            return self._responder(messages, system, tools)
        if self._next >= len(self._replies):
            raise ModelError(
                f"ScriptedModel {self.name!r} ran out of replies after {len(self._replies)} "
                f"(request {len(self.requests)} has no scripted answer)"
            )
        reply = self._replies[self._next]
        self._next += 1
        return reply
