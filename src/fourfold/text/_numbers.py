"""Payment and bank numbers: card numbers told apart from order numbers and IMEIs, and IBANs.

Both are found with any separator between their digit groups (spaces, dashes, dots,
slashes, underscores...) and decided by their checksums: Luhn for cards, mod-97 and the
country's format for IBANs. Many order, tracking and device numbers pass the Luhn check,
so the digits alone do not make a card: the words just before the number decide (card,
visa, charge... or order, tracking, IMEI...), then an expiry date after it, then whether it
lies in an issuer's range with that issuer's length.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

from fourfold.text._rules import compile_re2

__all__ = ["CARD_GATE", "IBAN_GATE", "PATTERNS", "find_cards", "find_ibans", "is_card_context"]

# Digit groups of 3+ joined by separators of 1-3 characters that are neither letters,
# digits, line breaks nor list punctuation. A card's groups share one separator.
_RUN = compile_re2(r"\d{3,}(?:[^A-Za-z0-9\n,;()\[\]]{1,3}\d{3,})*")
_GROUP = compile_re2(r"\d+")
_WORD = compile_re2(r"[a-z]+")
_CARD_WORDS = frozenset(
    """
    card cards visa mastercard amex discover maestro jcb diners unionpay credit debit cc ccn
    pan charge charged charging pay paid paying payment exp expiry expires cvv cvc
    tarjeta karte kreditkarte carte cartão carta kaart karta kart kartu
    """.split()
)
_OTHER_WORDS = frozenset(
    """
    order orders ord tracking track shipment parcel package ticket case invoice inv ref
    reference confirmation booking reservation serial sn imei meid iccid sim account acct
    member membership customer id sku upc ean isbn barcode rma claim policy transaction txn
    receipt po device phone
    """.split()
)
_EXPIRY_AFTER = compile_re2(r"[^\n\d]{0,20}(?:(?:0[1-9]|1[0-2])\s*/\s*\d{2}(?:\d{2})?(?:\D|$)|(?i:cvv|cvc)(?:\W|$))")
_LOOK_BACK = 40
_CLAUSE_END = compile_re2(r"[.;:!?\n]")
_IBAN_START = compile_re2(r"\b[A-Za-z]{2}\d{2}")
_BBAN_PART = compile_re2(r"(\d+)!?[nac]")
CARD_GATE = compile_re2(r"\d{3}")
IBAN_GATE = compile_re2(r"[A-Za-z]{2}\d{2}")
PATTERNS = (_RUN, _GROUP, _WORD, _EXPIRY_AFTER, _CLAUSE_END, _IBAN_START, _BBAN_PART, CARD_GATE, IBAN_GATE)


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _grouped_like_a_card(groups: list[str]) -> bool:
    """Cards print in groups of 4 (Amex 4-6-5), or in equal groups; dates, phones and order
    ids group otherwise."""
    if len(groups) == 1:
        return True
    return (len(groups[0]) == 4 and all(3 <= len(g) <= 8 for g in groups)) or len({len(g) for g in groups[:-1]}) == 1


def _in_issuer_range(digits: str) -> bool:
    """Does the number start like a card of an issuer that uses this length?"""
    n, two, four = len(digits), int(digits[:2]), int(digits[:4])
    return (
        (digits[0] == "4" and n in (13, 16, 19))  # Visa
        or ((51 <= two <= 55 or 2221 <= four <= 2720) and n == 16)  # Mastercard
        or (two in (34, 37) and n == 15)  # American Express
        or ((four == 6011 or 644 <= int(digits[:3]) <= 649 or two == 65) and 16 <= n <= 19)  # Discover
        or (3528 <= four <= 3589 and 16 <= n <= 19)  # JCB
        or ((300 <= int(digits[:3]) <= 305 or two in (36, 38, 39)) and 14 <= n <= 19)  # Diners
        or (two == 62 and 16 <= n <= 19)  # UnionPay
    )


def is_card_context(before: str) -> bool | None:
    """True after a card word, False after an order/tracking/device word, None without either.

    Only the clause the number ends counts ("Ticket 38: number 4012..." is not a ticket
    number); a label right before the number ("Card: 4111...") belongs to it.
    """
    label = before.rstrip(" \t:#=-")
    clause = _CLAUSE_END.split(label[-_LOOK_BACK:])[-1]
    for word in reversed(_WORD.findall(clause.lower())):
        if word in _CARD_WORDS:
            return True
        if word in _OTHER_WORDS:
            return False
    return None


def _chains(text: str, start: int, end: int) -> Iterator[tuple[int, int, list[str]]]:
    """The run's maximal chains of groups joined by one and the same separator."""
    groups = [(m.start() + start, m.end() + start) for m in _GROUP.finditer(text[start:end])]
    first = 0
    for i in range(1, len(groups) + 1):
        if i < len(groups) and (i == first + 1 or text[groups[i - 1][1] : groups[i][0]] == text[groups[first][1] : groups[first + 1][0]]):
            continue
        yield groups[first][0], groups[i - 1][1], [text[s:e] for s, e in groups[first:i]]
        first = i


