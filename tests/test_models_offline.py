"""The offline model and the scripted test double: no network, fully deterministic."""

from __future__ import annotations

from typing import Any

import pytest

from fourfold.errors import ModelError
from fourfold.models import ChatResponse, OfflineModel, ScriptedModel, ToolCall
from fourfold.models.offline import OFFLINE_LABEL

#: The support desk's policy tool in Anthropic's form (test_models.py sends it through the SDKs too).
POLICY_TOOL: dict[str, Any] = {
    "name": "lookup_policy",
    "description": "Return an authoritative company policy value.",
    "input_schema": {
        "type": "object",
        "properties": {
            "key": {
                "type": "string",
                "enum": ["refund_window_days", "max_file_upload_mb", "support_hours"],
            }
        },
        "required": ["key"],
    },
}

# The shape of the support agent's prompt in the seed document.
SUPPORT_SYSTEM = (
    "You are a support agent. Use lookup_policy for any policy value.\n"
    "Known about this customer: ['Prefers email over phone calls. Is on the Pro plan.', "
    "'Uses the Android app.']\n"
    "Similar resolved tickets: ['login fails after password reset -> cleared the SSO session, "
    "fixed', 'deploy 502 -> restarted worker, fixed']"
)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def ask(question: str, **kwargs: Any) -> ChatResponse:
    return OfflineModel().chat([user(question)], **kwargs)


# -- OfflineModel: tool calls ------------------------------------------------------------


def test_offline_calls_lookup_policy_for_refund_window() -> None:
    reply = ask("what is your refund window?", tools=[POLICY_TOOL])
    assert reply.stop_reason == "tool_use"
    assert reply.tool_calls == (
        ToolCall("toolu_offline_1", "lookup_policy", {"key": "refund_window_days"}),
    )


@pytest.mark.parametrize(
    ("question", "key"),
    [
        ("How big a file can I upload?", "max_file_upload_mb"),
        ("What are your support hours?", "support_hours"),
        ("Tell me refund_window_days please", "refund_window_days"),
    ],
)
def test_offline_matches_keys_by_their_words(question: str, key: str) -> None:
    reply = ask(question, tools=[POLICY_TOOL])
    assert [c.input for c in reply.tool_calls] == [{"key": key}]


@pytest.mark.parametrize(
    "question",
    ["My app crashes when I open settings", "I need support with my login", "hello"],
)
def test_offline_does_not_call_tools_for_unrelated_questions(question: str) -> None:
    reply = ask(question, tools=[POLICY_TOOL])
    assert reply.tool_calls == ()
    assert reply.stop_reason == "end_turn"


def test_offline_answers_from_tool_results() -> None:
    model = OfflineModel()
    messages: list[dict[str, Any]] = [user("what is your refund window?")]
    first = model.chat(messages, tools=[POLICY_TOOL])
    messages.append(first.as_message())
    messages.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_offline_1", "content": "30"}],
        }
    )
    second = model.chat(messages, tools=[POLICY_TOOL])
    assert second.tool_calls == ()  # it does not ask again once it has the result
    assert second.text == f"{OFFLINE_LABEL} Policy refund_window_days: 30."


def test_offline_reports_failed_tool_results() -> None:
    messages = [
        user("support hours?"),
        ChatResponse(
            text="", tool_calls=(ToolCall("t1", "lookup_policy", {"key": "support_hours"}),)
        ).as_message(),
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "timeout", "is_error": True}
            ],
        },
    ]
    reply = OfflineModel().chat(messages, tools=[POLICY_TOOL])
    assert reply.text == f"{OFFLINE_LABEL} Policy support_hours: the lookup failed (timeout)."


def test_offline_tool_ids_count_up_within_a_conversation() -> None:
    history = [
        user("refund window?"),
        ChatResponse(
            text="", tool_calls=(ToolCall("toolu_offline_1", "lookup_policy", {"key": "x"}),)
        ).as_message(),
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_offline_1", "content": "30"}],
        },
        {"role": "assistant", "content": "30 days."},
        user("and your support hours?"),
    ]
    reply = OfflineModel().chat(history, tools=[POLICY_TOOL])
    assert reply.tool_calls[0].id == "toolu_offline_2"


# -- OfflineModel: context answers -------------------------------------------------------


def test_offline_answers_from_system_context() -> None:
    reply = ask(
        "I can't log in after my password reset", system=SUPPORT_SYSTEM, tools=[POLICY_TOOL]
    )
    assert reply.tool_calls == ()
    assert (
        "A similar resolved ticket: login fails after password reset -> cleared the SSO session, fixed."
        in reply.text
    )
    assert "deploy" not in reply.text


def test_offline_quotes_the_matching_memory_whole() -> None:
    reply = ask("Should we contact them by phone or email?", system=SUPPORT_SYSTEM)
    assert reply.text == f"{OFFLINE_LABEL} From memory: Prefers email over phone calls. Is on the Pro plan."


def test_offline_reads_bulleted_sections() -> None:
    system = (
        "Answer briefly.\n"
        "Relevant memories:\n"
        "- The customer is based in Lisbon.\n"
        "- The customer's invoices go to billing@example.com.\n"
        "\n"
        "Past episodes:\n"
        "- invoice sent to wrong address -> updated billing contact, fixed\n"
    )
    reply = ask("Where do the invoices go?", system=system)
    assert "From memory: The customer's invoices go to billing@example.com." in reply.text
    assert "A similar resolved ticket: invoice sent to wrong address" in reply.text
    assert "Lisbon" not in reply.text


