"""What a detection rule is: a kind, a way to find spans, and the cheap test that gates it.

Every pattern a rule uses is compiled by RE2 (`compile_re2`), whose matching time is linear
in the input whatever the pattern: no crafted text can hold the process. RE2 has no
lookarounds or backreferences; what they expressed is checked in Python on each match.
There is no fallback to Python's `re`: a pattern RE2 refuses is an error at import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import re2

__all__ = [
    "NOT_A_VALUE",
    "VALUE",
    "Finder",
    "Pattern",
    "Policy",
    "Rule",
    "compile_re2",
    "long_or_mixed",
    "number_like",
    "plausible_value",
    "regex_rule",
]

#: "secrets": removed from everything stored. "personal": personal details, removed from
#: anything shared with other customers (and secrets with them).
Policy = Literal["secrets", "personal"]

#: Finds (start, end) spans in a text.
Finder = Callable[[str], Iterable[tuple[int, int]]]
Check = Callable[[str], bool]
#: A compiled RE2 pattern (google-re2 ships no type information).
Pattern = Any

# RE2 gives up on a pattern whose automaton outgrows this (and says so at compile time).
_MAX_MEM = 64 << 20


def compile_re2(pattern: str, *, ignore_case: bool = False, dot_nl: bool = False) -> Pattern:
    """`pattern` compiled by RE2, or `re2.error` (never a silent fallback to Python's `re`)."""
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.dot_nl = dot_nl
    options.log_errors = False
    options.max_mem = _MAX_MEM
    return re2.compile(pattern, options)


def is_re2(pattern: object) -> bool:
    """Whether `pattern` is a compiled RE2 pattern (what every rule must use)."""
    return isinstance(pattern, re2._Regexp)


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of sensitive value and how to find it.

    The detector runs a rule on a text only when one of its `triggers` (lowercase
    substrings) occurs in the lowercased text, or its `gate` pattern matches; a rule with
    neither always runs.
    Every match a rule can make must contain a trigger or match the gate: that is what
    lets the detector skip most rules on most texts without ever missing a secret.
    `patterns` lists every compiled pattern the rule uses (a test holds them all to RE2);
    `vendored` marks a rule read from the public rule file rather than written here.
    """

    kind: str
    find: Finder
    policy: Policy = "secrets"
    triggers: tuple[str, ...] = ()
    gate: Pattern | None = None
    patterns: tuple[Pattern, ...] = ()
    vendored: bool = False


def regex_rule(
    kind: str,
    pattern: str,
    *,
    triggers: tuple[str, ...] = (),
    gate: str | None = None,
    group: int = 0,
    check: Check | None = None,
    ignore_case: bool = False,
    dot_nl: bool = False,
    policy: Policy = "secrets",
) -> Rule:
    """A rule whose spans are `pattern`'s matches (or one group of them), kept if `check` agrees."""
    compiled = compile_re2(pattern, ignore_case=ignore_case, dot_nl=dot_nl)
    gated = compile_re2(gate) if gate else None

    def find(text: str) -> Iterator[tuple[int, int]]:
        for match in compiled.finditer(text):
            start, end = group_span(match, group)
            value = text[start:end]
            if value and (check is None or check(value)):
                yield start, end

    return Rule(kind, find, policy, triggers, gated, (compiled,) if gated is None else (compiled, gated))


def group_span(match: Any, group: int) -> tuple[int, int]:
    """Span of the value (inside quotes); group -1 means the last group that matched."""
    start, end = match.span(group if group >= 0 else match.lastindex or 0)
    if start < 0:
        return 0, 0
    value = match.string[start:end]
    if len(value) > 2 and value[0] == value[-1] and value[0] in "\"'":
        return start + 1, end - 1  # keep the quotes, redact what they hold
    while end > start and match.string[end - 1] in _TRAILING_PUNCT:
        end -= 1  # a value ends before the sentence's punctuation
    return start, end


#: A value after "password is", "token:" and the like: quoted, or up to whitespace (the
#: punctuation that ends a sentence is trimmed by `group_span`).
VALUE = r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'<>]+)"
_TRAILING_PUNCT = ".,;:)!?"

# Words that follow "password is" in ordinary support text without being a password.
NOT_A_VALUE = frozenset(
    """
    a an the my your his her our their this that it its not no now still also too very just
    so being been be is was were are will would should can could must may might shall
    incorrect correct wrong right invalid valid expired expiring required optional missing
    working broken blocked locked unlocked reset changed updated weak strong short long
    case sensitive case-sensitive different same new old temporary fine ok okay good bad
    and or but if when because since which who what where how why for to of on in at by
    with from into about only never always already again there here same empty blank set
    none null true false yes bearer basic manager protected hidden encrypted stored saved
    undefined nil changeme example sample dummy placeholder redacted xxx exactly probably
    definitely really actually accepted rejected stored hashed visible shown displayed synced
    mine yours unknown lost forgotten compromised leaked stolen shared sent attached below
    above needed like as
    """.split()
)
_TRAILING = ".,;:)\"'"
_NUMBER_CHARS = frozenset("0123456789-:./TZ+")


def plausible_value(value: str) -> bool:
    """Reject prose words ("my password is incorrect") that only look like a value."""
    word = value.rstrip(_TRAILING).lower()
    return bool(word) and word not in NOT_A_VALUE and not word.startswith("[redacted")


def number_like(value: str) -> bool:
    """A count, a duration, a date, a version or an address: a setting, not a credential."""
    return 0 < len(value) < 40 and all(c in _NUMBER_CHARS for c in value)


def long_or_mixed(value: str) -> bool:
    """A value that looks machine-made: long, or with digits, and not a plain number.

    Numbers, dates and versions are settings (`max_tokens=1024`, `token_ttl=3600`).
    """
    if not plausible_value(value):
        return False
    if number_like(value) or number_like(value[1:] if value[:1] in "vV" else value):
        return False  # a number, a date, a version ("v9.0.0")
    return len(value) >= 16 or (len(value) >= 6 and any(c.isdigit() for c in value))
