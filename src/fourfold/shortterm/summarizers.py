"""Summarizers: fold old turns and the previous summary into one bounded text."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from fourfold.errors import ModelError
from fourfold.models.base import ChatModel, Message
from fourfold.shortterm.messages import content_blocks, is_plain_user
from fourfold.text.lines import one_line
from fourfold.text.tokenize import STOPWORDS

__all__ = ["Event", "ExtractiveSummarizer", "ModelSummarizer", "Summarizer", "events"]


@runtime_checkable
class Summarizer(Protocol):
    """Turns old messages, plus the summary they follow, into one updated summary."""

    def summarize(self, messages: Sequence[Message], *, previous_summary: str | None) -> str: ...


@dataclass(frozen=True, slots=True)
class Event:
    """One readable piece of a transcript: a text, a tool call, or a call with its result."""

    role: str
    kind: Literal["text", "call", "result"]
    text: str


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def render_call(name: str, arguments: Any) -> str:
    """`lookup_policy(refund_window_days)` for one argument, `f(a=1, b=2)` for several."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return f"{name}({one_line(arguments, 120)})"
    if isinstance(arguments, Mapping) and len(arguments) == 1:
        return f"{name}({one_line(_value(next(iter(arguments.values()))), 120)})"
    if isinstance(arguments, Mapping):
        args = ", ".join(f"{k}={_value(v)}" for k, v in arguments.items())
        return f"{name}({one_line(args, 120)})"
    return f"{name}({one_line(_value(arguments), 120)})"


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    return "" if content is None else _value(content)


def _calls(message: Message) -> list[tuple[str, str]]:
    """(id, rendered call) for each tool call in a message, both shapes."""
    out = [
        (str(b.get("id")), render_call(str(b.get("name")), b.get("input", {})))
        for b in content_blocks(message)
        if b.get("type") == "tool_use"
    ]
    for call in message.get("tool_calls") or ():
        fn = call.get("function", {})
        out.append((str(call.get("id")), render_call(str(fn.get("name")), fn.get("arguments"))))
    return out


def _results(message: Message) -> list[tuple[str, str]]:
    """(call id, result text) for each tool result in a message, both shapes."""
    if message.get("role") == "tool":
        return [(str(message.get("tool_call_id")), _result_text(message.get("content")))]
    return [
        (str(b.get("tool_use_id")), _result_text(b.get("content")))
        for b in content_blocks(message)
        if b.get("type") == "tool_result"
    ]


def events(messages: Sequence[Message], *, clip: int = 2000) -> list[Event]:
    """The transcript of `messages` as events; a tool result names the call it answers."""
    out: list[Event] = []
    calls: dict[str, str] = {}
    for message in messages:
        role = str(message.get("role", "user"))
        for block in content_blocks(message):
            if block.get("type") == "text" and str(block.get("text", "")).strip():
                out.append(Event(role, "text", one_line(str(block["text"]), clip)))
        for call_id, call in _calls(message):
            calls[call_id] = call
            out.append(Event(role, "call", call))
        for call_id, result in _results(message):
            call = calls.get(call_id, f"tool call {call_id}")
            out.append(Event(role, "result", f"{call} -> {one_line(result, clip)}"))
    return out


# --- extractive -------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_FACT = re.compile(r"\d|[$€£%#@]")
_DECISION = re.compile(
    r"\b(decid\w*|agree\w*|will|resolv\w*|refund\w*|fix\w*|approv\w*|confirm\w*|chose|"
    r"escalat\w*|cancel\w*)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9_]{4,}")
#: Lines are dropped in this order (then oldest first) when the summary is over its bound.
_DROP_ORDER = ("Fact", "Tool", "Open question", "Decision")


