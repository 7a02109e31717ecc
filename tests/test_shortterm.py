"""Short-term memory: strategies, counters and summarizers, one behaviour per test."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

import fourfold.shortterm as shortterm
from fourfold.errors import BudgetExceeded, InvalidInput, ModelError
from fourfold.models.base import ChatModel, ChatRequest, ChatResponse, Message
from fourfold.shortterm import (
    SUMMARY_PREFIX,
    TRUNCATION_MARKER,
    AnthropicCounter,
    EstimateCounter,
    ExtractiveSummarizer,
    ModelSummarizer,
    Pipeline,
    SlidingWindow,
    Summarize,
    TokenBudget,
    group_turns,
    is_summary,
)
from fourfold.shortterm.compaction import summary_message

TASK = {"role": "user", "content": "My order A-1001 was charged twice ($40). Please fix it."}


def tool_turn(i: int, result: str = "30") -> list[dict[str, Any]]:
    """An assistant tool call and the user message carrying its result."""
    call = {
        "type": "tool_use",
        "id": f"t{i}",
        "name": "lookup_policy",
        "input": {"key": "refund_window_days"},
    }
    return [
        {"role": "assistant", "content": [{"type": "text", "text": "Let me check."}, call]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": result}],
        },
    ]


def chat(turns: int, *, tools_every: int = 3, filler: int = 40) -> list[dict[str, Any]]:
    """A scripted support conversation: the task, then `turns` exchanges, some with tool calls."""
    messages: list[dict[str, Any]] = [dict(TASK)]
    for i in range(turns):
        if i % tools_every == 0:
            messages += tool_turn(i)
        messages.append(
            {"role": "assistant", "content": f"Turn {i}: we will refund ${i}. Anything else?"}
        )
        messages.append(
            {"role": "user", "content": f"Note {i} about item {i * 7}. " + "detail " * filler}
        )
    return messages


class Recording:
    """A summarizer that records what it was asked and answers deterministically."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[Message], str | None]] = []

    def summarize(self, messages: Sequence[Message], *, previous_summary: str | None) -> str:
        self.calls.append((list(messages), previous_summary))
        return f"summary #{len(self.calls)}"


class FakeModel(ChatModel):
    """A chat model that records the requests it was sent and replies with a fixed text."""

    name = "fake"

    def __init__(self, reply: str = "User wants a $40 refund for A-1001.") -> None:
        self.reply = reply
        self.sent: list[dict[str, Any]] = []

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.sent.append({"messages": list(request.messages), "system": request.system, "max_tokens": request.max_tokens})
        return ChatResponse(text=self.reply)


# --- package surface ----------------------------------------------------------------------


def test_exported_names_are_exactly_the_public_api() -> None:
    assert set(shortterm.__all__) == {
        "SUMMARY_PREFIX",
        "TRUNCATION_MARKER",
        "AnthropicCounter",
        "EstimateCounter",
        "ExtractiveSummarizer",
        "ModelSummarizer",
        "Pipeline",
        "SlidingWindow",
        "Strategy",
        "Summarize",
        "Summarizer",
        "TokenBudget",
        "TokenCounter",
        "TurnGroup",
        "group_turns",
        "is_summary",
    }


# --- grouping -----------------------------------------------------------------------------


def test_group_turns_keeps_a_tool_call_with_its_result() -> None:
    messages = [TASK, *tool_turn(1), {"role": "assistant", "content": "Done."}]
    sizes = [len(g.messages) for g in group_turns(messages)]
    assert sizes == [1, 2, 1]


def test_group_turns_keeps_openai_tool_calls_with_all_tool_messages() -> None:
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
    ]
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "tool", "tool_call_id": "c2", "content": "2"},
        {"role": "assistant", "content": "ok"},
    ]
    assert [len(g.messages) for g in group_turns(messages)] == [1, 3, 1]


