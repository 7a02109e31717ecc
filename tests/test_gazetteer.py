"""The name and place recogniser: lowercase names and towns are known, whatever case they are
typed in; a known word of a customer's reaches a shared case only as the company's vocabulary."""

from __future__ import annotations

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
