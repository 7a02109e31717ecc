"""Remove secrets (keys, tokens, passwords, card numbers) from text before it is stored."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from fourfold.types import Redaction

__all__ = ["redact"]

Check = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class _Rule:
    """One kind of secret: a pattern, the group that holds the secret, and a sanity check."""

    kind: str
    pattern: re.Pattern[str]
    group: int = 0
    check: Check | None = None


def _luhn_ok(candidate: str) -> bool:
    """A 13-19 digit number in card-like groups whose Luhn checksum is valid."""
    groups = re.split(r"[ -]", candidate)
    digits = "".join(groups)
    if not 13 <= len(digits) <= 19:
        return False
    if len(groups) > 1 and (len(groups[0]) != 4 or any(not 3 <= len(g) <= 7 for g in groups)):
        return False  # dates, phone numbers and order ids are grouped differently
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# Words that follow "password is" in ordinary support text without being a password.
_NOT_A_VALUE = frozenset(
    """
    a an the my your his her our their this that it its not no now still also too very just
    so being been be is was were are will would should can could must may might shall
    incorrect correct wrong right invalid valid expired expiring required optional missing
    working broken blocked locked unlocked reset changed updated weak strong short long
    case sensitive case-sensitive different same new old temporary fine ok okay good bad
    and or but if when because since which who what where how why for to of on in at by
    with from into about only never always already again there here same empty blank set
    """.split()
)
_TRAILING = ".,;:)\"'"


def _plausible_secret(value: str) -> bool:
    """Reject prose words ("my password is incorrect") that only look like a value."""
    word = value.rstrip(_TRAILING).lower()
    return bool(word) and word not in _NOT_A_VALUE


def _long_or_mixed(value: str) -> bool:
    """A generic "token: value" needs a value that looks machine-made, not a prose word."""
    return len(value) >= 16 or (len(value) >= 6 and any(c.isdigit() for c in value))


_VALUE = r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'<>]+(?<![.,;:)]))"
_PASSWORD_WORD = r"(?:pass(?:word|wd|code|phrase)|pwd)"
_I = re.IGNORECASE

_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
            re.DOTALL,
        ),
    ),
    _Rule("url_password", re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:([^\s/]+)@", _I), 1),
    _Rule("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*")),
    _Rule("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    _Rule("openai_key", re.compile(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    _Rule(
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255})"),
    ),
    _Rule("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[A-Z0-9]{16}\b")),
    _Rule(
        "aws_secret_key",
        re.compile(
            r"\baws[_\-\s]?secret(?:[_\-\s]?access)?(?:[_\-\s]?key)?[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
            _I,
        ),
        1,
    ),
    _Rule("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}")),
    _Rule("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}")),
    _Rule("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])")),
    _Rule(
        "bearer_token",
        re.compile(
            r"\bbearer\s+((?=[A-Za-z0-9\-._~+/]*\d|[A-Za-z0-9\-._~+/]{20})[A-Za-z0-9\-._~+/]{8,}=*)",
            _I,
        ),
        1,
    ),
    _Rule(
        "password", re.compile(rf"\b[A-Za-z0-9_\-]*?{_PASSWORD_WORD}[\"']?\s*=\s*{_VALUE}", _I), 1
    ),
    _Rule(
        "password",
        re.compile(rf"\b[A-Za-z0-9_\-]*?{_PASSWORD_WORD}[\"']?\s*:\s*{_VALUE}", _I),
        1,
        _plausible_secret,
    ),
    _Rule(
        "password",
        re.compile(
            rf"\b{_PASSWORD_WORD}\s+(?:is|was|=)\s+(?:now\s+|still\s+)?(?:(?:set|changed|reset)\s+to\s+)?{_VALUE}"
            rf"|\b{_PASSWORD_WORD}\s+(?:(?:was|has\s+been|got)\s+)?(?:set|changed|reset)\s+to\s+{_VALUE}",
            _I,
        ),
        -1,
        _plausible_secret,
    ),
    _Rule(
        "secret",
        re.compile(
            r"\b[A-Za-z0-9_\-]*(?:api[_\-]?key|apikey|secret|token|access[_\-]?key|auth[_\-]?key)"
            rf"[A-Za-z0-9_\-]*[\"']?\s*=\s*{_VALUE}",
            _I,
        ),
        1,
        lambda v: len(v) >= 4,
    ),
    _Rule(
        "secret",
        re.compile(
            r"\b[A-Za-z0-9_\-]*(?:api[_\-]?key|apikey|secret|token|access[_\-]?key|auth[_\-]?key)"
            rf"[A-Za-z0-9_\-]*[\"']?\s*:\s*{_VALUE}",
            _I,
        ),
        1,
        _long_or_mixed,
    ),
    _Rule(
        "card_number",
        re.compile(r"(?<![\w\-])(?<!\d[ -])\d(?:[ -]?\d){12,18}(?![\w])(?![ -]\d)"),
        0,
        _luhn_ok,
    ),
)


def _group_span(match: re.Match[str], group: int) -> tuple[int, int]:
    """Span of the secret (inside quotes); group -1 means the last group that matched."""
    start, end = match.span(group if group >= 0 else match.lastindex or 0)
    value = match.string[start:end]
    if len(value) > 2 and value[0] == value[-1] and value[0] in "\"'":
        return start + 1, end - 1  # keep the quotes, redact what they hold
    return start, end


def _candidates(text: str) -> Iterator[tuple[int, int, int, str]]:
    """Every (start, end, rule priority, kind) a rule finds, overlapping ones included."""
    for priority, rule in enumerate(_RULES):
        for match in rule.pattern.finditer(text):
            start, end = _group_span(match, rule.group)
            value = text[start:end]
            if value and (rule.check is None or rule.check(value)):
                yield start, end, priority, rule.kind


# Every rule above needs one of these in the text to match (private key header, URL,
# token prefixes, a key/secret/password word, a run of 13 digits). Most memories contain
# none, and looking for them is ~20x cheaper than running all the rules.
_TRIGGER_WORDS = (
    "-----begin", "://", "eyj", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "akia", "asia",
    "abia", "acca", "aida", "aroa", "aws", "xox", "_live_", "_test_", "aiza", "bearer", "pass", "pwd", "api",
    "secret", "token", "key",
)
_THIRTEEN_DIGITS = re.compile(r"\d(?:[ -]?\d){12}")


def _might_hold_secret(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in _TRIGGER_WORDS) or _THIRTEEN_DIGITS.search(text) is not None


def _select(text: str, *, prefilter: bool = True) -> list[tuple[int, int, str]]:
    """Pick non-overlapping spans: earliest first, then longest, then the most specific rule."""
    if prefilter and not _might_hold_secret(text):
        return []
    chosen: list[tuple[int, int, str]] = []
    last_end = -1
    for start, end, _, kind in sorted(_candidates(text), key=lambda c: (c[0], -c[1], c[2])):
        if start >= last_end:
            chosen.append((start, end, kind))
            last_end = end
    return chosen


def redact(text: str) -> tuple[str, tuple[Redaction, ...]]:
    """Replace each secret with "[REDACTED:<kind>]"; offsets refer to the original text."""
    parts: list[str] = []
    found: list[Redaction] = []
    pos = 0
    for start, end, kind in _select(text):
        placeholder = f"[REDACTED:{kind}]"
        parts.append(text[pos:start])
        parts.append(placeholder)
        found.append(Redaction(kind=kind, start=start, end=end, placeholder=placeholder))
        pos = end
    parts.append(text[pos:])
    return "".join(parts), tuple(found)
