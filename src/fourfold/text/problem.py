"""Which sentence of a customer's message states the problem: what a past ticket is remembered by.

A ticket's first message also greets, introduces, gives contact details and states standing
preferences; those belong to the customer's profile (or nowhere), not to the record of the
problem, where an old preference would come back after it changed. `problem_sentence` is the
one place that decides, so a learned reader can take its place without touching its callers.
"""

from __future__ import annotations

from fourfold.text.chatter import is_chatter
from fourfold.text.lines import SENTENCE_BREAK
from fourfold.text.redact import detect

__all__ = ["problem_sentence"]


def problem_sentence(message: str) -> str:
    """The sentence of `message` (a ticket's messages, one a line) that states the problem: the
    first that is not a greeting and carries no personal detail (a name, a contact, a stated
    preference), else the first that states no preference; "" when every sentence greets or
    states a preference (a preference is the customer's standing wish, not the problem).
    """
    sentences = [s.strip() for line in message.splitlines() for s in SENTENCE_BREAK.split(line) if s.strip()]
    found = [(s, {r.kind for r in detect(s, policy="personal")}) for s in sentences if not is_chatter(s)]
    plain = next((s for s, kinds in found if not kinds), None)
    if plain is not None:
        return plain
    return next((s for s, kinds in found if "preference" not in kinds), "")
