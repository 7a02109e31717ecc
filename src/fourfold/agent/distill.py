"""Write-back distillation: what of a resolved ticket is worth remembering for next time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fourfold.longterm.extract import read_memories
from fourfold.longterm.slots import derived_key
from fourfold.models.base import ChatModel
from fourfold.text.lines import one_line
from fourfold.text.preferences import PREFERENCE_KEYS, preference_key, states_preference
from fourfold.text.problem import problem_sentence
from fourfold.text.reader import read

__all__ = ["PREFERENCE_KEYS", "Distilled", "distill_offline", "distill_with_model", "preference_key",
           "problem_sentence", "states_preference"]


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
    """Without an LLM: the problem and the outcome, plus the sentences where the customer
    states a preference or changes one (the reader's sentence roles, `fourfold.text.reader`).

    A preference gets the reader's key, else the generic attribute `fourfold.longterm.slots`
    reads from its shape ("I'd prefer the dark theme" -> "theme"), and of several statements
    of one kind (the thread holds earlier tickets too) only the last is kept: it is the one
    that holds now.
    """
    stated: dict[str, tuple[str, str | None]] = {}
    for message in user_messages:
        for sentence in read(message).of_role("preference", "preference_change"):
            text, key = f"Customer said: {sentence.text}", sentence.key or derived_key(sentence.text)
            stated.pop(key or text, None)  # a later statement of the same kind replaces it
            stated[key or text] = (text, key)
    items = [(text, "preference", key) for text, key in stated.values()]
    items.append((f"Resolved: {one_line(problem_sentence(goal), 160)} Fix: {outcome.strip()}", "resolution", None))
    return Distilled(tuple((t, k) for t, k, _ in items), tuple(key for _, _, key in items))


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
        found = read_memories(response.text, kinds=("preference", "resolution"))
    except ValueError:
        return distill_offline(goal, outcome, [transcript])
    if not found:
        return distill_offline(goal, outcome, [])
    return Distilled(tuple((m.text, m.kind) for m in found), tuple(m.key for m in found))
