"""Property tests: every strategy and composition keeps a conversation valid."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fourfold.errors import BudgetExceeded, InvalidInput
from fourfold.models.base import Message
from fourfold.shortterm import (
    SUMMARY_PREFIX,
    TRUNCATION_MARKER,
    EstimateCounter,
    ExtractiveSummarizer,
    Pipeline,
    SlidingWindow,
    Summarize,
    TokenBudget,
    is_summary,
)
from fourfold.shortterm.messages import (
    content_blocks,
    is_plain_user,
    split,
    text_of,
    tool_result_ids,
    tool_use_ids,
)
from fourfold.shortterm.strategies import Strategy, StrategyFn, cuts_of, render, run_strategy

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MARKER_HEAD = TRUNCATION_MARKER.split("{")[0]
SYSTEM = {"role": "system", "content": "You are a support agent. Use tools for policy values."}
#: System prompts a request may carry (the Anthropic `system=` string); counted by budgets.
PROMPTS = st.sampled_from(["", "You are a careful support agent. " * 30])

# --- generating conversations -------------------------------------------------------------

WORDS = ["refund", "order", "A-1001", "$40", "agreed", "will", "why?", "ok.", "the", "card", "42"]


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Mostly short sentences, sometimes a huge blob."""
    if draw(st.integers(0, 9)) == 0:
        return "blob " * draw(st.integers(300, 1500))
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=30)))


@st.composite
def anthropic_content(draw: st.DrawFn) -> Any:
    text = draw(texts())
    return text if draw(st.booleans()) else [{"type": "text", "text": text}]


@st.composite
def tool_inputs(draw: st.DrawFn) -> dict[str, Any]:
    """A policy key; sometimes a whole file too, as a write call carries it."""
    arguments: dict[str, Any] = {"key": draw(texts())[:50], "retries": draw(st.integers(0, 3))}
    if draw(st.integers(0, 7)) == 0:
        arguments["content"] = ["file " * draw(st.integers(200, 2000)), draw(texts())]
    return arguments


@st.composite
def anthropic_tool_round(draw: st.DrawFn, ids: Callable[[], str]) -> list[dict[str, Any]]:
    """An assistant message with 1-3 tool_use blocks and the user message with the results."""
    call_ids = [ids() for _ in range(draw(st.integers(1, 3)))]
    calls = [
        {"type": "tool_use", "id": i, "name": "lookup_policy", "input": draw(tool_inputs())}
        for i in call_ids
    ]
    lead = [{"type": "text", "text": draw(texts())}] if draw(st.booleans()) else []
    results: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": i, "content": draw(texts())} for i in call_ids
    ]
    if draw(st.integers(0, 4)) == 0:
        results.append({"type": "text", "text": draw(texts())})
    return [{"role": "assistant", "content": lead + calls}, {"role": "user", "content": results}]


@st.composite
def openai_tool_round(draw: st.DrawFn, ids: Callable[[], str]) -> list[dict[str, Any]]:
    """An assistant message with 1-3 tool_calls and one tool message per call."""
    call_ids = [ids() for _ in range(draw(st.integers(1, 3)))]
    calls = [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": json.dumps({"q": i})}}
        for i in call_ids
    ]
    tools = [{"role": "tool", "tool_call_id": i, "content": draw(texts())} for i in call_ids]
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *tools]


@st.composite
def conversations(draw: st.DrawFn, *, openai: bool | None = None) -> list[dict[str, Any]]:
    """A valid conversation: user turns, each answered by 0-3 tool rounds and maybe a reply."""
    openai = draw(st.booleans()) if openai is None else openai
    counter = iter(range(10_000))

    def ids() -> str:
        return f"call_{next(counter)}"

    messages: list[dict[str, Any]] = [SYSTEM] if openai else []
    for _ in range(draw(st.integers(0, 12))):
        content = draw(texts()) if openai else draw(anthropic_content())
        messages.append({"role": "user", "content": content})
        for _ in range(draw(st.integers(0, 3))):
            messages += draw(openai_tool_round(ids) if openai else anthropic_tool_round(ids))
        messages.append({"role": "assistant", "content": draw(texts())})
    if messages and messages[-1]["role"] == "assistant" and draw(st.booleans()):
        messages.pop()  # sometimes end on the tool results, awaiting the model
    return messages


