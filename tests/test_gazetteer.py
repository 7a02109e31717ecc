"""The name and place recogniser: lowercase names and towns are known, whatever case they are
typed in; a known word of a customer's reaches a shared case only as the company's vocabulary."""

from __future__ import annotations

import re

from fourfold import Memory
from fourfold.agent import customer_scope
from fourfold.agent.cases import CaseBase
from fourfold.agent.deidentify import Ticket
from fourfold.text.gazetteer import known, known_words


def _found(text: str) -> list[tuple[str, str]]:
    return [(text[a:b], kind) for a, b, kind in known_words(text)]


def test_lowercase_given_names_surnames_and_towns_are_known() -> None:
    assert _found("hi, ambrose baker here from reading") == [
        ("ambrose", "given_name"), ("baker", "surname"), ("reading", "place")]
    assert known("Baker") == known("BAKER") == "surname"
    assert known("derby") == "place" and known("john") == "given_name"


def test_a_place_of_several_words_is_one_span_and_a_comma_parts_it() -> None:
    assert ("stoke-on-trent", "place") in _found("our shop in stoke-on-trent")
    assert ("san jose", "place") in _found("we are in san jose now")
    assert ("san jose", "place") not in _found("san, jose")


def test_support_words_outside_the_lists_are_not_known() -> None:
    # the census list's long tail (one-off entries) holds these; it is left out
    for word in ("invoice", "app", "server", "code", "password", "browser"):
        assert known(word) is None, word


def test_a_known_word_of_the_customer_is_masked_even_when_many_customers_use_it(memory: Memory) -> None:
    """Towns recur across customers: customers' common ground is not enough for a known word."""
    ticket = Ticket("the invoice pdf breaks in our reading shop", (), (), "Cleared the browser cache")
    for who in ("ann", "ben", "cy"):  # about the same problem, even
        memory.episodes.record(goal="the invoice pdf breaks in our reading shop", actions=[], outcome="fixed",
                               success=True, scope=customer_scope(who))
    case = CaseBase(memory).deidentify(ticket)
    assert "invoice pdf breaks" in case.problem
    assert not re.search(r"\breading\b", case.problem)


def test_the_word_that_is_both_a_town_and_a_verb_travels_once_the_company_uses_it(memory: Memory) -> None:
    cases = CaseBase(memory)
    ticket = Ticket("error 502 when reading the invoice pdf", (), (), "Cleared the browser cache")
    before = cases.deidentify(ticket).problem
    assert "reading" not in before and "invoice pdf" in before
    memory.docs.ingest_text("Reading an invoice PDF: open Billing, then Invoices.", source="billing.md")
    after = cases.deidentify(ticket).problem
    assert "error 502 when reading the invoice pdf" in after


def test_operators_outcomes_of_several_customers_are_company_vocabulary(memory: Memory) -> None:
    cases = CaseBase(memory, min_customers=3)
    ticket = Ticket("the mobile app crashes", (), (), "Updated it")
    assert "mobile" not in cases.deidentify(ticket).problem
    for n, who in enumerate(("ann", "ben", "cy")):  # customers' own words: not the company's
        memory.episodes.record(goal="my mobile app crashes", actions=[], outcome=f"fixed {n}", success=True,
                               scope=customer_scope(who))
    assert not cases.company_words()("mobil")
    assert "mobile" not in cases.deidentify(ticket).problem
    for who in ("dee", "eve", "fay"):  # the operators' outcomes of three customers' tickets
        memory.episodes.record(goal="it crashes", actions=[], outcome="updated the mobile app", success=True,
                               scope=customer_scope(who))
    assert cases.company_words()("mobil")
    assert "the mobile app crashes" in cases.deidentify(ticket).problem


def test_a_town_the_operator_capitalizes_is_masked_in_the_fix(memory: Memory) -> None:
    ticket = Ticket("the engineer never came. ambrose here from reading", (), (),
                    "Rebooked the engineer from the Reading depot for Tuesday")
    cases = CaseBase(memory)
    case = cases.deidentify(ticket)
    assert "Reading" not in case.fix and "Rebooked the engineer" in case.fix
    # a town the customer never named is the company's own: the fix keeps it
    other = cases.deidentify(Ticket("the engineer never came", (), (), "Rebooked the engineer from the Reading depot"))
    assert "Reading depot" in other.fix


def test_the_statement_is_the_sentence_that_shares_the_fixs_words_not_an_introduction(memory: Memory) -> None:
    """"treasure" and "wool" are in no list (a surname and a town held out): what keeps them
    behind is that the introduction is not where the problem is stated."""
    ticket = Ticket("ambrose treasure - wool office. Two-factor codes by SMS are not being delivered.", (), (),
                    "Switched two-factor to the authenticator app, which works without SMS")
    problem = CaseBase(memory).deidentify(ticket).problem
    assert "SMS are not being delivered" in problem  # "delivered": ordinary, in the statement
    assert [w for w in ("ambrose", "treasure", "wool") if w in problem] == []


def test_a_word_one_customer_gives_as_their_town_is_no_ordinary_word_in_anothers_case(memory: Memory) -> None:
    """"sandwich" is in no list; one customer's "greetings from sandwich" says it is a place,
    so another's "in our sandwich shop" keeps it behind, for the rest of the desk's cases."""
    cases = CaseBase(memory)
    ticket = Ticket("The invoice PDF breaks in our sandwich shop.", (), (), "Cleared the browser cache")
    assert "sandwich" in cases.deidentify(ticket).problem  # nothing says it is a place yet
    memory.episodes.record(goal="greetings from sandwich, my parcel is late", actions=[], outcome="Resent it",
                           success=True, scope=customer_scope("cleo"))
    problem = cases.deidentify(ticket).problem
    assert "sandwich" not in problem and "invoice PDF breaks" in problem
