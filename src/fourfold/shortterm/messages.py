"""Message shapes and atomic turn groups: what a strategy may keep or drop as one unit.

Anthropic shape: roles "user"/"assistant", content a string or a list of blocks
(text, tool_use, tool_result). OpenAI shape is accepted too: "system" messages, assistant
messages with `tool_calls`, and "tool" messages answering them by `tool_call_id`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fourfold.models.base import Message

__all__ = [
    "SUMMARY_PREFIX",
    "Split",
    "TurnGroup",
    "content_blocks",
    "flatten",
    "group_turns",
    "is_plain_user",
    "is_summary",
    "is_system",
    "split",
    "text_of",
    "tool_result_ids",
    "tool_use_ids",
    "valid_cuts",
]

#: How a summary message's content starts; `is_summary` looks for it.
SUMMARY_PREFIX = "[Summary of earlier conversation]"


@dataclass(frozen=True, slots=True)
class TurnGroup:
    """Messages kept or dropped together: one message, or an assistant call plus its results."""

    messages: tuple[Message, ...]

    @property
    def starts_with_assistant(self) -> bool:
        return self.messages[0].get("role") == "assistant"

    @property
    def starts_with_plain_user(self) -> bool:
        return is_plain_user(self.messages[0])


@dataclass(frozen=True, slots=True)
class Split:
    """A conversation cut into pinned system messages, the pinned first user message, the rest."""

    system: tuple[Message, ...]
    head: Message | None
    body: tuple[TurnGroup, ...]


def content_blocks(message: Message) -> list[Mapping[str, Any]]:
    """The content as a list of blocks; a string becomes one text block."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, Sequence):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def text_of(message: Message) -> str:
    """The plain text of a message (text blocks only), joined by newlines."""
    parts = [b.get("text", "") for b in content_blocks(message) if b.get("type") == "text"]
    return "\n".join(p for p in parts if isinstance(p, str) and p)


def tool_use_ids(message: Message) -> list[str]:
    """Ids of the tool calls a message makes (Anthropic tool_use blocks or OpenAI tool_calls)."""
    ids = [str(b.get("id")) for b in content_blocks(message) if b.get("type") == "tool_use"]
    calls = message.get("tool_calls") or ()
    ids.extend(str(c.get("id")) for c in calls if isinstance(c, Mapping))
    return ids


def tool_result_ids(message: Message) -> list[str]:
    """Ids of the tool calls a message answers (tool_result blocks or an OpenAI tool message)."""
    if message.get("role") == "tool":
        return [str(message.get("tool_call_id"))]
    blocks = content_blocks(message)
    return [str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]


def is_system(message: Message) -> bool:
    return message.get("role") == "system"


def is_plain_user(message: Message) -> bool:
    """A user message that answers no tool call: the only kind a conversation may start with."""
    return message.get("role") == "user" and not tool_result_ids(message)


def is_summary(message: Message) -> bool:
    """True for the summary message `Summarize` inserts."""
    if message.get("role") != "user":
        return False
    blocks = content_blocks(message)
    if not blocks or blocks[0].get("type") != "text":
        return False
    return str(blocks[0].get("text", "")).startswith(SUMMARY_PREFIX)


def _answers(message: Message, pending: set[str]) -> bool:
    ids = tool_result_ids(message)
    return bool(ids) and any(i in pending for i in ids)


def group_turns(messages: Iterable[Message]) -> list[TurnGroup]:
    """Group messages so a tool call and the messages carrying its results are one unit."""
    groups: list[list[Message]] = []
    pending: set[str] = set()
    for message in messages:
        if groups and pending and _answers(message, pending):
            groups[-1].append(message)
            pending.difference_update(tool_result_ids(message))
            continue
        groups.append([message])
        pending = set(tool_use_ids(message)) if message.get("role") == "assistant" else set()
    return [TurnGroup(tuple(g)) for g in groups]


def split(messages: Sequence[Message]) -> Split:
    """Separate system messages and the first user message from the groups that follow."""
    system = tuple(m for m in messages if is_system(m))
    rest = [m for m in messages if not is_system(m)]
    head = rest[0] if rest and is_plain_user(rest[0]) else None
    body = group_turns(rest[1:] if head is not None else rest)
    return Split(system, head, tuple(body))


def flatten(groups: Iterable[TurnGroup]) -> list[Message]:
    return [m for g in groups for m in g.messages]


def valid_cuts(body: Sequence[TurnGroup], *, after_user: bool) -> list[int]:
    """Indices where the kept part of `body` may start, ascending; always has 0 and len(body).

    After a pinned user message the kept part must start with an assistant message (roles
    alternate); with nothing pinned it must start with a user message that answers no call.
    """

    def ok(group: TurnGroup) -> bool:
        return group.starts_with_assistant if after_user else group.starts_with_plain_user

    inner = [i for i in range(1, len(body)) if ok(body[i])]
    return [0, *inner, len(body)] if body else [0]