def test_is_summary_recognises_only_the_prefixed_user_message() -> None:
    assert is_summary({"role": "user", "content": f"{SUMMARY_PREFIX}\nstuff"})
    assert not is_summary({"role": "assistant", "content": f"{SUMMARY_PREFIX}\nstuff"})
    assert not is_summary(TASK)


# --- SlidingWindow ------------------------------------------------------------------------


def test_sliding_window_keeps_task_and_last_messages() -> None:
    messages = chat(10)
    out = SlidingWindow(4)(messages)
    assert out == [TASK, *messages[-4:]]  # exactly: a window keeping more (or less) fails
    assert len(out) == 5 and out[1]["role"] == "assistant"


def test_sliding_window_moves_back_rather_than_split_a_tool_call() -> None:
    messages = [
        TASK,
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "b"},
        *tool_turn(1),
    ]
    out = SlidingWindow(1)(messages)
    assert out == [TASK, *tool_turn(1)]


def test_sliding_window_keeps_system_message_first() -> None:
    system = {"role": "system", "content": "You are a support agent."}
    messages = [system, *chat(5)]
    assert SlidingWindow(2)(messages) == [system, TASK, *messages[-2:]]


def test_sliding_window_short_history_is_returned_unchanged_and_input_untouched() -> None:
    messages = chat(2)
    before = copy.deepcopy(messages)
    assert SlidingWindow(100)(messages) == messages
    SlidingWindow(2)(messages)
    assert messages == before


def test_sliding_window_rejects_non_positive_size() -> None:
    with pytest.raises(InvalidInput):
        SlidingWindow(0)


# --- TokenBudget --------------------------------------------------------------------------


def test_token_budget_drops_oldest_turns_until_it_fits() -> None:
    counter = EstimateCounter()
    messages = chat(30)
    out = TokenBudget(800, counter)(messages)
    kept = len(out) - 1
    assert out == [TASK, *messages[-kept:]]  # the task, then an unbroken run of the newest messages
    assert counter.count(out) <= 800 < counter.count([TASK, *messages[-kept - 1 :]])  # and no older one fits


def test_token_budget_counts_the_separate_system_prompt() -> None:
    counter = EstimateCounter()
    messages = chat(30)
    system = "You are a careful support agent. " * 20
    out = TokenBudget(800, counter, system=system)(messages)
    assert counter.count(out, system=system) <= 800
    assert len(out) < len(TokenBudget(800, counter)(messages))


def test_token_budget_truncates_a_single_huge_message_with_a_marker() -> None:
    huge = {"role": "user", "content": "x" * 20_000}
    out = TokenBudget(300)([huge])
    assert EstimateCounter().count(out) <= 300
    text = out[0]["content"]
    kept = text.index("…")
    assert text == "x" * kept + f"…[{20_000 - kept} chars cut]"


def test_token_budget_truncates_a_huge_tool_result_but_keeps_the_pair() -> None:
    messages = [TASK, *tool_turn(1, result="y" * 20_000)]
    out = TokenBudget(300)(messages)
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    result = out[2]["content"][0]
    assert result["tool_use_id"] == "t1" and TRUNCATION_MARKER.split("{")[0] in result["content"]


def test_token_budget_refuses_when_system_alone_exceeds_it() -> None:
    system = {"role": "system", "content": "s" * 5000}
    with pytest.raises(InvalidInput):
        TokenBudget(100)([system, TASK])


