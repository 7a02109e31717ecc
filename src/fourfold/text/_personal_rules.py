"""The personal-details policy: what identifies a customer, removed from anything shared.

The reader (`fourfold.text.reader`, a trained model) finds what identifies someone: names,
organisations, places, street addresses, account, order, tenant, host and user names, dates
of birth, numbers written in words, network addresses, and values whose context makes them a
credential; and the sentences that state a preference ("please always contact me by
email"), which say how to treat one customer and are never shared. Rules remain only where a
standard defines the answer: email addresses (the RFC 5322 address form) and phone numbers
(Google's libphonenumber). Card numbers and IBANs are secrets (Luhn, mod-97), removed from
everything stored, so this policy applies the secret rules too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache

from fourfold.text._personal_fallback import PERSONAL_RULES as FALLBACK_RULES
from fourfold.text._rules import Rule, compile_re2, regex_rule

__all__ = ["MODEL_KINDS", "PERSONAL_RULES"]

# Regions whose national formats are tried besides international (+...) numbers.
_PHONE_REGIONS = ("US", "GB", "DE", "FR", "IN", "AU")


def _find_phones(text: str) -> Iterator[tuple[int, int]]:
    # Imported on first use: its metadata tables cost a cold command (`fourfold recall`)
    # about 60 ms, and only the "personal" policy looks for phone numbers.
    import phonenumbers

    for region in _PHONE_REGIONS:
        for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.POSSIBLE):
            if sum(c.isdigit() for c in match.raw_string) >= 7:
                yield match.start, match.end


#: The model's span kinds as the detector names them (the names earlier versions used stay).
MODEL_KINDS: dict[str, str] = {
    "person": "name", "organisation": "organisation", "place": "place", "street_address": "postal_address",
    "account": "account_number", "order": "order_number", "tenant": "tenant", "host": "host_name",
    "user_name": "user_name", "birth_date": "birth_date", "spelled_number": "spelled_number",
    "network_address": "network_address", "credential": "credential", "email": "email", "phone": "phone",
}


@lru_cache(maxsize=256)
def _reading(text: str) -> tuple[tuple[tuple[int, int, str], ...], tuple[tuple[int, int], ...]]:
    """The model's spans (start, end, kind) and preference sentences of `text`, read once for
    all of this policy's rules."""
    from fourfold.text.reader import read

    reading = read(text)
    spans = tuple((s.start, s.end, MODEL_KINDS[s.kind]) for s in reading.spans)
    preferences = tuple((s.start, s.end) for s in reading.of_role("preference", "preference_change"))
    return spans, preferences


def _model_finder(kind: str) -> Callable[[str], Iterator[tuple[int, int]]]:
    def find(text: str) -> Iterator[tuple[int, int]]:
        for start, end, found in _reading(text)[0]:
            if found == kind:
                yield start, end

    return find


def _find_preferences(text: str) -> Iterator[tuple[int, int]]:
    yield from _reading(text)[1]


#: Kinds a standard defines: the model's guesses at them are left to the standard's rules.
_BY_STANDARD = frozenset({"email", "phone"})
#: The model's rules run on any text that is not all white space (every span it finds is).
_ANY_WORD = compile_re2(r"\S")
_PHONE_GATE = compile_re2(r"\d(?:\D{0,3}\d){6}")


PERSONAL_RULES: tuple[Rule, ...] = (
    regex_rule("email", r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b", triggers=("@",), policy="personal"),
    Rule("phone", _find_phones, "personal", gate=_PHONE_GATE, patterns=(_PHONE_GATE,)),
    *(Rule(kind, _model_finder(kind), "personal", gate=_ANY_WORD, patterns=(_ANY_WORD,))
      for kind in dict.fromkeys(MODEL_KINDS.values()) if kind not in _BY_STANDARD),
    Rule("preference", _find_preferences, "personal", gate=_ANY_WORD, patterns=(_ANY_WORD,)),
    # Until the reader finds every name and number the earlier rules did, they stay beside it: what
    # either finds is removed from a shared case (a span it misses reaches another customer).
    *(rule for rule in FALLBACK_RULES if rule.kind not in ("email", "phone")),
)
