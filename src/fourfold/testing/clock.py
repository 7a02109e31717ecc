"""A clock a test sets by hand, to step it backwards as NTP or a resumed VM does."""

from __future__ import annotations

__all__ = ["ManualClock"]


class ManualClock:
    """`fourfold.longterm.versions.Clock` that reads what it was set to (unix seconds)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.at = start

    def now(self) -> float:
        return self.at

    def set(self, at: float) -> None:
        self.at = at

    def advance(self, seconds: float) -> None:
        """Move by `seconds` (negative: backwards)."""
        self.at += seconds
