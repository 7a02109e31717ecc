"""Shared cases: another customer never sees anything personal of someone else, even a surname or a
town that no list knows and that is an ordinary word ("sugar", "sandwich")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import OpenMemory
from fourfold.agent import SupportAgent, customer_scope
from fourfold.episodic import SHARED_SCOPE
from fourfold.models import OfflineModel
from fourfold.text.gazetteer import known

FIX = "pinning the router to 2.4 GHz stopped the wifi drops"


@pytest.fixture
def agent(open_memory: OpenMemory, tmp_path: Path) -> Iterator[SupportAgent]:
    with open_memory(tmp_path / "data") as mem:
        yield SupportAgent(mem, OfflineModel())


def _carries(text: str, word: str) -> bool:
    return re.search(rf"\b{word}\b", text, re.I) is not None


def test_the_words_are_unknown_to_the_lists() -> None:
    """What the tests below show holds without the gazetteer."""
    assert known("sugar") is None and known("sandwich") is None


@pytest.mark.xfail(reason="the reader misses a lowercase signature name that is an ordinary word ('regards, sugar')",
                   strict=True)
def test_a_surname_the_operator_repeats_from_the_customers_signature_stays_behind(agent: SupportAgent) -> None:
    agent.turn("alice", "The wifi on my router drops each hour. Thanks a lot, sugar")
    case = agent.resolve("alice", f"told sugar that {FIX}").case
    assert case is not None
    prompt = agent.turn("bob", "my router keeps dropping the wifi, what can I do?").report.system_prompt
    assert FIX in prompt  # the fix travels ...
    assert not _carries(prompt, "sugar")  # ... and alice's surname does not


def test_a_town_in_the_customers_statement_stays_behind_once_others_use_it_for_other_things(
        agent: SupportAgent) -> None:
    """The first ticket's ordinary words travel (no one else has used them); when customers then
    use "sandwich" about anything but the problem, it is masked in the case already written."""
    agent.turn("alice", "The wifi on my router drops each hour in our sandwich shop.")
    agent.resolve("alice", FIX)
    for who, problem in (("carl", "my parcel is late"), ("dina", "the invoice total is wrong")):
        agent.turn(who, f"{problem}, we are the sandwich bakery")
        agent.resolve(who, "sorted it out")
    prompt = agent.turn("bob", "my router keeps dropping the wifi, what can I do?").report.system_prompt
    assert FIX in prompt
    assert not _carries(prompt, "sandwich")


def test_a_town_several_customers_use_about_other_problems_never_travels(agent: SupportAgent) -> None:
    for who, problem in (("carl", "my parcel is late"), ("dina", "the invoice total is wrong"),
                         ("ezra", "I cannot log in")):
        agent.turn(who, f"{problem}, greetings to the sandwich team")
        agent.resolve(who, "sorted it out")
    agent.turn("alice", "The wifi on my router drops each hour in our sandwich shop.")
    case = agent.resolve("alice", FIX).case
    assert case is not None and not _carries(case.goal, "sandwich")
    assert "router drops each hour" in case.goal  # the problem's own words still travel
    prompt = agent.turn("bob", "my router keeps dropping the wifi, what can I do?").report.system_prompt
    assert FIX in prompt and not _carries(prompt, "sandwich")


def test_a_word_other_customers_use_about_the_same_problem_travels(agent: SupportAgent) -> None:
    """The lever masks words that are nobody's problem vocabulary, not the problem's."""
    for who in ("carl", "dina"):
        agent.turn(who, "The zorblax router drops the wifi every hour")
        agent.resolve(who, "sorted it out")
    agent.turn("alice", "My zorblax router drops the wifi every hour.")
    case = agent.resolve("alice", FIX).case
    assert case is not None and "zorblax router drops the wifi" in case.goal


def test_a_rewritten_case_is_still_erased_with_its_customer(agent: SupportAgent) -> None:
    agent.turn("alice", "The wifi on my router drops each hour in our sandwich shop.")
    first = agent.resolve("alice", FIX).case
    for who, problem in (("carl", "my parcel is late"), ("dina", "the invoice total is wrong")):
        agent.turn(who, f"{problem}, we are the sandwich bakery")
        agent.resolve(who, "sorted it out")
    mem = agent.memory
    cases = mem.episodes.episodes(scope=SHARED_SCOPE)
    alices = [c for c in cases if mem.episodes.sources([c.id]).get(c.id) == customer_scope("alice")]
    assert first is not None and [c.id for c in alices] != [first.id]  # rewritten: a new episode
    assert len(alices) == 1 and not _carries(alices[0].goal, "sandwich") and alices[0].ts == first.ts
    agent.forget_customer("alice")
    assert not any(FIX in c.outcome for c in mem.episodes.episodes(scope=SHARED_SCOPE))


def test_a_rewrite_never_brings_back_a_case_another_process_erased(
        open_memory: OpenMemory, agent: SupportAgent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """alice is erased by another process while carl's ticket rewrites her case: the rewrite
    finds her case gone and writes no copy of it."""
    agent.turn("alice", "The wifi on my router drops each hour in our sandwich shop.")
    agent.resolve("alice", FIX)
    log = agent.memory.episodes
    alice = customer_scope("alice")
    alices = {c.id for c in log.episodes(scope=SHARED_SCOPE) if log.sources([c.id]).get(c.id) == alice}
    with open_memory(tmp_path / "data") as other:
        erased: list[int] = []

        def erase_alice(touches_alice):  # type: ignore[no-untyped-def]
            """The other process erases alice just before the rewrite's first write of her case."""
            def wrapped(write):  # type: ignore[no-untyped-def]
                def call(*args, **kwargs):  # type: ignore[no-untyped-def]
                    if not erased and touches_alice(*args, **kwargs):
                        erased.append(other.episodes.forget_derived(alice))
                    return write(*args, **kwargs)
                return call
            return wrapped

        monkeypatch.setattr(log, "insert", erase_alice(
            lambda episodes, derived_from=None, **_: alice in (derived_from or {}).values())(log.insert))
        monkeypatch.setattr(log, "forget", erase_alice(lambda episode_id, *_, **__: episode_id in alices)(log.forget))
        agent.turn("carl", "my parcel is late, we are the sandwich bakery")
        agent.resolve("carl", "sorted it out")  # shows "sandwich" is nobody's problem word: a rewrite
    assert erased == [1], "no rewrite of alice's case: the test did not reach the race"
    monkeypatch.undo()
    cases = log.episodes(scope=SHARED_SCOPE)
    assert not any(FIX in c.outcome for c in cases)
    assert customer_scope("alice") not in log.sources([c.id for c in cases]).values()


