"""The desk's memory has the right shape: a customer's profile is in every prompt, past tickets
are shown by their problem and fix (never a message as the customer wrote it), and a superseded
preference comes back from no source; on fresh data dirs and on one written before these rules."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from conftest import OpenMemory
from fourfold import Memory
from fourfold.agent import DATA_CLOSE, DATA_OPEN, SupportAgent, customer_scope
from fourfold.agent.prompt import SECTION_TITLES
from fourfold.models import OfflineModel, ScriptedModel
from fourfold.models.base import ChatResponse, ToolCall

#: A desk's data dir as fourfold wrote it before episodes kept a problem and a fix
#: (tests/data/make_desk_before_profile.py says what is in it).
BEFORE = Path(__file__).parent / "data" / "desk-before-profile.tar.gz"


def sections(system: str) -> dict[str, list[str]]:
    """The prompt's data lines by section title, each line as the text it quotes."""
    lines = system.splitlines()
    out: dict[str, list[str]] = {}
    current: list[str] = []
    for line in lines[lines.index(DATA_OPEN) + 1: lines.index(DATA_CLOSE)]:
        if line.startswith("# "):
            current = out.setdefault(line[2:], [])
        elif line != '"(none)"':
            current.append(json.loads(line))
    return out


@pytest.fixture
def before(open_memory: OpenMemory, tmp_path: Path) -> Memory:
    with tarfile.open(BEFORE) as tar:
        tar.extractall(tmp_path, filter="data")
    return open_memory(tmp_path / "desk-before-profile")


def test_the_profile_is_in_every_prompt_whatever_the_question(memory: Memory) -> None:
    scope = customer_scope("ann")
    memory.long_term.remember("My preferred way to be contacted is Signal", scope=scope, kind="preference",
                              key="contact_channel", valid_from=1_700_000_000)
    memory.long_term.remember("Is on the annual plan", scope=scope, kind="fact", key="plan")
    for i in range(6):  # unrelated memories that a recall by similarity would rank first
        memory.long_term.remember(f"Label printer model {i} was offline in store {i}", scope=scope)
    reply = SupportAgent(memory, OfflineModel(), share_cases=False).turn("ann", "The label printer is offline",
                                                                         dry_run=True)
    known = sections(reply.report.system_prompt)[SECTION_TITLES[0]]
    assert known[0] == "[2023-11-14 22:13 UTC] My preferred way to be contacted is Signal"
    assert known[1].endswith("] Is on the annual plan")
    assert [m.key for m in reply.report.profile] == ["contact_channel", "plan"]


def test_a_past_ticket_is_shown_by_its_problem_and_fix_never_as_the_customer_wrote_it(memory: Memory) -> None:
    agent = SupportAgent(memory, OfflineModel(), share_cases=False)
    agent.turn("ann", "Hi there! This is Ann Smith. Please call me on the phone. My label printer is offline.")
    first = agent.resolve("ann", "Reinstalled the printer driver.")
    assert (first.episode.problem, first.episode.fix) == ("My label printer is offline.", "Reinstalled the printer driver.")
    assert first.episode.goal.startswith("Hi there! This is Ann Smith.")  # kept as said, for the record
    agent.turn("ann", "From now on please email me instead of calling. The label printer shows a paper jam.")
    agent.resolve("ann", "Cleared the jam.")
    system = agent.turn("ann", "My label printer is offline again", dry_run=True).report.system_prompt
    tickets = sections(system)[SECTION_TITLES[1]]
    assert any(t.endswith("] Previously: My label printer is offline. -> Reinstalled the printer driver.") for t in tickets)
    assert "phone" not in system and "Ann Smith" not in system
    assert any("email me" in m for m in sections(system)[SECTION_TITLES[0]])


def test_a_data_dir_written_before_shows_old_tickets_by_problem_and_outcome(before: Memory) -> None:
    """Episodes recorded without a problem or fix show the problem sentence of their goal and
    their outcome; ann's changed preference (phone, then email) comes back from no source."""
    assert all(not e.problem and not e.fix for e in before.episodes.episodes())
    reply = SupportAgent(before, OfflineModel(), share_cases=False).turn(
        "ann", "My label printer is offline again", dry_run=True)
    system = reply.report.system_prompt
    tickets = sections(system)[SECTION_TITLES[1]]
    assert any(t.endswith("] Previously: My label printer is offline. -> Reinstalled the printer driver; the label "
                          "printer prints again.") for t in tickets)
    assert "phone" not in system and "Please call me" not in system
    assert [m.key for m in reply.report.profile] == ["contact_channel"]
    assert "email me instead" in reply.report.profile[0].text


def test_a_detected_preference_adopts_the_key_an_operator_set_for_its_kind(memory: Memory) -> None:
    scope = customer_scope("bea")
    operator = memory.long_term.remember("Reach Bea by phone", scope=scope, kind="preference", key="contact")
    (detected,) = memory.add(["Actually text me on my mobile from now on."], scope=scope)
    assert detected.supersedes == (operator.id,)
    current = [m for m in memory.long_term.all(scope=scope) if m.key is not None]
    assert [(m.key, m.text) for m in current] == [("contact", "User said: Actually text me on my mobile from now on.")]
    assert [m.text for m in memory.long_term.profile(scope)] == [current[0].text]