def test_token_budget_raises_rather_than_cut_a_tool_call_larger_than_the_budget() -> None:
    # A write call whose input is a whole file, in the newest turn: cutting the file would
    # send the model a call it never made, and dropping the turn would lose what it must answer.
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "write",
                                              "input": {"path": "r.md", "content": "x" * 50_000}}]}
    messages = [
        {"role": "user", "content": "Task: write the report file."},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "Go ahead, write it now."},
        call,
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]},
    ]
    task_at_marker = {"role": "user", "content": TRUNCATION_MARKER.format(n=len(messages[0]["content"]))}
    smallest = EstimateCounter().count([task_at_marker, call, messages[-1]])  # "ok" is shorter than a marker
    with pytest.raises(BudgetExceeded) as raised:
        TokenBudget(12_000)(messages)
    assert (raised.value.max_tokens, raised.value.smallest) == (12_000, smallest)
    assert "max_tokens=12000" in str(raised.value) and f"counts {smallest} tokens" in str(raised.value)
    out = TokenBudget(smallest)(messages)  # a budget that just holds the call: kept byte for byte
    assert out[1:] == [call, messages[-1]] and out[0]["content"].endswith(" chars cut]")


def test_token_budget_cuts_texts_and_keeps_a_tool_call_whole() -> None:
    # A long pasted spec, then a pending write call whose file fits the budget only if the
    # spec is shortened: the call stays verbatim (it is what the model did), the spec is cut.
    spec = {"role": "user", "content": "Task: write this spec to disk. " + "The spec says. " * 1000}
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_9", "name": "write",
                                              "input": {"path": "spec.md", "content": "y" * 30_000}}]}
    messages = [spec, {"role": "assistant", "content": "Sure."}, {"role": "user", "content": "Do it."}, call]
    budget = EstimateCounter().count([call]) + 1000
    out = TokenBudget(budget)(messages)
    assert EstimateCounter().count(out) <= budget
    assert out[1:] == [call]
    assert out[0]["content"].startswith("Task: write this spec")
    assert TRUNCATION_MARKER.split("{")[0] in out[0]["content"]


def test_token_budget_raises_rather_than_drop_the_newest_turn() -> None:
    reply = {"role": "assistant", "content": "I found the duplicate charge and will refund it. " * 5}
    # room for the task cut to its marker and two tokens more: too little for any message
    cut_task = {**TASK, "content": TRUNCATION_MARKER.format(n=len(TASK["content"]))}
    budget = TokenBudget(EstimateCounter().count([cut_task]) + 2)
    with pytest.raises(BudgetExceeded) as raised:
        budget([TASK, reply])
    assert isinstance(raised.value, InvalidInput)  # callers catching the old error still do
    assert len(budget([TASK])) == 1  # the task alone fits (cut): only the newest turn is too much


def test_token_budget_keeps_the_label_of_a_summary_it_cuts() -> None:
    summary = summary_message("The customer said many things. " * 700, [{"type": "text", "text": "Fix A-1001."}])
    reply = {"role": "assistant", "content": "Here is the whole log. " * 600}  # long too
    out = TokenBudget(300)([summary, reply])
    assert EstimateCounter().count(out) <= 300
    assert is_summary(out[0]) and TRUNCATION_MARKER.split("{")[0] in out[0]["content"][0]["text"]
    assert out[1]["content"].startswith("Here is the whole log.")


def test_token_budget_counts_the_system_prompt_given_with_the_request() -> None:
    counter = EstimateCounter()
    messages = chat(30)
    system = "You are a careful support agent. " * 20
    out = TokenBudget(800, counter)(messages, system=system)
    assert counter.count(out, system=system) <= 800
    assert out == TokenBudget(800, counter, system=system)(messages)
    assert TokenBudget(800, counter, system=system)(messages, system="") == TokenBudget(800, counter)(messages)


# --- counters -----------------------------------------------------------------------------


def test_estimate_counter_is_about_one_token_per_three_and_a_half_chars() -> None:
    counter = EstimateCounter()
    small = counter.count([{"role": "user", "content": "a" * 350}])
    assert 100 <= small <= 110


def test_estimate_counter_counts_tool_inputs_and_system() -> None:
    counter = EstimateCounter()
    bare = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "1", "name": "f", "input": {}}],
    }
    big = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "1", "name": "f", "input": {"q": "z" * 700}}],
    }
    assert counter.count([big]) >= counter.count([bare]) + 200
    assert counter.count([bare], system="s" * 350) >= counter.count([bare]) + 100