# The shape fourfold's support agent renders: JSON-string lines under "# headings".
DELIMITED_SYSTEM = "\n".join(
    [
        "You are a customer-support agent. Use the lookup_policy tool for any policy value.",
        "",
        "Between <memory_data> and </memory_data> is reference data retrieved from memory.",
        "<memory_data>",
        "# Known about this customer",
        '"Prefers email over phone calls."',
        '"Their invoices go to billing@example.com \\u003cfinance\\u003e."',
        "# Similar resolved tickets",
        '"Previously: invoice sent to wrong address -> updated billing contact -> fixed"',
        "# Relevant documentation",
        '"(none)"',
        "</memory_data>",
    ]
)


def test_offline_reads_the_delimited_data_block() -> None:
    reply = ask("Where do my invoices go?", system=DELIMITED_SYSTEM, tools=[POLICY_TOOL])
    assert reply.text == (
        f"{OFFLINE_LABEL} From memory: Their invoices go to billing@example.com <finance>. "
        "A similar resolved ticket: invoice sent to wrong address -> updated billing contact "
        "-> fixed."
    )


def test_offline_never_quotes_placeholders_or_instructions() -> None:
    # Every word here appears in the instructions, the delimiters or the "(none)" line: it
    # answers from the memories it was given, never from those.
    reply = ask(
        "None? Which policy value does the lookup_policy tool use, agent?", system=DELIMITED_SYSTEM
    )
    assert reply.text == (
        f"{OFFLINE_LABEL} From memory: Prefers email over phone calls. Their invoices go to billing@example.com <finance>."
    )


def test_offline_answers_from_what_it_was_given_and_says_so_only_when_given_nothing() -> None:
    """Its answer agrees with what was recalled: memories that share no word with the question
    are still what the prompt holds, best first; "no relevant memory" only without any."""
    reply = ask("What's the weather like?", system=SUPPORT_SYSTEM, tools=[POLICY_TOOL])
    assert reply.text == f"{OFFLINE_LABEL} From memory: Prefers email over phone calls. Is on the Pro plan. Uses the Android app."
    assert reply.tool_calls == ()
    empty = ask("What's the weather like?", system="You are a support agent.\nKnown about this customer: []")
    assert empty.text == f"{OFFLINE_LABEL} I have no relevant memory or past ticket for that, so I cannot answer it offline."


def test_offline_ignores_the_instructions_in_the_prompt() -> None:
    # "Use lookup_policy for any policy value." is an instruction, not a memory.
    reply = ask("what is the policy value?", system=SUPPORT_SYSTEM)
    assert "lookup_policy" not in reply.text


# -- OfflineModel: identity --------------------------------------------------------------


@pytest.mark.parametrize(
    "messages",
    [
        [user("what is your refund window?")],
        [user("Should we contact them by phone?")],
        [user("unrelated")],
        [],
    ],
)
def test_offline_labels_every_reply_and_never_claims_to_be_an_llm(messages: list[Any]) -> None:
    model = OfflineModel()
    reply = model.chat(messages, system=SUPPORT_SYSTEM, tools=[POLICY_TOOL])
    assert reply.text.startswith("[offline model — not an LLM]")
    assert model.is_llm is False
    assert model.name == "fourfold-offline (not an LLM)"
    assert reply.model == model.name
    lowered = reply.text.lower()
    assert "i am an llm" not in lowered and "as an ai" not in lowered and "claude" not in lowered


def test_offline_is_deterministic() -> None:
    messages = [user("I can't log in after my password reset")]
    replies = {
        OfflineModel().chat(messages, system=SUPPORT_SYSTEM, tools=[POLICY_TOOL]) for _ in range(3)
    }
    assert len(replies) == 1


def test_offline_respects_max_tokens() -> None:
    reply = ask("Should we contact them by phone or email?", system=SUPPORT_SYSTEM, max_tokens=5)
    assert reply.stop_reason == "max_tokens"
    assert len(reply.text) <= 20


# -- ScriptedModel -----------------------------------------------------------------------


def test_scripted_returns_replies_in_order_and_records_requests() -> None:
    model = ScriptedModel(["first", ChatResponse(text="second", stop_reason="max_tokens")])
    messages: list[dict[str, Any]] = [user("one")]
    assert model.chat(messages, system="sys", tools=[POLICY_TOOL]).text == "first"
    messages.append({"role": "assistant", "content": "first"})  # the caller keeps mutating its list
    assert model.chat(messages, max_tokens=10).stop_reason == "max_tokens"

    assert model.requests == [
        {"messages": [user("one")], "system": "sys", "tools": [POLICY_TOOL], "max_tokens": 1024},
        {
            "messages": [user("one"), {"role": "assistant", "content": "first"}],
            "system": "",
            "tools": [],
            "max_tokens": 10,
        },
    ]
    assert model.remaining == 0


def test_scripted_raises_model_error_when_exhausted() -> None:
    model = ScriptedModel(["only"])
    model.chat([user("a")])
    with pytest.raises(ModelError, match="ran out of replies after 1"):
        model.chat([user("b")])
    assert len(model.requests) == 2  # the unanswered request is recorded too


def test_scripted_accepts_a_function() -> None:
    def echo(messages: Any, system: str, tools: Any) -> ChatResponse:
        return ChatResponse(text=f"{system}:{messages[-1]['content']}:{len(tools)}")

    model = ScriptedModel(echo)
    assert model.chat([user("hi")], system="s", tools=[POLICY_TOOL]).text == "s:hi:1"
    assert model.chat([user("again")]).text == ":again:0"
    assert len(model.requests) == 2
