"""A scope's short-term thread as a list that frameworks append to and pop from, under its lock.

The session and chat-history adapters keep their messages in the data dir's threads, beside the
support agent's conversations: a returning user continues one, `fourfold export` carries it,
`Memory.forget_scope` erases it, and two processes never interleave one thread. Text is redacted
on the way in, as every thread's is (`fourfold.shortterm.threads`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from fourfold._validate import check_scope
from fourfold.errors import InvalidInput
from fourfold.memory import Memory

__all__ = ["ThreadLog"]


class ThreadLog:
    """The messages of one scope's thread: read, append, pop the newest, clear."""

    def __init__(self, memory: Memory, scope: str) -> None:
        if check_scope(scope) is None:
            raise InvalidInput("a thread needs a scope")
        self.memory = memory
        self.scope = scope

    def read(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The messages, oldest first; with `limit`, the newest `limit` of them."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidInput(f"limit must be a non-negative integer, not {limit!r}")
        messages = [dict(m) for m in self.memory.conversations.load(self.scope).messages]
        return messages if limit is None else messages[len(messages) - limit:] if limit else []

    def extend(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Append messages at the end of the thread."""
        if not messages:
            return
        store = self.memory.conversations
        with store.lock(self.scope).hold():
            thread = store.load(self.scope)
            store.save(replace(thread, messages=(*thread.messages, *(dict(m) for m in messages))))

    def pop(self) -> dict[str, Any] | None:
        """Remove and return the newest message (None on an empty thread)."""
        store = self.memory.conversations
        with store.lock(self.scope).hold():
            thread = store.load(self.scope)
            if not thread.messages:
                return None
            store.save(replace(thread, messages=thread.messages[:-1]))
        return dict(thread.messages[-1])

    def clear(self) -> None:
        """Erase the thread (the scope's long-term memories stay)."""
        store = self.memory.conversations
        with store.lock(self.scope).hold():
            store.delete(self.scope)