def test_anthropic_counter_calls_the_sdk_once_per_distinct_request() -> None:
    sent: list[dict[str, Any]] = []

    def count_tokens(**kwargs: Any) -> Any:
        sent.append(kwargs)
        return SimpleNamespace(input_tokens=42)

    client = SimpleNamespace(messages=SimpleNamespace(count_tokens=count_tokens))
    counter = AnthropicCounter(client, "claude-test")
    messages = [{"role": "system", "content": "Be brief."}, TASK]
    assert counter.count(messages) == 42
    assert counter.count(messages) == 42
    assert counter.count([TASK]) == 42
    assert len(sent) == 2
    assert sent[0] == {"model": "claude-test", "messages": [TASK], "system": "Be brief."}
    assert "system" not in sent[1]


# --- summarizers --------------------------------------------------------------------------


def test_extractive_summarizer_keeps_facts_decisions_questions_and_tools() -> None:
    messages = [
        TASK,
        *tool_turn(1),
        {
            "role": "assistant",
            "content": "We agreed to refund the duplicate charge. Is the card still active?",
        },
        {"role": "user", "content": "Thanks, lovely weather today."},
    ]
    text = ExtractiveSummarizer().summarize(messages, previous_summary=None)
    assert text.startswith("Request: My order A-1001")
    assert "lookup_policy(refund_window_days) -> 30" in text
    assert "We agreed to refund the duplicate charge." in text
    assert "Open question (assistant): Is the card still active?" in text
    assert "weather" not in text


def test_extractive_summarizer_drops_answered_questions() -> None:
    messages = [
        {"role": "user", "content": "Which warehouse ships order A-1001?"},
        {"role": "assistant", "content": "The Leeds warehouse ships order A-1001."},
    ]
    text = ExtractiveSummarizer().summarize(messages, previous_summary=None)
    assert "Open question" not in text


def test_a_reply_that_shares_only_function_words_leaves_the_question_open() -> None:
    """Whether a question was answered is judged by its content words (the library's stop
    words are not): "They should call back" answers nothing of "Should they have been shipped"."""
    asked = [{"role": "user", "content": "Hi there."}, {"role": "user", "content": "Should they have been shipped already?"}]
    summarize = ExtractiveSummarizer().summarize
    assert summarize([*asked, {"role": "assistant", "content": "They should call back later."}],
                     previous_summary=None) == "Request: Hi there.\nOpen question (user): Should they have been shipped already?"
    assert summarize([*asked, {"role": "assistant", "content": "Yes, it was shipped already on Monday."}],
                     previous_summary=None) == "Request: Hi there."


def test_extractive_summarizer_folds_previous_summary_first_and_stays_bounded() -> None:
    previous = (
        "Decision (assistant): We will refund $40.\nOpen question (user): Where is parcel 77?"
    )
    later = [{"role": "assistant", "content": "Parcel 77 is at the depot, where it waits."}]
    text = ExtractiveSummarizer().summarize(later, previous_summary=previous)
    assert text.startswith("Decision (assistant): We will refund $40.")
    assert "Where is parcel 77?" not in text  # answered since
    long = ExtractiveSummarizer(max_chars=300).summarize(chat(40), previous_summary=previous)
    assert len(long) <= 300


def test_model_summarizer_sends_transcript_and_previous_summary() -> None:
    model = FakeModel()
    summarizer = ModelSummarizer(model, max_tokens=200)
    text = summarizer.summarize([TASK, *tool_turn(1)], previous_summary="Earlier: customer is Ana.")
    assert text == "User wants a $40 refund for A-1001."
    [request] = model.sent
    prompt = request["messages"][0]["content"]
    assert request["max_tokens"] == 200
    assert "Earlier: customer is Ana." in prompt
    assert "user: My order A-1001 was charged twice" in prompt
    assert "lookup_policy(refund_window_days) -> 30" in prompt
    assert "decisions" in prompt and "open questions" in prompt


