"""The secrets policy: credentials, keys and payment numbers, removed from everything stored.

Structure first (`_structure`): fields, flags, headers, cookies, URLs, key material, encoded
credentials and random tokens in a credential's context, whoever issued them. Then vendor
token formats from gitleaks' public rule file (`_gitleaks`), which `structure_only` turns
off to measure structure alone. Card numbers and IBANs by their checksums (`_numbers`).
"""

from __future__ import annotations

from functools import cache

from fourfold.text import _numbers, _shapes, _structure
from fourfold.text._gitleaks import Vendored, load
from fourfold.text._rules import Pattern, Rule

__all__ = ["NUMBER_RULES", "STRUCTURE_PATTERNS", "vendored"]

NUMBER_RULES: tuple[Rule, ...] = (
    Rule("card_number", _numbers.find_cards, gate=_numbers.CARD_GATE, patterns=_numbers.PATTERNS),
    Rule("iban", _numbers.find_ibans, gate=_numbers.IBAN_GATE, patterns=_numbers.PATTERNS),
)

#: Every pattern the structure rules use (a test holds them all to RE2).
STRUCTURE_PATTERNS: tuple[Pattern, ...] = _structure.PATTERNS + _shapes.PATTERNS


@cache
def vendored() -> Vendored:
    """gitleaks' rules, read and compiled on first use (about 220 patterns)."""
    return load()
