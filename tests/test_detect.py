"""The detector: one set of rules, two policies (secrets; personal details), checked on the
corpus in secrets_corpus.py, and a check that no rule can be skipped by its pre-filter."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fourfold.errors import InvalidInput
from fourfold.text import POLICIES, detect, redact
from fourfold.text._personal_fallback import PERSONAL_RULES as FALLBACK_RULES
from fourfold.text._rules import Rule
from fourfold.text.redact import _select, redact_many, rules
from fourfold.types import Redaction
from secrets_corpus import ORDINARY, PERSONAL, SECRETS, Case

_NEVER = re.compile(r"(?!)")


def test_the_corpus_is_broad() -> None:
    assert len({c.kind for c in SECRETS}) >= 40
    assert len(ORDINARY) >= 30
    assert {c.kind for c in PERSONAL} >= {"name", "email", "phone", "postal_address", "order_number",
                                         "account_number", "ticket_number", "card_number", "iban", "preference"}


@pytest.mark.parametrize("case", SECRETS, ids=[f"{c.kind}-{i}" for i, c in enumerate(SECRETS)])
def test_each_secret_is_removed_and_named(case: Case) -> None:
    """Each secret goes; a kind structure names (password, private_key, card_number...) is
    reported as such, a vendor's token by its gitleaks rule or as a token or secret."""
    out, found = redact(case.text)
    assert case.secret not in out
    kinds = {r.kind for r in found}
    assert case.kind in kinds if case.kind in _STRUCTURE_KINDS else kinds


_STRUCTURE_KINDS = {"private_key", "passphrase", "card_number", "iban", "jwt", "bearer_token", "basic_auth"}


@pytest.mark.parametrize("sentence", ORDINARY)
def test_ordinary_support_text_is_kept(sentence: str) -> None:
    assert redact(sentence) == (sentence, ())


#: Kinds a standard defines (libphonenumber, the address form, Luhn, mod-97): each one is found.
_STANDARD = {"email", "phone", "iban"}


@pytest.mark.parametrize("case", [c for c in PERSONAL if c.kind in _STANDARD],
                         ids=[f"{c.kind}-{i}" for i, c in enumerate(PERSONAL) if c.kind in _STANDARD])
def test_details_a_standard_defines_are_always_removed(case: Case) -> None:
    out, _ = redact(case.text, policy="personal")
    assert case.secret not in out


def test_the_model_removes_the_personal_details_of_the_corpus() -> None:
    """Names, addresses, order, account and ticket numbers and the rest are the reader's (a
    trained model): it removes nearly all of the corpus's, each under its kind or one of the
    same family (an order, an account or a ticket number is one kind of identifier to it)."""
    learned = [c for c in PERSONAL if c.kind not in _STANDARD]
    removed = [c for c in learned if c.secret not in redact(c.text, policy="personal")[0]]
    assert len(removed) / len(learned) >= 0.9, [c.text for c in learned if c not in removed]


def test_the_personal_policy_removes_secrets_too() -> None:
    for case in SECRETS:
        assert case.secret not in redact(case.text, policy="personal")[0], case.kind


def test_personal_details_stay_under_the_secrets_policy() -> None:
    kept = [c for c in PERSONAL if c.kind not in {"card_number", "iban"} and redact(c.text)[1]]
    assert kept == []


def test_detect_names_kinds_and_spans_but_never_the_value() -> None:
    text = "Called Maria back on +1 415 555 0142: password=hunter2"
    found = detect(text, policy="personal")
    assert [(r.kind, text[r.start : r.end]) for r in found] == [
        ("name", "Maria"), ("phone", "+1 415 555 0142"), ("password", "hunter2")]
    assert all(isinstance(r, Redaction) and "hunter2" not in repr(r) for r in found)
    assert detect(text) == (found[-1],)
    assert POLICIES == ("secrets", "personal")


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(InvalidInput, match="policy"):
        detect("x", policy="everything")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("order 4417 1234 5678 9113 was refunded", None),
        ("card 4417 1234 5678 9113 was refunded", "card_number"),
        ("refund 4417 1234 5678 9113 exp 09/28", "card_number"),
        ("order 4417 1234 5678 9113 exp 09/28", "card_number"),
        ("IMEI 356938035643809", None),
        ("imei of the phone: 35 693803 564380 9", None),
        ("the number 4417123456789113 again", "card_number"),  # a Visa by its issuer range
        ("the number 9417123456789116 again", None),  # Luhn-valid, but no issuer uses it
    ],
)
def test_card_or_order_number_is_decided_by_context(text: str, kind: str | None) -> None:
    assert [r.kind for r in detect(text)] == ([kind] if kind else [])