def test_model_summarizer_raises_on_empty_reply() -> None:
    with pytest.raises(ModelError):
        ModelSummarizer(FakeModel(reply="  ")).summarize([TASK], previous_summary=None)


# --- Summarize ----------------------------------------------------------------------------


def test_summarize_leaves_short_history_alone() -> None:
    summarizer = Recording()
    messages = chat(3)
    assert Summarize(summarizer, trigger_tokens=10_000)(messages) == messages
    assert summarizer.calls == []


def test_summarize_folds_old_turns_into_one_marked_message_with_task_pinned() -> None:
    summarizer = Recording()
    strategy = Summarize(summarizer, trigger_tokens=1500)
    messages = chat(20)
    out = strategy(messages)
    assert strategy.summarizer_calls == 1
    assert is_summary(out[0])
    blocks = out[0]["content"]
    assert blocks[0]["text"].startswith(f"{SUMMARY_PREFIX}\nsummary #1")
    assert blocks[1] == {"type": "text", "text": TASK["content"]}  # verbatim
    kept = len(out) - 1
    assert out[1:] == messages[-kept:] and out[1]["role"] == "assistant"  # the newest turns verbatim
    assert EstimateCounter().count(out) <= 1500
    old, previous = summarizer.calls[0]
    assert previous is None and old == messages[1:-kept]  # all between the task and them, once


def test_summarize_folds_previous_summary_instead_of_resummarizing_it() -> None:
    summarizer = Recording()
    strategy = Summarize(summarizer, trigger_tokens=1500)
    history = chat(40)
    current: list[Message] = []
    for message in history:
        current = strategy([*current, message])
    assert strategy.summarizer_calls >= 2
    old, previous = summarizer.calls[1]
    assert previous == "summary #1"
    assert not any(is_summary(m) for m in old)


def test_summarize_folds_a_large_first_message_into_the_summary() -> None:
    summarizer = Recording()
    big_task = {"role": "user", "content": "Here is my log: " + "line " * 2000}
    out = Summarize(summarizer, trigger_tokens=1500, pin_first_max_tokens=500)(
        [big_task, *chat(20)[1:]]
    )
    old, _ = summarizer.calls[0]
    assert old[0] == big_task
    assert len(out[0]["content"]) == 1  # summary text only, nothing pinned


def test_summarize_turn_trigger_counts_messages() -> None:
    summarizer = Recording()
    strategy = Summarize(summarizer, trigger_turns=20, keep_recent=2)
    out = strategy(chat(10))
    assert strategy.summarizer_calls == 1
    assert len(out) <= 20 < len(chat(10))


def test_summarize_full_history_each_turn_matches_feeding_back() -> None:
    history = chat(60)
    fed_back = Summarize(ExtractiveSummarizer(), trigger_tokens=2000)
    replayed = Summarize(ExtractiveSummarizer(), trigger_tokens=2000)
    current: list[Message] = []
    for i in range(1, len(history) + 1):
        current = fed_back([*current, history[i - 1]])
        view = replayed(history[:i])
    assert replayed.summarizer_calls == fed_back.summarizer_calls
    assert view == current


def test_summarize_counts_the_system_prompt_toward_its_trigger() -> None:
    messages = chat(10)
    trigger = EstimateCounter().count(messages) + 50  # the messages alone are under it
    system = "You are a careful support agent. " * 20
    assert Summarize(Recording(), trigger_tokens=trigger)(messages) == messages
    out = Summarize(Recording(), trigger_tokens=trigger)(messages, system=system)
    assert is_summary(out[0])
    assert Summarize(Recording(), trigger_tokens=trigger, system=system)(messages) == out


