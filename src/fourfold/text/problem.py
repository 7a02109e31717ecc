"""Which sentence of a customer's message states the problem: what a past ticket is remembered by.

A ticket's first message also greets, introduces, gives contact details and states standing
preferences; those belong to the customer's profile (or nowhere), not to the record of the
problem, where an old preference would come back after it changed. The reader
(`fourfold.text.reader`) gives each sentence its role; this is the one place that picks the
problem from them.
"""

from __future__ import annotations

from fourfold.text.reader import read

__all__ = ["problem_sentence"]

#: Roles a sentence never carries the problem in: the customer's details and greetings, and
#: their standing wishes (a preference that may change).
_NOT_THE_PROBLEM = frozenset({"contact", "chatter", "preference", "preference_change"})


def problem_sentence(message: str) -> str:
    """The sentence of `message` (a ticket's messages, one a line) that states the problem: the
    reader's most confident problem sentence, else the first that is no greeting, contact
    detail or preference (a question, an operator's fix); "" when every sentence is one of those.
    """
    reading = read(message)
    problems = reading.of_role("problem")
    if problems:
        return max(problems, key=lambda s: s.confidence).text
    return next((s.text for s in reading.sentences if s.role not in _NOT_THE_PROBLEM), "")
