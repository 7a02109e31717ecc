"""A memory's own date, read from its metadata, and the words a question uses to name it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

__all__ = ["DATE_KEYS", "memory_date", "parse_date", "time_words"]

#: Metadata keys that hold when a memory happened, read in this order.
DATE_KEYS = ("occurred_at", "date")

_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()


def parse_date(value: object) -> datetime | None:
    """An ISO 8601 string ("2023-05-08", "2023-05-08T13:56+02:00") or unix seconds; else None.

    Times keep their own zone (naive ones are taken as written), so a memory dated "Monday
    evening" in the speaker's zone stays a Monday.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return None
        try:
            return datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        except ValueError:
            try:
                day = date.fromisoformat(text)
            except ValueError:
                return None
            return datetime(day.year, day.month, day.day)
    return None


def memory_date(metadata: Mapping[str, Any]) -> datetime | None:
    """When a memory happened, from the first of `DATE_KEYS` that parses; None if none does."""
    for key in DATE_KEYS:
        if key in metadata:
            when = parse_date(metadata[key])
            if when is not None:
                return when
    return None


def time_words(when: datetime) -> list[str]:
    """Month, year and weekday as plain words ("may", "2023", "monday"), for lexical matching."""
    return [_MONTHS[when.month - 1], str(when.year), _WEEKDAYS[when.weekday()]]
