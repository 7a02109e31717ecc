"""Payment and bank numbers: card numbers told apart from order numbers and IMEIs, and IBANs.

Many order, tracking and device numbers pass the Luhn check, so the digits alone do not
make a card: the words just before the number decide (card, visa, charge... or order,
tracking, IMEI...), then an expiry date after it, then whether it lies in an issuer's range
with that issuer's length.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["find_cards", "find_ibans", "is_card_context"]

_RUN = re.compile(r"(?<![\w\-])(?<!\d[ -])\d(?:[ -]?\d){11,18}(?![\w])(?![ -]\d)")
_WORD = re.compile(r"[a-z]+")
_CARD_WORDS = frozenset(
    """
    card cards visa mastercard amex discover maestro jcb diners unionpay credit debit cc ccn
    pan charge charged charging pay paid paying payment exp expiry expires cvv cvc
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
_EXPIRY_AFTER = re.compile(r"[^\n\d]{0,20}?(?:(?:0[1-9]|1[0-2])\s*/\s*\d{2}(?:\d{2})?\b|\b(?:cvv|cvc)\b)", re.I)
_LOOK_BACK = 40
_CLAUSE_END = re.compile(r"[.;:!?\n]")


def _grouped_like_a_card(candidate: str) -> bool:
    """Cards print in groups of 4 (Amex 4-6-5); dates, phones and order ids group otherwise."""
    groups = re.split(r"[ -]", candidate)
    return len(groups) == 1 or (len(groups[0]) == 4 and all(3 <= len(g) <= 7 for g in groups))


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


def find_cards(text: str) -> Iterator[tuple[int, int]]:
    """Spans of card numbers: Luhn-valid, card-grouped, and a card by context or issuer range."""
    # python-stdnum is imported on first use: it pulls in ssl and pydoc, which a cold command
    # checking a scope name for secrets (where no long digit run occurs) need not pay for.
    from stdnum import luhn

    for match in _RUN.finditer(text):
        candidate = match.group()
        digits = re.sub(r"\D", "", candidate)
        if not 13 <= len(digits) <= 19 or not _grouped_like_a_card(candidate) or not luhn.is_valid(digits):
            continue
        context = is_card_context(text[: match.start()])
        if context is None:
            context = _EXPIRY_AFTER.match(text, match.end()) is not None or _in_issuer_range(digits)
        elif not context:
            context = _EXPIRY_AFTER.match(text, match.end()) is not None
        if context:
            yield match.span()


_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{1,4}){3,9}\b", re.I)


def find_ibans(text: str) -> Iterator[tuple[int, int]]:
    """Spans of IBANs whose country format and mod-97 checksum are valid (python-stdnum)."""
    from stdnum import iban

    for match in _IBAN.finditer(text):
        parts = match.group().split(" ")
        for n in range(len(parts), 0, -1):  # the run may have swallowed a word after the IBAN
            candidate = " ".join(parts[:n])
            if len(candidate.replace(" ", "")) >= 15 and iban.is_valid(candidate):
                yield match.start(), match.start() + len(candidate)
                break
