"""Compaction: the `Summarize` strategy folds old turns into one summary message, amortized.

High/low-water rule: nothing happens while the kept window is at or under the trigger
(`trigger_tokens` and/or `trigger_turns`, turns meaning messages; the tokens are those of the
whole request: system messages, the system prompt given as `system=`, and the messages).
When it crosses, the
oldest turn groups are folded, together with the previous summary, into a new summary in
ONE summarizer call, cutting the window down to `low_water` times the trigger. A call must
fold at least half of the gap between the two marks, so the summarizer runs at most about
2 * history / (trigger * (1 - low_water)) times over a whole conversation.

Pinning (invariant "the task is never lost"): the first user message is kept verbatim,
inside the summary message after the summary text, when it is plain text and counts at
most `pin_first_max_tokens`; otherwise it is folded into the summary like any old turn.

Pure: the result depends only on the input and the summarizer. Feed the result back as the
history (like `messages = compact(messages)`), or pass the full history every time: the
compaction points are replayed deterministically and earlier summaries come from a cache,
so the summarizer is not called again for them.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fourfold.errors import InvalidInput
from fourfold.models.base import Message
from fourfold.shortterm.messages import (
    SUMMARY_PREFIX,
    TurnGroup,
    content_blocks,
    flatten,
    group_turns,
    is_summary,
    split,
    valid_cuts,
)
from fourfold.shortterm.strategies import Strategy
from fourfold.shortterm.summarizers import Summarizer
from fourfold.shortterm.tokens import EstimateCounter, TokenCounter

__all__ = ["Summarize", "summary_message", "summary_text"]

#: Ends the summary text when the original request follows verbatim in the same message.
PINNED_NOTE = "[The conversation began with this request:]"


def summary_message(summary: str, pinned: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The user message holding a summary, then the pinned first request's blocks."""
    text = f"{SUMMARY_PREFIX}\n{summary}".rstrip()
    if pinned:
        text = f"{text}\n\n{PINNED_NOTE}"
    return {"role": "user", "content": [{"type": "text", "text": text}, *pinned]}


def summary_text(message: Message) -> str:
    """The summary inside a summary message, without the prefix and the pinned note."""
    text = str(content_blocks(message)[0].get("text", ""))
    return text.removeprefix(SUMMARY_PREFIX).removesuffix(PINNED_NOTE).strip()


@dataclass(frozen=True, slots=True)
class _Context:
    """What a call works on: pinned parts and the foldable groups."""

    system: tuple[Message, ...]
    head: Message | None  # the pinned first request, before any summary exists
    pinned: tuple[Mapping[str, Any], ...]  # its blocks, carried inside the summary message
    body: tuple[TurnGroup, ...]
    cuts: tuple[int, ...]
    prompt: str  # the system prompt sent alongside: it counts toward the trigger


@dataclass(frozen=True, slots=True)
class _State:
    summary: str | None
    start: int


def _make(
    system: tuple[Message, ...],
    head: Message | None,
    pinned: tuple[Mapping[str, Any], ...],
    body: tuple[TurnGroup, ...],
    prompt: str,
) -> _Context:
    # Whatever is kept follows a user message (the summary), so it starts with an assistant.
    cuts = tuple(valid_cuts(body, after_user=True))
    return _Context(system, head, pinned, body, cuts, prompt)


