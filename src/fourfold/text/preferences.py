"""Stated preferences: recognising one ("please text me instead"), and naming its kind.

The kind is a memory `key`: two statements of one kind are versions of one memory, so a
changed preference replaces the old one (`fourfold.longterm.versions`).
"""

from __future__ import annotations

import re

from fourfold.text.redact import detect

__all__ = ["CHANGE_SIGNAL", "PREFERENCE_KEYS", "preference_key", "signals_change", "states_preference"]

_LANGUAGES = (
    "english spanish french german italian portuguese dutch polish turkish arabic chinese mandarin cantonese "
    "japanese korean russian hindi swedish danish norwegian finnish greek czech hebrew ukrainian romanian"
)
_DAYS = "monday tuesday wednesday thursday friday saturday sunday"
#: The preference kinds the offline distiller recognises, each a `key` so that a changed
#: preference replaces the old one; the first that matches a sentence names it (a time or a
#: language is what "call me in the evening" or "write to me in Spanish" is about).
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


#: Words that say a statement changes what held before ("text me *instead*", "*from now on*",
#: "I *no longer* want paper", "*switch* me to the dark theme"): with one, a preference of a kind
#: no rule names still replaces the customer's most similar current preference
#: (`fourfold.longterm.consolidate.SimilarityConsolidator`).
CHANGE_SIGNAL: re.Pattern[str] = re.compile(
    r"\b(?:instead|rather than|from now on|from today|going forward|no longer|any ?more|these days|now"
    r"|switch(?:ed|ing)?(?: me)? (?:to|over)|chang(?:e|ed|ing) (?:my mind|it to|that to|to|over)"
    r"|not (?:\w+ ){0,3}?(?:any ?more|any longer))\b",
    re.IGNORECASE,
)


def signals_change(text: str) -> bool:
    """Does the text say it changes an earlier preference ("I'd rather have X instead")?"""
    return CHANGE_SIGNAL.search(text) is not None


def preference_key(text: str) -> str | None:
    """The kind of a stated preference (`PREFERENCE_KEYS`): 'contact_channel' for "text me
    instead of email"; None for a kind it does not know."""
    for key, pattern in PREFERENCE_KEYS:
        if pattern.search(text):
            return key
    return None


def states_preference(text: str) -> bool:
    """Does the text state how this customer wants to be treated? (The detector's rule, so
    what is kept privately as a preference is exactly what is never shared.)"""
    return any(r.kind == "preference" for r in detect(text, policy="personal"))