def test_summarize_rejects_bad_options() -> None:
    with pytest.raises(InvalidInput):
        Summarize(ExtractiveSummarizer())
    with pytest.raises(InvalidInput):
        Summarize(ExtractiveSummarizer(), trigger_tokens=100, low_water=1.0)


def test_pipeline_applies_steps_in_order() -> None:
    budget = TokenBudget(600)
    out = Pipeline(Summarize(ExtractiveSummarizer(), trigger_tokens=3000), budget)(chat(40))
    assert EstimateCounter().count(out) <= 600
    assert is_summary(out[0])


def test_pipeline_tells_each_strategy_the_system_prompt_and_plain_functions_nothing() -> None:
    system = "You are a careful support agent. " * 40
    seen: list[int] = []

    def note(messages: Sequence[Message]) -> list[Message]:
        seen.append(len(messages))
        return list(messages)

    pipeline = Pipeline(Summarize(ExtractiveSummarizer(), trigger_tokens=3000), note, TokenBudget(900))
    out = pipeline(chat(40), system=system)
    assert EstimateCounter().count(out, system=system) <= 900
    assert is_summary(out[0]) and seen and seen[0] < len(chat(40))


# --- amortization against the seed sketch -------------------------------------------------


def seed_style_compact(
    messages: list[Message], summarizer: Recording, keep_recent: int = 4
) -> list[Message]:
    """The sketch's compact, reproduced for comparison only: it runs on every call past its
    threshold (a few messages), summarizing everything but the last few messages."""
    if len(messages) <= keep_recent + 2:
        return messages
    old, recent = messages[:-keep_recent], messages[-keep_recent:]
    text = summarizer.summarize(old, previous_summary=None)
    return [{"role": "user", "content": f"[Earlier summary]\n{text}"}, *recent]


def by_turn(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Cut a conversation where each user message that answers no tool call starts a turn."""
    turns: list[list[dict[str, Any]]] = []
    for message in messages:
        plain = message["role"] == "user" and isinstance(message["content"], str)
        if plain or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def test_summarize_makes_ten_times_fewer_calls_than_seed_compact_over_200_turns() -> None:
    counter = EstimateCounter()
    history = chat(200)
    turns = by_turn(history)
    assert len(turns) == 201
    seed_summarizer = Recording()
    strategy = Summarize(ExtractiveSummarizer(), trigger_tokens=3000, low_water=0.5)
    seed: list[Message] = []
    ours: list[Message] = []
    for turn in turns:  # like the sketch's support_turn: compact, then add the new turn
        seed = [*seed_style_compact(seed, seed_summarizer), *turn]
        ours = [*strategy(ours), *turn]
    ours = strategy(ours)
    assert len(seed_summarizer.calls) >= 10 * strategy.summarizer_calls
    assert strategy.summarizer_calls >= 1
    assert counter.count(ours) <= 0.2 * counter.count(history)
    assert is_summary(ours[0]) and ours[-1] == history[-1]


def test_summarize_keeps_a_message_after_the_summary_even_with_keep_recent_zero() -> None:
    out = Summarize(Recording(), trigger_tokens=300, keep_recent=0)(chat(10))
    assert is_summary(out[0]) and out[1]["role"] == "assistant"


def test_a_plain_function_is_a_strategy_through_as_strategy() -> None:
    """One meaning of strategy: a function of the messages becomes a `Strategy` that is not
    told the system prompt; a `Strategy` is itself."""
    from fourfold.shortterm.strategies import Strategy, as_strategy, run_strategy

    def last_two(messages: Sequence[Message]) -> list[Message]:
        return list(messages[-2:])

    window = SlidingWindow(4)
    assert as_strategy(window) is window
    wrapped = as_strategy(last_two)
    msgs = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    assert isinstance(wrapped, Strategy)
    assert wrapped(msgs, system="ignored") == msgs[-2:]
    assert run_strategy(last_two, msgs, system="ignored") == msgs[-2:]
    assert Pipeline(last_two)(msgs, system="ignored") == msgs[-2:]
