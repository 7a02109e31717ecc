"""Word tokens for lexical search: lowercase, stop-words dropped, Snowball-stemmed."""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Sequence

import Stemmer

__all__ = ["STOPWORDS", "tokenize", "tokenize_many"]

# The NLTK English list (itself derived from the classic SMART list) plus the common
# contractions it leaves out, so "I'm" or "can't" never become search terms.
STOPWORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them
    their theirs themselves what which who whom this that that'll these those am is are was
    were be been being have has had having do does did doing a an the and but if or because
    as until while of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here there
    when where why how all any both each few more most other some such no nor not only own
    same so than too very s t can will just don don't should should've now d ll m o re ve y
    ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven
    haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn
    shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
    i'm i've i'll i'd we're we've we'll we'd they're they've they'll they'd he's he'll he'd
    she'll she'd let's can't cannot there's here's what's who's where's when's why's how's
    that's could would ought also
    """.split()
)

# A word is a run of letters/digits (no underscore), optionally joined by apostrophes.
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})
#: Between texts in `tokenize_many`: no word holds it, so it marks where each text ends.
_SEPARATOR = "\x00"
_WORD_OR_END = re.compile(_WORD.pattern + "|" + _SEPARATOR)
_local = threading.local()  # PyStemmer objects are not thread-safe: one per thread


def _stemmer() -> Stemmer.Stemmer:
    stemmer: Stemmer.Stemmer | None = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def _split_word(word: str) -> list[str]:
    """Handle apostrophes: drop contractions, strip possessives, split the rest."""
    if word in STOPWORDS:
        return []
    if word.endswith("'s"):
        word = word[:-2]
    return [part for part in word.split("'") if part and part not in STOPWORDS]


def tokenize(text: str, *, stem: bool = True) -> list[str]:
    """Split text into lowercase content words, Snowball-stemmed unless stem=False."""
    normal = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).lower()
    words: list[str] = []
    for match in _WORD.finditer(normal):
        word = match.group()
        if "'" in word:
            words.extend(_split_word(word))
        elif word not in STOPWORDS:
            words.append(word)
    if not stem or not words:
        return words
    stems: list[str] = _stemmer().stemWords(words)
    return stems


def tokenize_many(texts: Sequence[str]) -> list[list[str]]:
    """`tokenize` of each text (`[tokenize(t) for t in texts]`), with one regex pass and one
    stemmer call for them all: what an index of many short texts is built with."""
    if not texts or any(_SEPARATOR in text for text in texts):
        return [tokenize(text) for text in texts]
    normal = _SEPARATOR.join(unicodedata.normalize("NFKC", text) for text in texts).translate(_APOSTROPHES).lower()
    words: list[str] = []
    ends: list[int] = []
    for word in _WORD_OR_END.findall(normal):
        if word == _SEPARATOR:
            ends.append(len(words))
        elif "'" in word:
            words.extend(_split_word(word))
        elif word not in STOPWORDS:
            words.append(word)
    ends.append(len(words))
    stems: list[str] = _stemmer().stemWords(words) if words else []
    out, start = [], 0
    for end in ends:
        out.append(stems[start:end])
        start = end
    return out
