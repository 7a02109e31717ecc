"""Strategies: pure functions from a message list to the message list sent on the next call.

Every strategy keeps the system messages and the first user message (the task), drops only
whole turn groups (a tool call never loses its result), and starts what it keeps so that
roles still alternate. Input lists and messages are never mutated.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fourfold.errors import InvalidInput
from fourfold.models.base import Message
from fourfold.shortterm.messages import (
    Split,
    flatten,
    group_turns,
    is_plain_user,
    split,
    valid_cuts,
)
from fourfold.shortterm.tokens import EstimateCounter, TokenCounter

__all__ = ["TRUNCATION_MARKER", "Pipeline", "SlidingWindow", "Strategy", "TokenBudget"]

#: Appended where `TokenBudget` cut a text; `{n}` is the number of characters removed.
TRUNCATION_MARKER = "…[truncated {n} chars to fit the token budget]"

StrategyFn = Callable[[Sequence[Message]], list[Message]]


class Strategy(ABC):
    """A pure transformation of the message list; subclasses implement `__call__`."""

    @abstractmethod
    def __call__(self, messages: Sequence[Message]) -> list[Message]:
        """The messages to send, derived from `messages` without mutating them."""


class Pipeline(Strategy):
    """Apply strategies left to right, e.g. Pipeline(Summarize(...), TokenBudget(...))."""

    def __init__(self, *steps: StrategyFn) -> None:
        self.steps = steps

    def __call__(self, messages: Sequence[Message]) -> list[Message]:
        out = list(messages)
        for step in self.steps:
            out = step(out)
        return out


def render(parts: Split, start: int) -> list[Message]:
    """System messages, the pinned head, and the body groups from `start` on."""
    head = [parts.head] if parts.head is not None else []
    return [*parts.system, *head, *flatten(parts.body[start:])]


def cuts_of(parts: Split) -> list[int]:
    return valid_cuts(parts.body, after_user=parts.head is not None)


def split_tail(
    messages: Sequence[Message], tail: int, system: tuple[Message, ...] | None = None
) -> tuple[Split, bool]:
    """`split` of the system messages, the head, and only about the last `tail` messages.

    The tail starts at an assistant or plain user message: such a message starts a turn
    group whatever came before, so the tail's groups are exactly the last groups of the
    whole body. The flag says whether the tail reaches back to the start of the body.
    """
    first = next((i for i, m in enumerate(messages) if m.get("role") != "system"), len(messages))
    head_at = first if first < len(messages) and is_plain_user(messages[first]) else None
    body_from = first + 1 if head_at is not None else first
    j = max(body_from, len(messages) - tail)
    while j > body_from and not _starts_group(messages[j]):
        j -= 1
    if system is None:
        system = tuple([m for m in messages if m.get("role") == "system"])
    rest = [m for m in messages[j:] if m.get("role") != "system"]
    head = messages[head_at] if head_at is not None else None
    return Split(system, head, tuple(group_turns(rest))), j == body_from


def _starts_group(message: Message) -> bool:
    role = message.get("role")
    return role == "assistant" or (role == "user" and is_plain_user(message))


class SlidingWindow(Strategy):
    """Keep the last `last_n` messages after the pinned system messages and first user message.

    The window start moves back to the nearest place a conversation may resume (an assistant
    message, so a tool call keeps its results and roles alternate): it may hold a message or
    two more than `last_n`, never an orphan.
    """

    def __init__(self, last_n: int) -> None:
        if last_n < 1:
            raise InvalidInput(f"last_n must be >= 1, got {last_n}")
        self.last_n = last_n

    def __call__(self, messages: Sequence[Message]) -> list[Message]:
        # Only the tail decides where the window starts: group just enough of it (a long
        # history costs a scan for system messages, not a grouping of every message).
        tail = 2 * self.last_n + 8
        system = tuple([m for m in messages if m.get("role") == "system"])
        while True:
            parts, complete = split_tail(messages, tail, system)
            sizes = [len(g.messages) for g in parts.body]
            start = self._start(sizes, cuts_of(parts))
            if complete:
                return list(messages) if start == 0 else render(parts, start)
            if start > 0:  # a real cut inside the tail: earlier cuts keep even more
                return render(parts, start)
            tail *= 4

    def _start(self, sizes: list[int], cuts: list[int]) -> int:
        """The latest cut that keeps at least `last_n` body messages (0 keeps everything)."""
        kept_after = [0] * (len(sizes) + 1)
        for i in range(len(sizes) - 1, -1, -1):
            kept_after[i] = kept_after[i + 1] + sizes[i]
        best = 0
        for cut in cuts:
            if cut < len(sizes) and kept_after[cut] >= self.last_n:
                best = cut
        return best


class TokenBudget(Strategy):
    """Drop the oldest turn groups until the whole request counts at most `max_tokens`.

    The newest turn is always kept; when even it (with the pinned messages) does not fit,
    its largest texts are cut with a visible TRUNCATION_MARKER. `system` is the Anthropic
    system prompt sent alongside, so the budget covers the whole request. Raises
    InvalidInput when the system messages alone cannot fit.
    """

    def __init__(
        self, max_tokens: int, counter: TokenCounter | None = None, *, system: str = ""
    ) -> None:
        if max_tokens < 1:
            raise InvalidInput(f"max_tokens must be >= 1, got {max_tokens}")
        self.max_tokens = max_tokens
        self.counter: TokenCounter = counter or EstimateCounter()
        self.system = system

    def fits(self, messages: Sequence[Message]) -> bool:
        return self.counter.count(messages, system=self.system) <= self.max_tokens

    def __call__(self, messages: Sequence[Message]) -> list[Message]:
        if type(self.counter) is EstimateCounter:
            quick = self._tail_fit(messages, self.counter)
            if quick is not None:
                return quick
        if self.fits(messages):
            return list(messages)
        parts = split(messages)
        cuts = cuts_of(parts)
        # Candidates keep at least the newest group; counts fall as groups drop (monotone).
        keeping = [c for c in cuts if c < len(parts.body)] or [len(parts.body)]
        found = self._first_fit(parts, keeping)
        if found is not None:
            return render(parts, found)
        for start in (keeping[-1], len(parts.body)):
            out = truncate_to_fit(render(parts, start), self.fits)
            if self.fits(out):
                return out
        raise InvalidInput(f"max_tokens={self.max_tokens} cannot hold the system messages")

    def _tail_fit(self, messages: Sequence[Message], counter: EstimateCounter) -> list[Message] | None:
        """The answer from the newest messages alone, when that is certain (additive counts).

        The estimate is a sum over messages, so the earliest cut that fits is found by
        adding groups from the newest backwards; the rest of a long history is never
        counted. None: undecided from the tail (short history, or nothing fits).
        """
        tail = 256
        system = tuple([m for m in messages if m.get("role") == "system"])
        while tail < len(messages):
            parts, complete = split_tail(messages, tail, system)
            if complete:
                return None
            pinned = [*parts.system, *([parts.head] if parts.head is not None else [])]
            used = counter.count(pinned, system=self.system)
            fits_from = len(parts.body)  # the earliest group index whose suffix still fits
            for i in range(len(parts.body) - 1, -1, -1):
                used += sum(counter.count_message(m) for m in parts.body[i].messages)
                if used > self.max_tokens:  # over: so is anything earlier (counts only grow)
                    fitting = [c for c in cuts_of(parts) if fits_from <= c < len(parts.body)]
                    return render(parts, fitting[0]) if fitting else None
                fits_from = i
            tail *= 2
        return None

    def _first_fit(self, parts: Split, starts: list[int]) -> int | None:
        """The earliest start whose rendering fits, by binary search."""
        lo, hi, found = 0, len(starts) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.fits(render(parts, starts[mid])):
                found, hi = starts[mid], mid - 1
            else:
                lo = mid + 1
        return found


# --- truncation -------------------------------------------------------------------------

#: Where a text lives in a message: ("content",), ("block", i), ("result", i) or
#: ("result_block", i, j) for a text block inside a tool_result.
Slot = tuple[Any, ...]


def text_slots(message: Message) -> list[Slot]:
    """Every place in a message holding text that may be shortened."""
    content = message.get("content")
    if isinstance(content, str):
        return [("content",)]
    if not isinstance(content, Sequence):
        return []
    slots: list[Slot] = []
    for i, block in enumerate(content):
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            slots.append(("block", i))
        elif block.get("type") == "tool_result":
            inner = block.get("content")
            if isinstance(inner, str):
                slots.append(("result", i))
            elif isinstance(inner, Sequence):
                slots += [
                    ("result_block", i, j)
                    for j, b in enumerate(inner)
                    if isinstance(b, Mapping) and b.get("type") == "text"
                ]
    return slots


def get_text(message: Message, slot: Slot) -> str:
    content = message["content"]
    if slot[0] == "content":
        return str(content)
    if slot[0] == "block":
        return str(content[slot[1]].get("text", ""))
    if slot[0] == "result":
        return str(content[slot[1]]["content"])
    return str(content[slot[1]]["content"][slot[2]].get("text", ""))


def set_text(message: Message, slot: Slot, text: str) -> dict[str, Any]:
    """A copy of `message` with the text at `slot` replaced; the original is untouched."""
    out = dict(message)
    if slot[0] == "content":
        out["content"] = text
        return out
    blocks = list(message["content"])
    block = dict(blocks[slot[1]])
    if slot[0] == "block":
        block["text"] = text
    elif slot[0] == "result":
        block["content"] = text
    else:
        inner = list(block["content"])
        inner[slot[2]] = {**inner[slot[2]], "text": text}
        block["content"] = inner
    blocks[slot[1]] = block
    out["content"] = blocks
    return out


def cut_text(text: str, keep: int) -> str:
    """The first `keep` characters of `text` followed by the truncation marker."""
    return text[:keep] + TRUNCATION_MARKER.format(n=len(text) - keep)


def truncate_to_fit(
    messages: list[Message], fits: Callable[[Sequence[Message]], bool]
) -> list[Message]:
    """Shorten the largest texts first (never system messages), each as little as needed."""
    originals = list(messages)
    sizes = {
        (i, s): len(get_text(m, s))
        for i, m in enumerate(originals)
        if m.get("role") != "system"
        for s in text_slots(m)
    }
    keeps = dict(sizes)
    out = originals
    for target in sorted(sizes, key=lambda k: -sizes[k]):
        if fits(out):
            break
        keeps[target] = _longest_fitting(originals, keeps, target, fits)
        out = _apply(originals, keeps)
    return out


def _longest_fitting(
    originals: list[Message],
    keeps: dict[tuple[int, Slot], int],
    target: tuple[int, Slot],
    fits: Callable[[Sequence[Message]], bool],
) -> int:
    """The most characters of `target` that can stay (0 if none), by binary search."""
    lo, hi, best = 0, keeps[target] - 1, 0
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(_apply(originals, {**keeps, target: mid})):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def _apply(originals: list[Message], keeps: dict[tuple[int, Slot], int]) -> list[Message]:
    out = list(originals)
    for (i, slot), keep in keeps.items():
        text = get_text(originals[i], slot)
        if keep < len(text):
            out[i] = set_text(out[i], slot, cut_text(text, keep))
    return out
