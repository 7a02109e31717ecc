"""Write-back distillation: what of a resolved ticket is worth remembering for next time."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from fourfold.models.base import ChatModel
from fourfold.text import detect

__all__ = ["Distilled", "distill_offline", "distill_with_model", "states_preference"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class Distilled:
    """Durable memories to keep: (text, kind) pairs."""

    items: tuple[tuple[str, str], ...]


def distill_offline(goal: str, outcome: str, user_messages: Sequence[str]) -> Distilled:
    """Without an LLM: the outcome itself, plus sentences where the customer states a preference."""
    items: list[tuple[str, str]] = []
    for message in user_messages:
        for sentence in _SENTENCE.split(message.strip()):
            if states_preference(sentence):
                items.append((f"Customer said: {sentence.strip()}", "preference"))
    items.append((f"Resolved: {_clip(_first_sentence(goal), 160)} Fix: {outcome.strip()}", "resolution"))
    return Distilled(tuple(dict.fromkeys(items)))


def distill_with_model(model: ChatModel, goal: str, outcome: str, transcript: str) -> Distilled:
    """Ask the model for durable facts as JSON; fall back to the offline rules if it misbehaves."""
    prompt = (
        "A support ticket was resolved. Extract what is worth remembering about this customer "
        "for future tickets: stable preferences and the resolved problem with its fix, as one "
        "sentence each. Never include secrets, transient state or small talk. Answer only with "
        'JSON: {"memories": [{"text": "...", "kind": "preference" | "resolution"}]}\n\n'
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
    except (ValueError, KeyError, TypeError, AttributeError):
        return distill_offline(goal, outcome, [transcript])
    return Distilled(items) if items else distill_offline(goal, outcome, [])


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