class Summarize(Strategy):
    """Fold old turns into a summary when the window crosses its trigger (see module doc).

    Guarantees: at or under the trigger (counting the system prompt, `system=` at the call,
    else the one given here) the input is returned unchanged and the summarizer is not
    called. Past it, the result is the system messages (first, verbatim), then ONE summary
    message (`is_summary`; the task pinned verbatim after the summary text, or folded into
    it), then the newest messages verbatim: at least `keep_recent` of them and at least one
    turn, starting with an assistant message. It never cuts text and never enforces a hard
    limit: put a TokenBudget after it for that. Errors are the summarizer's (e.g.
    ModelError); InvalidInput for bad options.
    """

    def __init__(
        self,
        summarizer: Summarizer,
        *,
        trigger_tokens: int | None = None,
        trigger_turns: int | None = None,
        keep_recent: int = 4,
        low_water: float = 0.5,
        counter: TokenCounter | None = None,
        pin_first_max_tokens: int = 1000,
        cache_size: int = 256,
        system: str = "",
    ) -> None:
        if trigger_tokens is None and trigger_turns is None:
            raise InvalidInput("Summarize needs trigger_tokens or trigger_turns")
        if not 0 < low_water < 1:
            raise InvalidInput(f"low_water must be between 0 and 1, got {low_water}")
        if keep_recent < 0:
            raise InvalidInput(f"keep_recent must be >= 0, got {keep_recent}")
        self.summarizer = summarizer
        self.trigger_tokens = trigger_tokens
        self.trigger_turns = trigger_turns
        self.keep_recent = keep_recent
        self.low_water = low_water
        self.counter: TokenCounter = counter or EstimateCounter()
        self.pin_first_max_tokens = pin_first_max_tokens
        self.cache_size = cache_size
        self.system = system
        self.summarizer_calls = 0
        self._cache: OrderedDict[str, str] = OrderedDict()

    def __call__(self, messages: Sequence[Message], *, system: str | None = None) -> list[Message]:
        ctx, previous = self._context(messages, self.system if system is None else system)
        state = self._replay(ctx, _State(previous, 0))
        if state.summary is None or (state.start == 0 and state.summary == previous):
            return list(messages)
        kept = flatten(ctx.body[state.start :])
        return [*ctx.system, summary_message(state.summary, ctx.pinned), *kept]

    # --- reading the input --------------------------------------------------------------

    def _context(self, messages: Sequence[Message], prompt: str) -> tuple[_Context, str | None]:
        """Split the input; an existing summary message becomes the previous summary."""
        parts = split(messages)
        head, body = parts.head, parts.body
        if head is not None and is_summary(head):
            pinned = tuple(content_blocks(head)[1:])
            return _make(parts.system, None, pinned, body, prompt), summary_text(head)
        if head is not None and self._pinnable(head):
            return _make(parts.system, head, tuple(content_blocks(head)), body, prompt), None
        groups = (*group_turns([head]), *body) if head is not None else body
        return _make(parts.system, None, (), groups, prompt), None

    def _pinnable(self, head: Message) -> bool:
        """Plain text and small: kept verbatim rather than folded."""
        if any(b.get("type") != "text" for b in content_blocks(head)):
            return False
        return self.counter.count([head]) <= self.pin_first_max_tokens

    # --- the high/low-water replay ------------------------------------------------------

    def _window(self, ctx: _Context, summary: str | None, start: int, end: int) -> list[Message]:
        """The messages that would be sent if the body ended at `end`."""
        head: list[Message]
        if summary is not None:
            head = [summary_message(summary, ctx.pinned)]
        else:
            head = [ctx.head] if ctx.head is not None else []
        return [*ctx.system, *head, *flatten(ctx.body[start:end])]

    def _measure(self, ctx: _Context, window: list[Message]) -> tuple[int, int]:
        """(tokens of the request, turns) of a window; turns are the non-system messages."""
        counted = self.trigger_tokens is not None
        tokens = self.counter.count(window, system=ctx.prompt) if counted else 0
        return tokens, sum(1 for m in window if m.get("role") != "system")

    def _over(self, ctx: _Context, window: list[Message], factor: float = 1.0) -> bool:
        tokens, turns = self._measure(ctx, window)
        if self.trigger_tokens is not None and tokens > self.trigger_tokens * factor:
            return True
        return self.trigger_turns is not None and turns > self.trigger_turns * factor

    def _replay(self, ctx: _Context, state: _State) -> _State:
        """Walk the body as if it had grown one group at a time, folding at each crossing."""
        end = self._first_over(ctx, state, 1)
        while end is not None:
            start = self._low_water_start(ctx, state, end)
            if start is not None and self._worth_folding(ctx, state.start, start):
                old = flatten(ctx.body[state.start : start])
                state = _State(self._summarize(old, state.summary), start)
            end = self._first_over(ctx, state, end + 1)
        return state

    def _first_over(self, ctx: _Context, state: _State, lo: int) -> int | None:
        """The smallest end >= lo whose window is over the trigger (binary search)."""
        hi, found = len(ctx.body), None
        while lo <= hi:
            mid = (lo + hi) // 2
            if self._over(ctx, self._window(ctx, state.summary, state.start, mid)):
                found, hi = mid, mid - 1
            else:
                lo = mid + 1
        return found

    def _low_water_start(self, ctx: _Context, state: _State, end: int) -> int | None:
        """The first cut leaving the window under the low-water mark, or the latest allowed."""
        sizes = [len(g.messages) for g in ctx.body]
        # At least one group stays after the summary, so the next user message cannot follow it.
        allowed = [
            c
            for c in ctx.cuts
            if state.start < c <= end and c < len(sizes) and sum(sizes[c:end]) >= self.keep_recent
        ]
        for cut in allowed:
            window = self._window(ctx, state.summary or "", cut, end)
            if not self._over(ctx, window, self.low_water):
                return cut
        return allowed[-1] if allowed else None

    def _worth_folding(self, ctx: _Context, start: int, new_start: int) -> bool:
        """A fold must cover half the gap between the marks, so calls stay rare."""
        old = flatten(ctx.body[start:new_start])
        gap = (1 - self.low_water) / 2
        if self.trigger_tokens is not None and self.counter.count(old) >= self.trigger_tokens * gap:
            return True
        return self.trigger_turns is not None and len(old) >= self.trigger_turns * gap

    def _summarize(self, old: list[Message], previous: str | None) -> str:
        """One summarizer call, unless this exact fold was computed before."""
        key = hashlib.sha256(
            json.dumps([previous, old], sort_keys=True, default=str).encode()
        ).hexdigest()
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        self.summarizer_calls += 1
        summary = self.summarizer.summarize(old, previous_summary=previous)
        self._cache[key] = summary
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return summary
