"""Hints for a name that matches nothing: the names the user most likely meant."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

__all__ = ["did_you_mean", "scope_tail", "source_stem"]


def scope_tail(name: str) -> str:
    """The part of a scope after its last ':' (alice for customer:alice)."""
    return name.rpartition(":")[2]


def source_stem(name: str) -> str:
    """A document source without its folders and suffix (billing for kb/billing.md)."""
    return name.rpartition("/")[2].partition(".")[0]


def did_you_mean(given: str, known: Iterable[str], *, short: Callable[[str], str] = scope_tail) -> str:
    """"; did you mean 'x'?" naming the known names whose short form is `given`, else those
    that look alike; "" when none does."""
    names = list(known)
    likely = [n for n in names if short(n) == given] or difflib.get_close_matches(given, names, n=3)
    return f"; did you mean {' or '.join(repr(n) for n in likely)}?" if likely else ""