@st.composite
def file_writes(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A conversation whose newest turn writes a file, its result maybe still pending."""
    messages = draw(conversations(openai=False))
    if not messages or messages[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": draw(texts()) + " " + "spec " * draw(st.integers(0, 3000))})
    file = "file " * draw(st.integers(100, 6000))
    lead = [{"type": "text", "text": draw(texts())}] if draw(st.booleans()) else []
    call = {"type": "tool_use", "id": "call_write", "name": "write", "input": {"path": "a.md", "content": file}}
    messages.append({"role": "assistant", "content": [*lead, call]})
    if draw(st.booleans()):
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_write", "content": draw(texts())}]})
    return messages


# --- the invariants -----------------------------------------------------------------------


def is_cut(message: Message) -> bool:
    return MARKER_HEAD in json.dumps(message, ensure_ascii=False)


def cut_from(out: Message, original: Message) -> bool:
    """`out` is `original` with texts cut: same role and result ids, a marker, calls whole."""
    return (
        is_cut(out)
        and out.get("role") == original.get("role")
        and tool_result_ids(out) == tool_result_ids(original)
        and tool_calls([out]) == tool_calls([original])
        and out.get("tool_calls") == original.get("tool_calls")
    )


def derived_from(out: Message, original: Sequence[Message]) -> bool:
    """An output message is an input message, or one with texts truncated by a marker."""
    return out in original or any(cut_from(out, m) for m in original)


def pairing_problems(messages: Sequence[Message]) -> list[str]:
    """Orphans: results answering no call just made, calls left unanswered before the next turn."""
    problems: list[str] = []
    pending: set[str] = set()
    for message in messages:
        answered = set(tool_result_ids(message))
        problems += [f"orphan tool_result {i}" for i in sorted(answered - pending)]
        pending -= answered
        if message.get("role") != "tool":
            problems += [f"orphan tool_use {i}" for i in sorted(pending)]
            pending = set(tool_use_ids(message))
    return problems + [f"orphan tool_use {i}" for i in sorted(pending)]


def check_pairs(out: Sequence[Message]) -> None:
    """1. a tool call and its results are kept or dropped together."""
    assert not pairing_problems(out)


def check_start(out: Sequence[Message]) -> None:
    """2. after the system messages, the first message is a user message answering no call."""
    rest = [m for m in out if m.get("role") != "system"]
    if rest:
        assert rest[0]["role"] == "user" and not tool_result_ids(rest[0])


def check_pinned(original: Sequence[Message], out: Sequence[Message]) -> None:
    """3. system messages stay first; the first user message is kept or folded into a summary."""
    system = [m for m in original if m.get("role") == "system"]
    assert list(out[: len(system)]) == system
    rest = [m for m in original if m.get("role") != "system"]
    if not rest:
        return
    head = out[len(system)]
    if is_summary(head):
        return  # pinned inside it, or folded into the summary text (checked by Summarize tests)
    if head != rest[0]:
        task = text_of(rest[0])
        kept = text_of(head).split(MARKER_HEAD)[0]
        assert MARKER_HEAD in text_of(head) and task.startswith(kept), "first message lost"


def check_alternation(out: Sequence[Message]) -> None:
    """5. Anthropic shape: user and assistant strictly alternate."""
    roles = [m["role"] for m in out if m["role"] in ("user", "assistant")]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles


def check_valid(original: Sequence[Message], out: Sequence[Message], *, openai: bool) -> None:
    """All invariants, plus 6: empty stays empty, nothing invented but summaries and markers."""
    if not original:
        assert out == []
        return
    check_pairs(out)
    check_start(out)
    check_pinned(original, out)
    if not openai:
        check_alternation(out)
    for message in out:
        assert is_summary(message) or derived_from(message, original), message


def apply(
    strategy: Strategy | StrategyFn, messages: list[dict[str, Any]], *, system: str | None = None
) -> list[Message]:
    """Run a strategy and check it left its input untouched, even when it raised."""
    before = copy.deepcopy(messages)
    try:
        return run_strategy(strategy, messages, system=system)
    finally:
        assert messages == before, "input mutated"


def pinned(messages: Sequence[Message]) -> list[Message]:
    """The system messages and the first user message (the task)."""
    parts = split(messages)
    return [*parts.system, *([parts.head] if parts.head is not None else [])]


def newest_turn(messages: Sequence[Message]) -> list[Message]:
    """What TokenBudget keeps after the task: from the last assistant message on."""
    rest = [m for m in messages if m.get("role") != "system"]
    if rest and is_plain_user(rest[0]):
        rest = rest[1:]
    starts = [i for i, m in enumerate(rest) if m.get("role") == "assistant"]
    return rest[starts[-1] :] if starts else rest


def at_marker(text: str, keep: int = 0) -> str:
    """`text` cut after `keep` characters to the truncation marker, unless that is no shorter."""
    cut = text[:keep] + TRUNCATION_MARKER.format(n=len(text) - keep)
    return cut if len(cut) < len(text) else text


def block_at_marker(block: dict[str, Any], keep: int) -> dict[str, Any]:
    """A text block or tool result at its marker; any other block (a tool call) whole."""
    if block.get("type") == "text":
        return {**block, "text": at_marker(block["text"], keep)}
    inner = block.get("content")
    if block.get("type") != "tool_result" or inner is None:
        return block
    if isinstance(inner, str):
        return {**block, "content": at_marker(inner)}
    return {**block, "content": [block_at_marker(b, 0) for b in inner]}


def at_markers(message: Message) -> Message:
    """`message` at its least: every text and tool result at its marker (a summary keeps its
    label), tool calls whole."""
    label = len(SUMMARY_PREFIX) if is_summary(message) else 0
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": at_marker(content, label)}
    if not isinstance(content, list):
        return message
    return {**message, "content": [block_at_marker(b, label if i == 0 else 0) for i, b in enumerate(content)]}


def shortest(messages: Sequence[Message]) -> list[Message]:
    """The smallest acceptable output: system messages, then the task and the newest turn at
    their markers, tool calls whole. Written apart from the library, so it can disagree."""
    system = [m for m in messages if m.get("role") == "system"]
    return [*system, *(at_markers(m) for m in pinned(messages)[len(system) :] + newest_turn(messages))]


def check_budget_refusal(
    messages: Sequence[Message], budget: int, prompt: str, refusal: BudgetExceeded
) -> None:
    """BudgetExceeded only when even the smallest acceptable output is over budget; it names
    the budget and that output's size."""
    smallest = EstimateCounter().count(shortest(messages), system=prompt)
    assert smallest > budget
    assert (refusal.max_tokens, refusal.smallest) == (budget, smallest)
    assert f"max_tokens={budget}" in str(refusal) and f"counts {smallest} tokens" in str(refusal)


def within_budget(messages: list[dict[str, Any]], budget: int, prompt: str) -> list[Message] | None:
    """TokenBudget's answer, or None when it refused (the refusal checked as due)."""
    try:
        return apply(TokenBudget(budget), messages, system=prompt)
    except BudgetExceeded as refusal:
        check_budget_refusal(messages, budget, prompt, refusal)
        return None


def is_openai(messages: Sequence[Message]) -> bool:
    return any(m.get("role") == "system" for m in messages)


# --- properties ---------------------------------------------------------------------------


@SETTINGS
@given(conversations(), st.integers(1, 12))
def test_sliding_window_keeps_conversations_valid(messages: list[dict[str, Any]], n: int) -> None:
    out = apply(SlidingWindow(n), messages)
    check_valid(messages, out, openai=is_openai(messages))
    assert all(m in messages for m in out)  # verbatim: nothing cut or marked
    body = [m for m in out if m.get("role") != "system"][1:]
    before = [m for m in messages if m.get("role") != "system"][1:]
    assert min(n, len(before)) <= len(body) <= n + 3  # at most one tool round more than asked
    assert body == before[len(before) - len(body) :]  # the newest ones


@SETTINGS
@given(conversations(), st.integers(150, 3000), PROMPTS)
def test_token_budget_fits_the_whole_request_and_keeps_conversations_valid(
    messages: list[dict[str, Any]], budget: int, prompt: str
) -> None:
    out = within_budget(messages, budget, prompt)
    if out is None:
        return
    assert EstimateCounter().count(out, system=prompt) <= budget  # 4, the system prompt included
    check_valid(messages, out, openai=is_openai(messages))


@SETTINGS
@given(st.one_of(conversations(), file_writes()), st.integers(10, 3000), PROMPTS)
def test_token_budget_keeps_the_newest_turn_or_raises(
    messages: list[dict[str, Any]], budget: int, prompt: str
) -> None:
    out = within_budget(messages, budget, prompt)
    if out is None:
        return
    # It returned, so the smallest acceptable output fits: nothing forced a refusal.
    assert EstimateCounter().count(shortest(messages), system=prompt) <= budget
    newest = newest_turn(messages)
    kept = out[len(out) - len(newest) :] if newest else []
    assert len(out) >= len(newest) + len(pinned(messages))
    assert all(a == b or cut_from(a, b) for a, b in zip(kept, newest, strict=True))
    assert tool_calls(kept) == tool_calls(newest)  # the calls the model made, byte for byte
    assert [m for m in out if m.get("role") == "system"] == [
        m for m in messages if m.get("role") == "system"
    ]


@SETTINGS
@given(conversations(), st.integers(10, 3000), PROMPTS)
def test_token_budget_drops_as_few_old_turns_as_fit_and_cuts_only_when_it_must(
    messages: list[dict[str, Any]], budget: int, prompt: str
) -> None:
    out = within_budget(messages, budget, prompt)
    if out is None:
        return
    if any(is_cut(m) for m in out):  # cut: every older turn was dropped first
        assert len(out) == len(pinned(messages)) + len(newest_turn(messages))
        return
    parts = split(messages)
    cuts = [c for c in cuts_of(parts) if c < len(parts.body)]
    start = next((c for c in cuts if render(parts, c) == out), None)
    assert start is not None or out == messages
    earlier = [c for c in cuts if start is not None and c < start]
    if earlier:  # keeping the next older turn too would not fit
        assert EstimateCounter().count(render(parts, earlier[-1]), system=prompt) > budget


@SETTINGS
@given(st.one_of(conversations(openai=False), file_writes()), st.integers(-100, 100), PROMPTS)
def test_token_budget_keeps_tool_calls_verbatim_or_raises(
    messages: list[dict[str, Any]], share: int, prompt: str
) -> None:
    # Budgets around the floor (every text at its marker, the calls whole): under it the
    # newest turn cannot fit and the call must raise; over it, texts give way, calls never.
    kept = [*pinned(messages), *newest_turn(messages)]
    counter = EstimateCounter()
    floor = counter.count(shortest(messages), system=prompt)
    budget = max(1, floor + share * max(counter.count(kept, system=prompt) - floor, floor // 2) // 100)
    try:
        out = apply(TokenBudget(budget), messages, system=prompt)
    except BudgetExceeded as refusal:
        check_budget_refusal(messages, budget, prompt, refusal)
        return
    assert floor <= budget and counter.count(out, system=prompt) <= budget
    given_calls = tool_calls(messages)
    assert all(call in given_calls for call in tool_calls(out))
    assert tool_calls(newest_turn(messages)) == tool_calls(out[len(out) - len(newest_turn(messages)) :])


def tool_calls(messages: Sequence[Message]) -> list[Any]:
    return [b for m in messages for b in content_blocks(m) if b.get("type") == "tool_use"]


class Wordy:
    """A summarizer whose summaries outgrow the budgets below."""

    def summarize(self, messages: Sequence[Message], *, previous_summary: str | None) -> str:
        return f"{len(messages)} messages: the customer said a great deal. " * 500


@SETTINGS
@given(conversations(openai=False), st.integers(150, 3000), st.integers(300, 3000))
def test_a_summary_cut_to_fit_the_budget_keeps_its_label(
    messages: list[dict[str, Any]], budget: int, trigger: int
) -> None:
    summarize = Summarize(Wordy(), trigger_tokens=trigger)
    try:
        out = apply(Pipeline(summarize, TokenBudget(budget)), messages)
    except BudgetExceeded:
        return
    if summarize.summarizer_calls:
        assert is_summary(out[0])


@SETTINGS
@given(conversations(), st.integers(300, 3000), st.integers(0, 6))
def test_summarize_keeps_conversations_valid(
    messages: list[dict[str, Any]], trigger: int, keep_recent: int
) -> None:
    strategy = Summarize(ExtractiveSummarizer(), trigger_tokens=trigger, keep_recent=keep_recent)
    out = apply(strategy, messages)
    check_valid(messages, out, openai=is_openai(messages))
    assert strategy.summarizer_calls <= 1 + 4 * EstimateCounter().count(messages) // trigger
    if out != messages:
        assert any(is_summary(m) for m in out)
        first = next(m for m in messages if m.get("role") != "system")
        summary = next(m for m in out if is_summary(m))
        blocks = content_blocks(summary)
        # The task is pinned verbatim after the summary text, or it was folded into it.
        assert blocks[1:] == content_blocks(first) or len(blocks) == 1
        # Then the newest messages, verbatim: at least keep_recent and one turn.
        recent = out[out.index(summary) + 1 :]
        assert recent == messages[len(messages) - len(recent) :]
        assert len(recent) >= max(keep_recent, 1) and recent[0]["role"] == "assistant"


@SETTINGS
@given(conversations(), st.integers(300, 3000), PROMPTS)
def test_summarize_under_its_trigger_with_the_system_prompt_changes_nothing(
    messages: list[dict[str, Any]], trigger: int, prompt: str
) -> None:
    strategy = Summarize(ExtractiveSummarizer(), trigger_tokens=trigger)
    out = apply(strategy, messages, system=prompt)
    check_valid(messages, out, openai=is_openai(messages))
    if EstimateCounter().count(messages, system=prompt) <= trigger:
        assert out == messages and strategy.summarizer_calls == 0


@SETTINGS
@given(conversations(), st.integers(300, 3000))
def test_summarize_fed_back_turn_by_turn_stays_valid(
    messages: list[dict[str, Any]], trigger: int
) -> None:
    strategy = Summarize(ExtractiveSummarizer(), trigger_tokens=trigger)
    current: list[Message] = []
    for i, message in enumerate(messages):
        current = apply(strategy, [*current, message])
        if not pairing_problems(messages[: i + 1]):  # skip inputs cut inside a tool round
            check_valid(messages[: i + 1], current, openai=is_openai(messages))


@SETTINGS
@given(
    conversations(), st.integers(1, 10), st.integers(400, 3000), st.integers(300, 3000), PROMPTS
)
def test_compositions_keep_conversations_valid(
    messages: list[dict[str, Any]], n: int, budget: int, trigger: int, prompt: str
) -> None:
    counter = EstimateCounter()
    before_budget = Pipeline(Summarize(ExtractiveSummarizer(), trigger_tokens=trigger), SlidingWindow(n))
    pipeline = Pipeline(before_budget, TokenBudget(budget, counter))
    try:
        out = apply(pipeline, messages, system=prompt)
    except BudgetExceeded as refusal:
        check_budget_refusal(before_budget(messages, system=prompt), budget, prompt, refusal)
        return
    check_valid(messages, out, openai=is_openai(messages))
    assert counter.count(out, system=prompt) <= budget  # every step saw the system prompt


@SETTINGS
@given(conversations(openai=False), st.integers(300, 3000))
def test_summarize_is_deterministic(messages: list[dict[str, Any]], trigger: int) -> None:
    first = Summarize(ExtractiveSummarizer(), trigger_tokens=trigger)(messages)
    again = Summarize(ExtractiveSummarizer(), trigger_tokens=trigger)(messages)
    assert first == again


def test_the_checker_rejects_orphans_bad_starts_and_a_lost_task() -> None:
    task = {"role": "user", "content": "task"}
    call = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "x", "name": "f", "input": {}}],
    }
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "x", "content": "1"}],
    }
    reply = {"role": "assistant", "content": "done"}
    original = [task, call, result, reply]
    check_valid(original, original, openai=False)
    for broken in (
        [task, result, reply],
        [task, call],
        [call, result, reply],
        [reply],
        [task, reply, reply],
    ):
        try:
            check_valid(original, broken, openai=False)
        except AssertionError:
            continue
        raise AssertionError(f"checker accepted {broken}")


