"""A deterministic stand-in for an LLM, so fourfold runs with no key and no network.

It is not a language model and says so in every reply. It does three things, in order:

1. The latest user turn holds tool results: it reports them ("Policy refund_window_days: 30.").
2. A tool takes one enum argument (like `lookup_policy`'s `key`) and the user's message
   names one of the enum values: it calls the tool with that value. A value is named when
   it appears verbatim, or when its words (split on "_", unit words like "mb" dropped,
   plurals folded) are mostly in the message: at least 60% of them and at least two
   (one for one-word values). "refund window" names `refund_window_days`; "support"
   alone does not name `support_hours`. Else, when the message asks a question and a tool
   takes one free-text argument (a search, like `search_policy`'s `query`), it calls that
   tool with the question; a search that found nothing ("NO MATCH...") is not reported.
3. Otherwise it quotes, from the system prompt's data (sections such as "# Known about
   this customer" or "Similar resolved tickets: [...]"), the memory sentence, the
   episode and the documentation sentence that share the most words with the user's
   message. When none shares a word, it quotes the first memories it was given (what
   was recalled, best first), and says it has no relevant context only when it was given none.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from fourfold.models.base import ChatModel, ChatRequest, ChatResponse, Message, ToolCall, Usage
from fourfold.models.content import (
    STOP_WORDS,
    block_text,
    blocks,
    content_words,
    estimate_tokens,
    json_dumps,
    words,
)
from fourfold.serialize import plain
from fourfold.text.lines import SENTENCE_BREAK as _SENTENCE_END

__all__ = ["OFFLINE_LABEL", "OfflineModel"]

OFFLINE_LABEL = "[offline model — not an LLM]"

#: Share of a key's words the message must contain for the key to count as named.
MATCH_THRESHOLD = 0.6

#: Parts of policy keys people do not say ("max_file_upload_mb" is asked as "file upload").
_UNIT_WORDS = frozenset({"mb", "gb", "kb", "ms", "sec", "pct", "num", "id", "usd", "eur"})

#: Section labels that mark episode data rather than memories.
_EPISODE_HINTS = ("ticket", "episode", "previous", "past", "history", "happened", "resolved")

_DOC_HINTS = ("documentation", "docs", "manual", "knowledge base", "reference")
_FAILED_PREFIX = "Previously (failed):"
_PLACEHOLDERS = frozenset({"(none)", "none", "[]", "-"})

_HEADING = re.compile(r"^#{1,6}\s+(.+)$")
_TAG = re.compile(r"^</?[A-Za-z_][\w-]*>$")
_HEADER = re.compile(r"^([A-Za-z][A-Za-z0-9 _'()/-]{0,60}):\s*(.*)$")
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+(.*)$")
_QUOTED = re.compile(r"\"([^\"]+)\"|'([^']+)'")
_DATE_PREFIX = re.compile(r"^\[(\d{4}-\d{2}-\d{2}[^\]]{0,20})\]\s*")

Kind = Literal["memory", "episode", "doc"]

_NO_CONTEXT = "I have no relevant memory or past ticket for that, so I cannot answer it offline."
#: How a search tool answers that it found nothing: not worth reporting.
_NOTHING_FOUND = "NO MATCH"


class OfflineModel(ChatModel):
    """Rule-based replies labelled as offline; same input, same output."""

    name = "fourfold-offline (not an LLM)"
    is_llm = False

    def complete(self, request: ChatRequest) -> ChatResponse:
        messages, system, tools, max_tokens = request
        latest = _latest_user(messages)
        results = [b for b in blocks(latest) if b.get("type") == "tool_result"] if latest else []
        found = [b for b in results if not block_text(b.get("content", "")).strip().startswith(_NOTHING_FOUND)]
        if results and not found:  # only searches that found nothing: answer as without them
            text = _answer_from_context(system, _question_before_tools(messages))
        elif results:
            text = _report_tool_results(messages, found)
            context = _answer_from_context(system, _question_before_tools(messages), recalled=False)
            if not context.endswith(_NO_CONTEXT):
                text += context.removeprefix(OFFLINE_LABEL)
        else:
            question = block_text(latest.get("content", "")) if latest else ""
            call = _choose_tool_call(tools, question, messages)
            if call is not None:
                value = next(iter(call.input.values()))
                reply = f"{OFFLINE_LABEL} Looking up {value} with {call.name}."
                return self._response(reply, messages, system, tools, calls=(call,))
            text = _answer_from_context(system, question)
        if estimate_tokens(text) > max_tokens:
            return self._response(
                text[: max_tokens * 4], messages, system, tools, stop="max_tokens"
            )
        return self._response(text, messages, system, tools)

    def _response(
        self,
        text: str,
        messages: Sequence[Message],
        system: str,
        tools: Sequence[Mapping[str, Any]],
        *,
        calls: tuple[ToolCall, ...] = (),
        stop: Literal["end_turn", "max_tokens"] = "end_turn",
    ) -> ChatResponse:
        prompt = system + json_dumps(plain(list(messages))) + json_dumps(plain(list(tools)))
        return ChatResponse(
            text=text,
            tool_calls=calls,
            stop_reason="tool_use" if calls else stop,
            usage=Usage(input_tokens=estimate_tokens(prompt), output_tokens=estimate_tokens(text)),
            model=self.name,
        )


def _question_before_tools(messages: Sequence[Message]) -> str:
    """The customer's own words of the current turn (the user text before the tool rounds)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            text = block_text(message.get("content", "")).strip()
            if text and not any(b.get("type") == "tool_result" for b in blocks(message)):
                return text
    return ""


