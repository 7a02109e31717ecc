"""Word tokens for lexical search: lowercase, stop-words dropped, Snowball-stemmed."""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Sequence

import Stemmer

__all__ = ["STOPWORDS", "TOKENS_TAG", "tokenize", "tokenize_many"]

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

#: What `tokenize` makes of a text: these rules (stop-words, apostrophes, the word pattern;
#: `_RULES`, bumped with any change that changes a token), the Snowball stemmer's release, and
#: the interpreter's Unicode version (which letters are letters, how NFKC and lower() map them).
#: Tokens kept at write time carry it, and tokens kept under another tag (another fourfold or
#: PyStemmer) are made again from the text: kept tokens are a shortcut, never the truth.
_RULES = 1
TOKENS_TAG = f"t{_RULES}-{Stemmer.version()}-u{unicodedata.unidata_version}"

# A word is a run of letters/digits (no underscore), optionally joined by apostrophes.
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})
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


#: word -> its stem, for the words seen first: a scope's memories reuse a small vocabulary, and
#: a lookup costs a quarter of a call into the stemmer. Entries are only ever added (up to
#: the limit), so threads can share it without a lock.
_STEMS: dict[str, str] = {}
_STEMS_LIMIT = 50_000


def _stem(words: list[str]) -> list[str]:
    """The Snowball stems of words (a word's stem does not depend on the words around it, so
    only the words the memo lacks go to the stemmer: a scope's first read with a few new words
    does not stem all of its words again)."""
    memo = _STEMS
    try:
        return [memo[word] for word in words]
    except KeyError:
        pass
    missing = list(dict.fromkeys(word for word in words if word not in memo))
    fresh = dict(zip(missing, _stemmer().stemWords(missing), strict=True))
    if len(memo) < _STEMS_LIMIT:
        memo.update(fresh)
    return [fresh[word] if word in fresh else memo[word] for word in words]


def tokenize(text: str, *, stem: bool = True) -> list[str]:
    """Split text into lowercase content words, Snowball-stemmed unless stem=False."""
    words = _content_words(_normal(text))
    if not stem or not words:
        return words
    return _stem(words)


def tokenize_many(texts: Sequence[str]) -> list[list[str]]:
    """`tokenize` of each text (`[tokenize(t) for t in texts]`), with one stemmer call for
    them all: what an index of many short texts is built with."""
    words: list[str] = []
    ends: list[int] = []
    gapped = _ascii_gapped(texts)
    found = (_gapped_words(g) for g in gapped) if gapped is not None else (_content_words(_normal(t)) for t in texts)
    for text_words in found:
        words += text_words
        ends.append(len(words))
    stems = _stem(words) if words else []
    out, start = [], 0
    for end in ends:
        out.append(stems[start:end])
        start = end
    return out


def _ascii_gapped(texts: Sequence[str]) -> list[str] | None:
    """ASCII texts (none holding a NUL) lowercased, with every gap between words a space, in
    one pass over all of them (one string per text); None for any other texts."""
    joined = "\x00".join(texts)
    if len(texts) < 2 or not joined.isascii() or joined.count("\x00") != len(texts) - 1:
        return None
    return joined.lower().encode("ascii").translate(_ASCII_GAPS_BUT_NUL).decode("ascii").split("\x00")


def _normal(text: str) -> str:
    """NFKC, one apostrophe, lowercase (ASCII text is its own NFKC form and has one apostrophe)."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).lower()


#: Bytes of ASCII text that are not part of a word (all but letters, digits and the apostrophe)
#: become spaces: `bytes.translate` with a table, much faster than `str.translate` with a map.
_ASCII_GAPS = bytes(c if chr(c).isalnum() or chr(c) == "'" else 32 for c in range(256))
_ASCII_GAPS_BUT_NUL = b"\x00" + _ASCII_GAPS[1:]


def _content_words(normal: str) -> list[str]:
    """The words of normalised text that are not stop-words (apostrophes handled), unstemmed.

    ASCII text (most text) is split by `bytes.translate` and `str.split`, several times faster
    than the regex and giving the same words: a word is a run of letters and digits, and
    only a piece holding an apostrophe needs the regex to find where its words are.
    """
    if normal.isascii():
        return _gapped_words(normal.encode("ascii").translate(_ASCII_GAPS).decode("ascii"))
    return _unstopped(_WORD.findall(normal))


def _gapped_words(gapped: str) -> list[str]:
    """`_content_words` of lowercase ASCII text whose gaps between words are spaces."""
    pieces = gapped.split()
    if "'" not in gapped:
        return [word for word in pieces if word not in STOPWORDS]
    return _unstopped([w for piece in pieces for w in (_WORD.findall(piece) if "'" in piece else (piece,))])


def _unstopped(pieces: list[str]) -> list[str]:
    """The pieces that are not stop-words, apostrophes handled."""
    words: list[str] = []
    for word in pieces:
        if "'" in word:
            words.extend(_split_word(word))
        elif word not in STOPWORDS:
            words.append(word)
    return words
