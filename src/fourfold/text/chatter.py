"""Recognise pleasantries and acknowledgements that carry nothing worth remembering."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["is_chatter"]

# Whole phrases, as word tuples; a message is chatter when it is a sequence of these.
_PHRASES: frozenset[tuple[str, ...]] = frozenset(
    tuple(phrase.split())
    for phrase in """
    hi|hello|hey|heya|hiya|howdy|yo|sup|greetings|good morning|good afternoon|good evening
    good night|morning|evening|gm|hi there|hello there|hey there|thanks|thank you|thank u|thx
    thnx|tnx|ty|tysm|tyvm|cheers|thanks a lot|thanks so much|thank you so much|thanks very much
    thank you very much|many thanks|much appreciated|appreciate it|i appreciate it|appreciated
    thanks again|ok|okay|k|kk|okie|okey|alright|all right|sure|sure thing|yes|yeah|yep|yup|ya
    yea|no|nope|nah|got it|gotcha|understood|noted|i see|makes sense|that makes sense|cool|nice
    great|awesome|perfect|excellent|wonderful|amazing|sweet|neat|fine|good|very good|all good
    sounds good|sounds great|sounds perfect|that sounds good|that works|works for me|will do
    no problem|no worries|np|no prob|you're welcome|you are welcome|youre welcome|welcome
    yw|my pleasure|anytime|of course|lol|lmao|rofl|haha|hehe|heh|ha|omg|wow|oh|ah|hmm|hm|um|uh
    bye|goodbye|good bye|bye bye|see you|see ya|see you later|cya|later|take care|ttyl
    have a nice day|have a good day|have a great day|have a good one|you too|same to you
    and you|talk soon|talk to you later|please|pls|plz|sorry|oops|my bad|oh ok|oh okay|ok cool
    great thanks|cool thanks|ok thanks|for your help|for the help|thanks for your help
    thanks for the help|thank you for your help|a lot|so much|again|too|very much|and|then
    """.replace("\n", "|").split("|")
    if phrase.strip()
)
_MAX_WORDS = max(len(p) for p in _PHRASES)
#: Every word of a phrase: a message with any other word is not chatter.
_VOCABULARY = frozenset(word for phrase in _PHRASES for word in phrase)
_REPEATS = re.compile(r"(.)\1{2,}")  # "thanksss" -> "thanks", "okkk" -> "ok"
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_LAUGH = re.compile(r"(?:a?h[aeiu])+h?|(?:lo)+l|(?:xd)+")


def _normal_word(word: str) -> str:
    word = _REPEATS.sub(r"\1", word)
    # a word of a phrase stays itself: "hi" is a greeting, not a laugh, in "hi there"
    return "haha" if word not in _VOCABULARY and _LAUGH.fullmatch(word) else word


def _words(text: str) -> list[str] | None:
    """The message's normalized words; None as soon as one is in no phrase (then it has content).

    Stopping at the first such word matters: every memory written is checked, and most
    start with a word no pleasantry has.
    """
    normal = unicodedata.normalize("NFKC", text).replace("\u2019", "'").lower()
    words = []
    for match in _WORD.finditer(normal):
        word = _normal_word(match.group())
        if word not in _VOCABULARY:
            return None
        words.append(word)
    return words


def _is_phrase_sequence(words: list[str]) -> bool:
    """True when the words split entirely into known pleasantry phrases."""
    reachable = [True] + [False] * len(words)
    for i in range(len(words)):
        if not reachable[i]:
            continue
        for size in range(1, min(_MAX_WORDS, len(words) - i) + 1):
            if tuple(words[i : i + size]) in _PHRASES:
                reachable[i + size] = True
    return reachable[-1]


def is_chatter(text: str) -> bool:
    """True for pure pleasantries, acknowledgements, emoji or punctuation with no content."""
    if len(text) > 200:
        return False
    words = _words(text)
    if words is None:
        return False
    if not words:
        return True  # empty, emoji-only or punctuation-only
    return _is_phrase_sequence(words)