def _latest_user(messages: Sequence[Message]) -> Message | None:
    for message in reversed(messages):
        if message.get("role") == "user":
            return message
    return None


# -- 1. reporting tool results ---------------------------------------------------------


def _report_tool_results(messages: Sequence[Message], results: list[Mapping[str, Any]]) -> str:
    calls = {
        str(b.get("id")): b
        for m in messages
        if m.get("role") == "assistant"
        for b in blocks(m)
        if b.get("type") == "tool_use"
    }
    lines = [OFFLINE_LABEL]
    for result in results:
        call = calls.get(str(result.get("tool_use_id")), {})
        name = str(call.get("name", "tool"))
        args = " ".join(str(v) for v in dict(call.get("input") or {}).values())
        # a key names what was looked up; a question (a search's) does not read as a name
        subject = f"{_subject(name)} {args}".strip() if len(args.split()) <= 1 else _subject(name)
        value = block_text(result.get("content", "")).strip().rstrip(".")
        if result.get("is_error"):
            lines.append(f"{subject}: the lookup failed ({value}).")
        else:
            lines.append(f"{subject}: {value}.")
    return " ".join(lines)


def _subject(tool_name: str) -> str:
    """Name what a tool returns, for the reply: "lookup_policy" -> "Policy"."""
    for prefix in ("lookup_", "get_", "fetch_", "read_", "search_", "find_"):
        if tool_name.startswith(prefix) and len(tool_name) > len(prefix):
            tool_name = tool_name[len(prefix) :]
            break
    label = tool_name.replace("_", " ")
    return label[:1].upper() + label[1:]


# -- 2. choosing a tool call -----------------------------------------------------------


def _choose_tool_call(
    tools: Sequence[Mapping[str, Any]], question: str, messages: Sequence[Message]
) -> ToolCall | None:
    asked = set(words(question))
    best: tuple[float, str, str, str] | None = None  # score, tool, argument, value
    for tool in tools:
        enum_arg = _enum_argument(tool)
        if enum_arg is None:
            continue
        argument, values = enum_arg
        for value in values:
            score = _key_score(value, question, asked)
            if score > 0 and (best is None or score > best[0]):
                best = (score, str(tool["name"]), argument, value)
    if best is None:
        best = _search_call(tools, question)
    if best is None:
        return None
    previous_calls = sum(
        1
        for m in messages
        if m.get("role") == "assistant"
        for b in blocks(m)
        if b.get("type") == "tool_use"
    )
    return ToolCall(
        id=f"toolu_offline_{previous_calls + 1}", name=best[1], input={best[2]: best[3]}
    )


def _search_call(tools: Sequence[Mapping[str, Any]], question: str) -> tuple[float, str, str, str] | None:
    """A call of the first tool that takes one free-text argument (a search), with the
    question, when the message asks one."""
    if "?" not in question:
        return None
    for tool in tools:
        schema = tool.get("input_schema") or {}
        properties: Mapping[str, Any] = schema.get("properties") or {}
        required = list(schema.get("required") or ())
        if len(required) == 1 and set(properties) == set(required):
            spec = properties[required[0]]
            if isinstance(spec, Mapping) and spec.get("type") == "string" and "enum" not in spec:
                return 0.0, str(tool["name"]), required[0], question.strip()
    return None


def _enum_argument(tool: Mapping[str, Any]) -> tuple[str, list[str]] | None:
    """The tool's one string-enum argument (preferring `key`), if it needs no other."""
    schema = tool.get("input_schema") or {}
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    names = sorted(properties, key=lambda n: n != "key")
    for name in names:
        enum = properties[name].get("enum") if isinstance(properties[name], Mapping) else None
        if enum and all(isinstance(v, str) for v in enum) and required <= {name}:
            return name, list(enum)
    return None


def _key_score(value: str, question: str, asked: set[str]) -> float:
    """1.0 for a verbatim mention; else the share of the key's words asked, 0 below threshold."""
    if value.lower() in question.lower():
        return 1.0
    key_words = [w for w in words(value.replace("_", " ")) if w not in _UNIT_WORDS | STOP_WORDS]
    if not key_words:
        return 0.0
    hits = sum(1 for w in key_words if w in asked)
    share = hits / len(key_words)
    if share < MATCH_THRESHOLD or hits < min(2, len(key_words)):
        return 0.0
    return share * 0.99  # a verbatim mention always wins


