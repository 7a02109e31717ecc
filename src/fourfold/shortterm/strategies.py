"""Strategies: a `Strategy` turns a message list into the message list sent on the next call.

What every strategy guarantees: the system messages stay first and verbatim, the first user
message (the task) is kept, a tool call and the messages carrying its results are kept or
dropped together, what is kept starts so that roles still alternate, and the input list and
its messages are never mutated. Each strategy's docstring says what it adds.

A strategy is told the request's Anthropic system prompt (`system=`) when it is called, so
the strategies that count tokens bound the whole request, not only the messages. A plain
function of the messages (`StrategyFn`) is accepted wherever a strategy is: `as_strategy`
makes it a `Strategy` that is not told the system prompt.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

from fourfold.errors import BudgetExceeded, InvalidInput
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
from fourfold.shortterm.truncation import TRUNCATION_MARKER, shortest, shrink_to_fit

__all__ = [
    "TRUNCATION_MARKER",
    "Pipeline",
    "SlidingWindow",
    "Strategy",
    "StrategyFn",
    "TokenBudget",
    "as_strategy",
    "run_strategy",
]

#: A plain function of the messages, accepted as a strategy (`as_strategy`).
StrategyFn = Callable[[Sequence[Message]], list[Message]]


class Strategy(ABC):
    """A pure transformation of the message list; subclasses implement `__call__`."""

    @abstractmethod
    def __call__(self, messages: Sequence[Message], *, system: str | None = None) -> list[Message]:
        """The messages to send, derived from `messages` without mutating them.

        `system` is the system prompt sent with them (None: the one the strategy was built
        with, if any); strategies that count tokens count it.
        """


class _Function(Strategy):
    """A plain function as a strategy: it is not told the system prompt."""

    def __init__(self, function: StrategyFn) -> None:
        self.function = function

    def __call__(self, messages: Sequence[Message], *, system: str | None = None) -> list[Message]:
        return self.function(messages)


def as_strategy(step: Strategy | StrategyFn) -> Strategy:
    """`step` as a `Strategy` (a plain function becomes one that ignores the system prompt)."""
    return step if isinstance(step, Strategy) else _Function(step)


def run_strategy(
    step: Strategy | StrategyFn, messages: Sequence[Message], *, system: str | None = None
) -> list[Message]:
    """Apply one strategy, or plain function, telling it the system prompt."""
    return as_strategy(step)(messages, system=system)


class Pipeline(Strategy):
    """Apply strategies left to right, e.g. Pipeline(Summarize(...), TokenBudget(...)).

    Every step is told the same system prompt (a plain function is not told it).
    """

    def __init__(self, *steps: Strategy | StrategyFn) -> None:
        self.steps = tuple(as_strategy(step) for step in steps)

    def __call__(self, messages: Sequence[Message], *, system: str | None = None) -> list[Message]:
        out = list(messages)
        for step in self.steps:
            out = step(out, system=system)
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

    Guarantees: every message it returns is an input message, verbatim (nothing is marked or
    cut); the system messages and the first user message are kept; so are at least the last
    `last_n` other messages (all of them when there are fewer). The window start moves back to
    the nearest place a conversation may resume (an assistant message, so a tool call keeps
    its results and roles alternate): it may hold a message or two more than `last_n`, never
    an orphan. It counts messages, not tokens, so the system prompt plays no part. It never
    raises once built (InvalidInput for `last_n` < 1).
    """

    def __init__(self, last_n: int) -> None:
        if last_n < 1:
            raise InvalidInput(f"last_n must be >= 1, got {last_n}")
        self.last_n = last_n

    def __call__(self, messages: Sequence[Message], *, system: str | None = None) -> list[Message]:
        # Only the tail decides where the window starts: group just enough of it (a long
        # history costs a scan for system messages, not a grouping of every message).
        tail = 2 * self.last_n + 8
        pinned = tuple([m for m in messages if m.get("role") == "system"])
        while True:
            parts, complete = split_tail(messages, tail, pinned)
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
    """Drop the oldest turns, then cut long texts, until the whole request fits `max_tokens`.

    The whole request is the messages plus the system prompt (`system=` at the call, else the
    one given here), as `counter` counts them. Guarantees, for every call that returns:

    - it fits: `counter.count(out, system=system) <= max_tokens`;
    - the system messages are first and verbatim; they are never cut;
    - the first user message (the task) and the newest turn are kept. The newest turn is
      everything from the last place the conversation may resume (the last assistant
      message, with the tool results and the user message after it);
    - what is dropped is the oldest whole turns after the task, as few as fit the budget;
      a tool call is never kept without its results;
    - a message the budget cannot hold whole is kept shortened, never dropped: its longest
      texts and tool results are cut, each ending in TRUNCATION_MARKER; ids, names and keys
      stay, so tool pairs stay valid. A summary message keeps its label (`is_summary` stays
      True). Every other message is verbatim;
    - tool calls (tool_use blocks, OpenAI tool_calls) are always verbatim: a call is the
      record of what the model did, and a cut one reads as an action it never took.

    Raises BudgetExceeded (an InvalidInput) when even the smallest acceptable request is
    over `max_tokens`: the system messages, the task and the newest turn, every text and
    tool result cut down to its marker, every tool call whole. The error names the budget
    and that smallest size (`.max_tokens`, `.smallest`). Nothing is dropped or replaced
    silently instead: the newest turn is what the model must answer.
    """

    def __init__(
        self, max_tokens: int, counter: TokenCounter | None = None, *, system: str = ""
    ) -> None:
        if max_tokens < 1:
            raise InvalidInput(f"max_tokens must be >= 1, got {max_tokens}")
        self.max_tokens = max_tokens
        self.counter: TokenCounter = counter or EstimateCounter()
        self.system = system

    def fits(self, messages: Sequence[Message], *, system: str | None = None) -> bool:
        """Whether `messages`, sent with `system` (default: this budget's), are within budget."""
        prompt = self.system if system is None else system
        return self.counter.count(messages, system=prompt) <= self.max_tokens

    def __call__(self, messages: Sequence[Message], *, system: str | None = None) -> list[Message]:
        prompt = self.system if system is None else system
        if type(self.counter) is EstimateCounter:
            quick = self._tail_fit(messages, self.counter, prompt)
            if quick is not None:
                return quick
        if self.fits(messages, system=prompt):
            return list(messages)
        parts = split(messages)
        # Candidates keep at least the newest turn; counts fall as turns drop (monotone).
        keeping = [c for c in cuts_of(parts) if c < len(parts.body)] or [len(parts.body)]
        found = self._first_fit(parts, keeping, prompt)
        if found is not None:
            return render(parts, found)
        return self._shortened(render(parts, keeping[-1]), prompt)

    def _shortened(self, present: list[Message], prompt: str) -> list[Message]:
        """The pinned messages and the newest turn with long strings cut, or BudgetExceeded."""
        smallest = self.counter.count(shortest(present), system=prompt)
        if smallest > self.max_tokens:
            raise BudgetExceeded(
                f"max_tokens={self.max_tokens} cannot hold the newest turn: the smallest acceptable "
                f"request (system prompt and messages, the first request and the newest turn, every "
                f"text and tool result cut to its marker, tool calls whole) counts {smallest} tokens",
                max_tokens=self.max_tokens,
                smallest=smallest,
            )
        return shrink_to_fit(present, lambda m: self.fits(m, system=prompt))

    def _tail_fit(
        self, messages: Sequence[Message], counter: EstimateCounter, prompt: str
    ) -> list[Message] | None:
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
            used = counter.count(pinned, system=prompt)
            fits_from = len(parts.body)  # the earliest group index whose suffix still fits
            for i in range(len(parts.body) - 1, -1, -1):
                used += sum(counter.count_message(m) for m in parts.body[i].messages)
                if used > self.max_tokens:  # over: so is anything earlier (counts only grow)
                    fitting = [c for c in cuts_of(parts) if fits_from <= c < len(parts.body)]
                    return render(parts, fitting[0]) if fitting else None
                fits_from = i
            tail *= 2
        return None

    def _first_fit(self, parts: Split, starts: list[int], prompt: str) -> int | None:
        """The earliest start whose rendering fits, by binary search."""
        lo, hi, found = 0, len(starts) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.fits(render(parts, starts[mid]), system=prompt):
                found, hi = starts[mid], mid - 1
            else:
                lo = mid + 1
        return found