@pytest.mark.xfail(reason="the reader does not read a lowercase town that is an ordinary word ('our pinning shop')",
                   strict=True)
@pytest.mark.parametrize("alice_first", [True, False], ids=["case-then-place", "place-then-case"])
def test_a_town_that_is_also_a_word_of_the_fix_stays_behind_in_the_problem(
        agent: SupportAgent, alice_first: bool) -> None:
    """alice's town is "pinning", and the operator's fix says "pinning the router": once some
    customer gives the word as their own place, the fix keeps it (it is the operator's) but the
    problem that quotes alice does not."""
    def alice() -> None:
        agent.turn("alice", "The wifi on my router drops each hour in our pinning shop.")
        agent.resolve("alice", FIX)

    def carl() -> None:
        agent.turn("carl", "my parcel is late, greetings from pinning")
        agent.resolve("carl", "sorted it out")

    for step in ((alice, carl) if alice_first else (carl, alice)):
        step()
    prompt = agent.turn("bob", "my router keeps dropping the wifi, what can I do?").report.system_prompt
    assert FIX in prompt  # the fix travels with its own "pinning" ...
    problem = prompt.split(FIX)[0]
    assert "router drops each hour" in prompt and not _carries(prompt.replace(FIX, ""), "pinning"), problem


@pytest.mark.parametrize(("message", "outcome", "town"), [
    ("xanthe satin - chicken office. Password reset emails never arrive in my inbox in our chicken shop.",
     "the reset email was in the spam folder; whitelisting noreply fixed delivery", "chicken"),
    ("dear support, kasimir pocket of matching writing. The bank transfer payment is not showing as received "
     "in our matching shop.", "the transfer lacked the payment reference; matching it by amount released the order",
     "matching"),
], ids=["town-in-the-introduction", "town-the-fix-also-holds"])
def test_a_town_the_customer_also_wrote_in_their_introduction_stays_behind_in_the_first_case(
        agent: SupportAgent, message: str, outcome: str, town: str) -> None:
    """No other ticket has said yet that the word is a place, and no rule reads these
    introductions (`own_words` finds no place in either): the customer's writing it besides the
    problem is the evidence. The fix keeps the operator's own "matching"."""
    agent.turn("alice", message)
    case = agent.resolve("alice", f"Emailed her: {outcome}").case
    assert case is not None and not _carries(case.goal, town)
    question = message.split(". ", 1)[1].split(" in our ")[0]
    prompt = agent.turn("bob", f"{question}, what can I do?").report.system_prompt
    assert outcome in prompt  # the fix travels ...
    assert not _carries(prompt.replace(outcome, ""), town)  # ... and alice's town does not


def test_a_problem_word_the_customer_repeats_still_travels_with_the_documents(agent: SupportAgent) -> None:
    """The guard: a word written twice is masked only when nothing vouches for it."""
    agent.memory.docs.ingest_text("A router that drops the wifi every hour needs a firmware update.", source="wifi.md")
    agent.turn("alice", "The wifi on my router drops every hour. The router is new.")
    case = agent.resolve("alice", FIX).case
    assert case is not None and "wifi on my router drops every hour" in case.goal