def test_a_user_key_of_a_kind_the_scope_holds_supersedes_it(memory: Memory) -> None:
    scope = customer_scope("bea")
    first = memory.long_term.remember("Prefers email", scope=scope, kind="preference", key="contact_channel")
    second = memory.long_term.remember("Call her on the landline", scope=scope, key="preferred_contact")
    assert second.supersedes == (first.id,)
    assert [(m.key, m.text) for m in memory.long_term.profile(scope)] == [("contact_channel", "Call her on the landline")]
    plan = memory.long_term.remember("Is on the annual plan", scope=scope, key="plan")  # another kind: both stay
    assert not plan.supersedes and len(memory.long_term.profile(scope)) == 2


def test_two_current_values_of_one_kind_from_before_become_one(before: Memory) -> None:
    """A data dir written before keys met holds an operator's "contact" and a detected
    "contact_channel", both current: the profile shows the newer, and the next write of that
    kind ends both."""
    scope = customer_scope("cy")
    keyed = {m.key: m for m in before.long_term.all(scope=scope) if m.key is not None}
    assert set(keyed) == {"contact", "contact_channel"}
    assert [m.key for m in before.long_term.profile(scope)] == ["contact_channel"]
    agent = SupportAgent(before, OfflineModel(), share_cases=False)
    agent.turn("cy", "Please email me from now on. The parcel is late again.")
    agent.resolve("cy", "Rebooked the courier.")
    current = [m for m in before.long_term.all(scope=scope) if m.key is not None]
    assert [(m.key, m.text) for m in current] == [("contact_channel", "Customer said: Please email me from now on.")]
    system = agent.turn("cy", "Where is my parcel?", dry_run=True).report.system_prompt
    assert "phone" not in system and "text me" not in system


def test_an_operators_key_in_a_data_dir_from_before_is_adopted(before: Memory) -> None:
    agent = SupportAgent(before, OfflineModel(), share_cases=False)
    agent.turn("bea", "Actually text me on my mobile from now on. My parcel is late.")
    agent.resolve("bea", "Rebooked the courier.")
    profile = before.long_term.profile(customer_scope("bea"))
    assert [(m.key, m.text) for m in profile] == [
        ("contact", "Customer said: Actually text me on my mobile from now on."), ("plan", "Bea is on the annual plan")]


# -- policies are found by what they are about -----------------------------------------------


def test_a_question_finds_the_nearest_fact_keys_by_name_and_description(before: Memory) -> None:
    assert [f.key for f in before.facts.search("Can I get my money back on the annual plan?")] == [
        "refund_window_days_annual"]
    assert before.facts.search("My label printer is offline") == []


def test_a_configured_model_searches_the_policies_with_the_same_search(before: Memory) -> None:
    model = ScriptedModel([
        ChatResponse("", (ToolCall("t1", "search_policy", {"query": "money back on the annual plan"}),), "tool_use"),
        "You have 60 days on the annual plan.",
    ])
    reply = SupportAgent(before, model, share_cases=False).turn("bea", "Can I get my money back?", dry_run=True)
    assert [t["name"] for t in model.requests[0]["tools"]] == ["lookup_policy", "search_policy"]
    assert [(t.name, t.result) for t in reply.report.tool_uses] == [
        ("search_policy", "refund_window_days_annual: 60 (Days to ask for a refund on an annual plan)")]


def test_the_offline_model_finds_the_policy_and_answers_from_what_it_recalled(before: Memory) -> None:
    agent = SupportAgent(before, OfflineModel(), share_cases=False)
    reply = agent.turn("bea", "Can I get my money back on the annual plan?", dry_run=True)
    assert [t.name for t in reply.report.tool_uses] == ["search_policy"]
    assert "refund_window_days_annual: 60" in reply.text
    # nothing shares a word with the question: it answers from what the report says it recalled
    other = agent.turn("bea", "The label printer is offline", dry_run=True)
    assert other.report.memories and "no relevant memory" not in other.text
    assert all(m.text in other.text for m in other.report.memories[:2])


def test_the_problem_is_found_in_any_message_of_the_ticket_and_a_preference_is_never_it(memory: Memory) -> None:
    agent = SupportAgent(memory, OfflineModel(), share_cases=False)
    agent.turn("dan", "Good morning! Please text me, never email.")
    agent.turn("dan", "the thermostat shows no temperature")
    done = agent.resolve("dan", "Replaced the thermostat battery.")
    assert done.episode.problem == "the thermostat shows no temperature"
    agent.turn("eve", "Hi! Please text me from now on.")
    only = agent.resolve("eve", "Noted the contact preference.")
    assert only.episode.problem == ""
    system = agent.turn("eve", "Did you note the contact preference?", dry_run=True).report.system_prompt
    assert any(t.endswith("] Previously: Noted the contact preference.") for t in sections(system)[SECTION_TITLES[1]])