def test_settings_named_like_tokens_are_not_secrets() -> None:
    for line in ("max_tokens=1024", "token_ttl=3600", "token_type=bearer", "auth_timeout: 30",
                 "SharedAccessKeyName=RootManageSharedAccessKey"):
        assert detect(line) == (), line


def test_a_document_split_key_is_caught_by_its_tail() -> None:
    tail = "AAAAB3NzaC1yc2EAAAADAQABAAABAQC7\nMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3S\n-----END PRIVATE KEY-----"
    out, found = redact(f"continued:\n{tail}")
    assert "MzEfYyjiWA4R4" not in out and [r.kind for r in found] == ["private_key"]


# -- finding 9: a pre-filter must never skip a rule silently ------------------------------------


def _without(rule_index: int, active: tuple, trigger: str | None) -> tuple:
    """The rules with one trigger (or, with None, the gate) of one rule taken away."""
    rule = active[rule_index]
    triggers = tuple(t for t in rule.triggers if t != trigger)
    gate = None if trigger is None else rule.gate
    if not triggers and gate is None:
        gate = _NEVER  # a rule with neither would run always; taking the last one away means never
    return (*active[:rule_index], dataclasses.replace(rule, triggers=triggers, gate=gate), *active[rule_index + 1 :])


def _first_line(policy: str) -> list[Rule]:
    """The rules, without the earlier personal rules that stand beside the reader as a second
    line: what they find the reader mostly finds too, so each is tested on its own merits."""
    return [r for r in rules(policy) if r not in FALLBACK_RULES]  # type: ignore[arg-type]


def _mutations(policy: str) -> list[tuple[int, str | None]]:
    """Every trigger and gate of the rules written here (gitleaks' keywords are its own: the
    vendored file gates each rule by them the way gitleaks does)."""
    active = _first_line(policy)
    ours = [(i, r) for i, r in enumerate(active) if r.policy == policy and not r.vendored]
    return [(i, t) for i, r in ours for t in r.triggers] + [(i, None) for i, r in ours if r.gate is not None]


@pytest.mark.parametrize("policy", POLICIES)
def test_every_trigger_and_gate_has_a_case_that_fails_without_it(policy: str) -> None:
    """Removing any one trigger (or gate) from any rule lets a corpus case through.

    This is the mutation test of finding 9, run for every rule: each trigger has a case in
    neutral prose that no other trigger of its rule, and no other rule, would catch.
    """
    corpus = [c.text for c in SECRETS] + ([c.text for c in PERSONAL] if policy == "personal" else [])
    active = _first_line(policy)
    expected = {text: _select(text, active=active) for text in corpus}
    uncovered = []
    for index, trigger in _mutations(policy):
        mutated = _without(index, active, trigger)
        texts = [t for t in corpus if trigger is None or trigger in t.lower()]
        if all(_select(t, active=mutated) == expected[t] for t in texts):
            uncovered.append((active[index].kind, trigger))
    assert uncovered == []


def test_every_rule_finds_something_in_the_corpus() -> None:
    corpus = [c.text for c in SECRETS + PERSONAL]
    active = [r for r in rules("personal") if not r.vendored]
    silent = [r.kind for r in active if not any(list(r.find(t)) for t in corpus)]
    assert silent == []


def _corpus_texts() -> list[str]:
    return [c.text for c in SECRETS] + list(ORDINARY) + [c.text for c in PERSONAL]


def test_redact_many_gives_each_texts_redact() -> None:
    texts = _corpus_texts()
    assert redact_many(texts) == [redact(t) for t in texts]
    assert any(found for _, found in redact_many(texts))  # the corpus has secrets to find


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(_corpus_texts()) | st.text(max_size=40), min_size=8, max_size=30))  # 8: the batch path
def test_redact_many_of_any_batch_is_each_texts_redact(texts: list[str]) -> None:
    """A batch mixing secrets, ordinary sentences and noise: no secret is missed because the
    batch's triggers were looked for all at once, and ordinary text is left as it was."""
    assert redact_many(texts) == [redact(t) for t in texts]


def test_a_secret_alone_among_ordinary_sentences_is_still_found() -> None:
    for case in SECRETS:
        batch = [*ORDINARY[:10], case.text, *ORDINARY[10:20]]
        cleaned = redact_many(batch)
        assert case.secret not in cleaned[10][0], case.kind
        assert [text for text, _ in cleaned[:10]] == list(ORDINARY[:10])