def find_cards(text: str) -> Iterator[tuple[int, int]]:
    """Spans of card numbers: Luhn-valid, card-grouped, and a card by context or issuer range."""
    for run in _RUN.finditer(text):
        if run.start() and text[run.start() - 1].isalnum():
            continue  # part of a word or an identifier
        whole = [(run.start(), run.end(), _GROUP.findall(run.group()))]
        for start, end, groups in whole + [c for c in _chains(text, *run.span()) if c[:2] != run.span()]:
            digits = "".join(groups)
            if not 13 <= len(digits) <= 19 or not _grouped_like_a_card(groups) or not _luhn(digits):
                continue
            if end < len(text) and text[end].isalpha():
                continue
            context = is_card_context(text[max(0, start - 200) : start])
            expiry = _EXPIRY_AFTER.match(text[end : end + 40]) is not None
            if context is None:
                context = expiry or _in_issuer_range(digits)
            elif not context:
                context = expiry
            if context:
                yield start, end


def _iban_value(char: str) -> int:
    return ord(char) - 55 if char.isalpha() else ord(char) - 48


@cache
def _iban_length(country: str) -> int:
    """The length of the country's IBANs (from python-stdnum's registry), or 0 if it has none."""
    from stdnum import numdb

    info = numdb.get("iban").info(country)[0][1]
    structure = info.get("bban", "") if info else ""
    return 4 + sum(int(part) for part in _BBAN_PART.findall(structure)) if structure else 0


def find_ibans(text: str) -> Iterator[tuple[int, int]]:
    """Spans of IBANs with any separators whose length, mod-97 checksum and country format
    hold. The country fixes the length, so each candidate costs one pass and one check."""
    from stdnum import iban

    for match in _IBAN_START.finditer(text):
        head = text[match.start() : match.end()].upper()
        length = _iban_length(head[:2])
        if not length:
            continue
        compact, pos, end = [head], match.end(), len(text)
        size = 4
        while pos < end and size < length:
            char = text[pos]
            if char.isascii() and char.isalnum():
                compact.append(char.upper())
                size += 1
                pos += 1
                continue
            gap = pos
            while gap < end and gap - pos < 2 and not text[gap].isalnum() and text[gap] != "\n":
                gap += 1
            if gap == pos or gap >= end or not text[gap].isascii() or not text[gap].isalnum():
                break
            pos = gap
        following = text[pos : pos + 1]
        if size == length and not (following.isascii() and following.isalnum()):
            number = "".join(compact)
            # The IBAN's own checks (country, length, format, mod-97), not a bank's national one.
            if _mod97(number[4:] + number[:4]) == 1 and _valid_iban(iban, number):
                yield match.start(), pos


def _valid_iban(module: object, number: str) -> bool:
    from stdnum.exceptions import ValidationError

    try:
        module.validate(number, check_country=False)  # type: ignore[attr-defined]
    except ValidationError:
        return False
    return True


def _mod97(number: str) -> int:
    remainder = 0
    for char in number:
        value = _iban_value(char)
        remainder = (remainder * (100 if value > 9 else 10) + value) % 97
    return remainder