# -- 3. answering from the system prompt's context -------------------------------------


def _answer_from_context(system: str, question: str, *, recalled: bool = True) -> str:
    """Quote the memory, episode and documentation sentences that best overlap the question;
    with `recalled`, the first memories given when none does."""
    asked = content_words(question)
    best: dict[Kind, tuple[int, str]] = {}
    memories: list[tuple[int, int, str]] = []
    for kind, item in _context_items(system):
        # Episodes and memories are quoted whole; documents sentence by sentence.
        pieces = _SENTENCE_END.split(item) if kind == "doc" else [item]
        for piece in pieces:
            piece = piece.strip()
            score = len(content_words(piece) & asked)
            if score and kind == "memory":
                memories.append((-score, len(memories), piece))
            elif score and (kind not in best or score > best[kind][0]):
                best[kind] = (score, piece)
    parts = [OFFLINE_LABEL]
    if recalled and not memories and not best:  # nothing shares a word: what was recalled, best first
        memories = [(0, i, item) for i, (kind, item) in enumerate(_context_items(system)) if kind == "memory"]
    if memories:  # the two best-matching memory sentences, best first
        parts.append("From memory: " + " ".join(_end(m) for _, _, m in sorted(memories)[:2]))
    if "episode" in best:
        parts.append(_episode_sentence(best["episode"][1]))
    if "doc" in best:
        parts.append(f"From the documentation: {_end(best['doc'][1])}")
    if len(parts) == 1:
        parts.append(
            _NO_CONTEXT
        )
    return " ".join(parts)


def _episode_sentence(episode: str) -> str:
    # fourfold renders episodes as "[date] Previously: goal -> actions -> outcome".
    dated = _DATE_PREFIX.match(episode)
    when = f" ({dated.group(1)})" if dated else ""
    episode = episode[dated.end() :] if dated else episode
    if episode.startswith(_FAILED_PREFIX):
        return f"A similar past ticket{when}, which failed: {_end(episode[len(_FAILED_PREFIX) :].strip())}"
    return f"A similar resolved ticket{when}: {_end(episode.removeprefix('Previously:').strip())}"


def _end(sentence: str) -> str:
    return sentence if sentence[-1:] in ".!?" else sentence + "."


def _context_items(system: str) -> list[tuple[Kind, str]]:
    """The data in a system prompt, by kind.

    Data is a value after "Label: ...", or the lines under a bare "Label:" or a
    "# Label" heading (bullets, JSON strings or plain lines) up to a blank line. Prose
    outside such sections (the instructions) and lone <tags> are not data.
    """
    items: list[tuple[Kind, str]] = []
    section: Kind | None = None
    for raw in system.splitlines():
        line = raw.strip()
        if not line:
            section = None
            continue
        if _TAG.match(line):
            continue
        heading = _HEADING.match(line)
        header = _HEADER.match(line)
        if heading:
            section = _kind(heading.group(1))
        elif header:
            kind = _kind(header.group(1))
            rest = header.group(2).strip()
            items.extend((kind, v) for v in _values(rest))
            section = None if rest else kind
        elif section is not None:
            bullet = _BULLET.match(line)
            items.extend((section, v) for v in _values(bullet.group(1) if bullet else line))
    return [(kind, v) for kind, v in items if v not in _PLACEHOLDERS]


def _kind(label: str) -> Kind:
    lowered = label.lower()
    if any(h in lowered for h in _EPISODE_HINTS):
        return "episode"
    if any(h in lowered for h in _DOC_HINTS):
        return "doc"
    return "memory"


def _values(text: str) -> list[str]:
    """Split a list literal ("['a', 'b']", JSON) or quoted strings into items."""
    if text.startswith("["):
        parsed: Any = None
        for parse in (json.loads, ast.literal_eval):  # JSON, or a Python list repr
            try:
                parsed = parse(text)
                break
            except (ValueError, SyntaxError):
                continue
        if isinstance(parsed, list):
            return [_flatten(v) for v in parsed if _flatten(v)]
    if text.startswith('"'):
        try:
            one = json.loads(text)  # fourfold's prompt quotes each item as a JSON string
        except ValueError:
            one = None
        if isinstance(one, str):
            return [one.strip()] if one.strip() else []
    if text[:1] in "\"'":
        quoted = [a or b for a, b in _QUOTED.findall(text)]
        if quoted:
            return quoted
    return [text] if text else []


def _flatten(value: Any) -> str:
    if isinstance(value, Mapping):
        return "; ".join(_flatten(v) for v in value.values() if _flatten(v))
    if isinstance(value, (list, tuple)):
        return "; ".join(_flatten(v) for v in value)
    return "" if value is None else str(value).strip()