class _Opaque:
    """The estimate behind a counter type the strategies cannot assume additive."""

    def __init__(self) -> None:
        self.inner = EstimateCounter()

    def count(self, messages: Sequence[Message], *, system: str = "") -> int:
        return self.inner.count(messages, system=system)


@pytest.mark.slow  # 60 searched conversation sets: the fast loop's slowest test
@given(st.lists(conversations(), min_size=1, max_size=12), st.integers(1, 40), st.integers(150, 3000))
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_tail_shortcuts_match_the_full_computation(
    parts: list[list[dict[str, Any]]], n: int, budget: int
) -> None:
    """SlidingWindow and TokenBudget read only the tail of long histories: same answers."""
    messages = [m for conversation in parts for m in conversation]
    full_window = _full_sliding_window(messages, n)
    assert SlidingWindow(n)(messages) == full_window
    # Same answer, or the same refusal (a budget too small for the system messages).
    assert _outcome(lambda: TokenBudget(budget)(messages)) == _outcome(lambda: TokenBudget(budget, _Opaque())(messages))


def _outcome(run: Any) -> tuple[str, Any]:
    try:
        return "ok", run()
    except InvalidInput as exc:
        return "refused", str(exc)


def _full_sliding_window(messages: list[dict[str, Any]], n: int) -> list[Message]:
    from fourfold.shortterm.messages import split
    from fourfold.shortterm.strategies import cuts_of, render

    parts = split(messages)
    sizes = [len(g.messages) for g in parts.body]
    best = 0
    for cut in cuts_of(parts):
        if cut < len(sizes) and sum(sizes[cut:]) >= n:
            best = cut
    return list(messages) if best == 0 else render(parts, best)
