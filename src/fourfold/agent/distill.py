"""Write-back distillation: what of a resolved ticket is worth remembering for next time."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from fourfold.models.base import ChatModel
from fourfold.text import detect

__all__ = ["PREFERENCE_KEYS", "Distilled", "distill_offline", "distill_with_model", "preference_key", "states_preference"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+")

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


@dataclass(frozen=True, slots=True)
class Distilled:
    """Durable memories to keep: (text, kind) pairs, and the key of each one that has one."""

    items: tuple[tuple[str, str], ...]
    keys: tuple[str | None, ...] = ()

    def keyed(self) -> list[tuple[str, str, str | None]]:
        """(text, kind, key) for every item."""
        keys = self.keys or (None,) * len(self.items)
        return [(text, kind, key) for (text, kind), key in zip(self.items, keys, strict=True)]


def distill_offline(goal: str, outcome: str, user_messages: Sequence[str]) -> Distilled:
    """Without an LLM: the outcome itself, plus sentences where the customer states a preference.

    A preference of a kind `preference_key` knows gets its key, and of several statements
    of one kind (the thread holds earlier tickets too) only the last is kept: it is the one
    that holds now.
    """
    stated: dict[str, tuple[str, str | None]] = {}
    for message in user_messages:
        for sentence in _SENTENCE.split(message.strip()):
            if states_preference(sentence):
                text, key = f"Customer said: {sentence.strip()}", preference_key(sentence)
                stated.pop(key or text, None)  # a later statement of the same kind replaces it
                stated[key or text] = (text, key)
    items = [(text, "preference", key) for text, key in stated.values()]
    items.append((f"Resolved: {_clip(_first_sentence(goal), 160)} Fix: {outcome.strip()}", "resolution", None))
    return Distilled(tuple((t, k) for t, k, _ in items), tuple(key for _, _, key in items))


def preference_key(text: str) -> str | None:
    """The kind of a stated preference (`PREFERENCE_KEYS`): 'contact_channel' for "text me
    instead of email"; None for a kind it does not know."""
    for key, pattern in PREFERENCE_KEYS:
        if pattern.search(text):
            return key
    return None


def distill_with_model(model: ChatModel, goal: str, outcome: str, transcript: str) -> Distilled:
    """Ask the model for durable facts as JSON; fall back to the offline rules if it misbehaves."""
    prompt = (
        "A support ticket was resolved. Extract what is worth remembering about this customer "
        "for future tickets: stable preferences and the resolved problem with its fix, as one "
        "sentence each. Never include secrets, transient state or small talk. Answer only with "
        'JSON: {"memories": [{"text": "...", "kind": "preference" | "resolution", "key": "..."}]}. '
        "Give a preference that replaces an earlier one of its kind a key naming the kind "
        f"({', '.join(key for key, _ in PREFERENCE_KEYS)}, or another snake_case name); the "
        "latest statement of each kind is the one to keep.\n\n"
        f"Goal: {goal}\nOutcome: {outcome}\nTranscript:\n{transcript}"
    )
    response = model.chat([{"role": "user", "content": prompt}], max_tokens=400)
    try:
        start, end = response.text.index("{"), response.text.rindex("}") + 1
        raw = json.loads(response.text[start:end])["memories"]
        items = tuple(
            (str(m["text"]).strip(), m["kind"] if m.get("kind") in ("preference", "resolution") else "resolution")
            for m in raw
            if str(m.get("text", "")).strip()
        )
        keys = tuple(_model_key(m, kind) for m, (_, kind) in zip(
            (m for m in raw if str(m.get("text", "")).strip()), items, strict=True))
    except (ValueError, KeyError, TypeError, AttributeError):
        return distill_offline(goal, outcome, [transcript])
    return Distilled(items, keys) if items else distill_offline(goal, outcome, [])


_KEY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def _model_key(item: dict[str, object], kind: str) -> str | None:
    """The model's key for a preference when it is a plain snake_case name, else the offline rules'."""
    if kind != "preference":
        return None
    key = item.get("key")
    if isinstance(key, str) and _KEY.match(key.strip().lower()):
        return key.strip().lower()
    return preference_key(str(item["text"]))


def states_preference(text: str) -> bool:
    """Does the text state how this customer wants to be treated? (The detector's rule, so
    what is kept privately as a preference is exactly what is never shared.)"""
    return any(r.kind == "preference" for r in detect(text, policy="personal"))


def _first_sentence(text: str) -> str:
    sentences = [s for s in _SENTENCE.split(text.strip()) if len(s.split()) > 2]
    return sentences[0] if sentences else text.strip()


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
