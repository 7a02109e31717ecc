"""Stated preferences: recognising one ("please text me instead"), and naming its kind (the
reader's sentence roles and keys, `fourfold.text.reader`).

The kind is a memory `key`: two statements of one kind are versions of one memory, so a
changed preference replaces the old one (`fourfold.longterm.versions`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["PREFERENCE_KEYS", "preference_key", "signals_change", "states_preference"]

_LANGUAGES = (
    "english spanish french german italian portuguese dutch polish turkish arabic chinese mandarin cantonese "
    "japanese korean russian hindi swedish danish norwegian finnish greek czech hebrew ukrainian romanian"
)
_DAYS = "monday tuesday wednesday thursday friday saturday sunday"
#: The values each listed preference kind takes, for reading a preference's value
#: (`fourfold.longterm.slots`); which kind a sentence is about is the reader's decision.
PREFERENCE_KEYS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (key, re.compile(pattern, re.IGNORECASE))
    for key, pattern in (
        ("language", rf"\b(?:{'|'.join(_LANGUAGES.split())}|language)\b"),
        ("time_of_day", r"\b(?:mornings?|afternoons?|evenings?|nights?|noon|midday|lunchtime|\d{1,2} ?(?:am|pm|a\.m\.|p\.m\.)"
                        r"|\d{1,2}:\d{2}|o'clock|(?:business|office|working) hours)(?!\w)"),
        ("day_of_week", rf"\b(?:{'|'.join(d + 's?' for d in _DAYS.split())}|weekends?|weekdays?)\b"),
        ("payment_method", r"\b(?:pay|paying|payment|paypal|credit card|debit card|bank transfer|direct debit|cash)\b"),
        ("delivery", r"\b(?:deliver|delivery|deliveries|courier|pick ?up|parcel locker|shipping)\b"),
        ("document_format", r"\b(?:pdf|paper cop(?:y|ies)|printed|csv|spreadsheet)\b"),
        ("contact_channel", r"\b(?:e-?mails?|e-?mailed|phone|phoned|calls?|calling|texts?|texting|sms|whatsapp|telegram"
                            r"|signal|chat|letters?|post|mail|voicemail|messenger|slack|contact)\b"),
    )
)


def _roles(text: str) -> list[tuple[str, str | None]]:
    """(role, key) of each sentence of `text`, by the reader."""
    from fourfold.text.reader import read

    return [(s.role, s.key) for s in read(text).sentences]


def signals_change(text: str) -> bool:
    """Does the text say it changes an earlier preference ("I'd rather have X instead")? The
    reader decides: a sentence whose role is a preference change."""
    return any(role == "preference_change" for role, _ in _roles(text))


def preference_key(text: str, *, keys: Iterable[str] = ()) -> str | None:
    """The kind of a stated preference: 'contact_channel' for "text me instead of email";
    None when the text states no preference. `keys` are the ones the scope already uses: a
    preference about one of them gets it (the reader's keys grow with the scope's)."""
    from fourfold.text.reader import read

    for sentence in read(text, keys=keys).sentences:
        if sentence.key is not None:
            return sentence.key
    return None


def states_preference(text: str) -> bool:
    """Does the text state how this customer wants to be treated? (The reader's sentence
    roles, which the personal-details policy uses too, so what is kept privately as a
    preference is exactly what is never shared.)"""
    return any(role in ("preference", "preference_change") for role, _ in _roles(text))