def _keywords(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def _answered(question: str, later: Sequence[str]) -> bool:
    """A question counts as answered when a later text shares half its content words."""
    words = _keywords(question)
    need = max(1, len(words) // 2)
    return any(len(words & _keywords(text)) >= need for text in later)


def _tag(line: str) -> str:
    head = line.split(" (", 1)[0].split(":", 1)[0]
    return head if head in (*_DROP_ORDER, "Request") else "Fact"


class ExtractiveSummarizer:
    """Offline, deterministic: keeps decisions, key facts, open questions and tool results.

    Sentences with numbers, ids or amounts are facts; sentences with decision words
    (decided, agreed, will, resolved, refund, fixed...) are decisions; questions nobody
    answered later stay open; each tool call becomes `name(args) -> result`. The previous
    summary comes first; the text never exceeds `max_chars`, dropping facts before decisions.
    """

    def __init__(self, *, max_chars: int = 1500, max_line_chars: int = 200) -> None:
        self.max_chars = max_chars
        self.max_line_chars = max_line_chars

    def summarize(self, messages: Sequence[Message], *, previous_summary: str | None) -> str:
        """Fold `messages` into `previous_summary`, bounded by `max_chars`."""
        evs = events(messages, clip=self.max_line_chars)
        texts = [e.text for e in evs if e.kind in ("text", "result")]
        lines = self._previous(previous_summary, texts)
        if previous_summary is None and messages and is_plain_user(messages[0]):
            first = " ".join(e.text for e in events(messages[:1]))
            lines.insert(0, f"Request: {one_line(first, 300)}")
        for line in self._extract(evs):
            if line not in lines:
                lines.append(line)
        return self._bound(lines)

    def _previous(self, summary: str | None, texts: Sequence[str]) -> list[str]:
        """The previous summary's lines, minus open questions answered since."""
        lines = [line for line in (summary or "").splitlines() if line.strip()]
        return [
            line
            for line in lines
            if not (line.startswith("Open question") and _answered(line.split("): ", 1)[-1], texts))
        ]

    def _extract(self, evs: Sequence[Event]) -> list[str]:
        out: list[str] = []
        for i, event in enumerate(evs):
            if event.kind == "result":
                out.append(f"Tool: {one_line(event.text, self.max_line_chars)}")
            elif event.kind == "text":
                later = [e.text for e in evs[i + 1 :] if e.role != event.role]
                out += self._sentences(event, later)
        return out

    def _sentences(self, event: Event, later: Sequence[str]) -> list[str]:
        out = []
        for sentence in _SENTENCE.split(event.text):
            sentence = sentence.strip()
            if sentence.endswith("?"):
                tag = "" if _answered(sentence, later) else "Open question"
            elif _DECISION.search(sentence):
                tag = "Decision"
            else:
                tag = "Fact" if _FACT.search(sentence) else ""
            if tag:
                out.append(f"{tag} ({event.role}): {one_line(sentence, self.max_line_chars)}")
        return out

    def _bound(self, lines: list[str]) -> str:
        """Drop lines (least important kind, oldest first) until the text fits."""
        lines = list(lines)
        while len("\n".join(lines)) > self.max_chars and len(lines) > 1:
            victim = next(
                (i for tag in _DROP_ORDER for i, line in enumerate(lines) if _tag(line) == tag),
                len(lines) - 1,
            )
            del lines[victim]
        return "\n".join(lines)[: self.max_chars]


# --- model ------------------------------------------------------------------------------

_INSTRUCTIONS = (
    "You maintain the running summary of a conversation between a user and an AI assistant. "
    "Update the summary with the new turns below. Preserve decisions made, open questions, "
    "and key facts (names, numbers, ids, amounts, dates, tool results). Drop small talk. "
    "Reply with the updated summary only."
)


def transcript(messages: Sequence[Message], *, clip: int = 2000) -> str:
    """A plain-text transcript: `role: text`, `role called f(x)`, `tool result: f(x) -> r`."""
    lines = []
    for e in events(messages, clip=clip):
        if e.kind == "text":
            lines.append(f"{e.role}: {e.text}")
        elif e.kind == "call":
            lines.append(f"{e.role} called {e.text}")
        else:
            lines.append(f"tool result: {e.text}")
    return "\n".join(lines)


class ModelSummarizer:
    """Asks a chat model to update the previous summary with the new turns (one call each)."""

    def __init__(self, model: ChatModel, *, max_tokens: int = 512, clip: int = 2000) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.clip = clip

    def prompt(self, messages: Sequence[Message], *, previous_summary: str | None) -> str:
        """The request text: instructions, the previous summary, the new turns."""
        previous = previous_summary or "(none yet)"
        return (
            f"{_INSTRUCTIONS}\n\n<previous_summary>\n{previous}\n</previous_summary>\n\n"
            f"<new_turns>\n{transcript(messages, clip=self.clip)}\n</new_turns>"
        )

    def summarize(self, messages: Sequence[Message], *, previous_summary: str | None) -> str:
        """The model's updated summary; raises ModelError when it answers with no text."""
        request = {
            "role": "user",
            "content": self.prompt(messages, previous_summary=previous_summary),
        }
        response = self.model.chat([request], max_tokens=self.max_tokens)
        text = response.text.strip()
        if not text:
            raise ModelError(f"{self.model.name} returned an empty summary")
        return text
