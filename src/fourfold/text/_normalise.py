"""Text as the rules read it: invisible characters gone, odd spaces plain, wrapped tokens joined.

A secret can hide from a pattern behind a zero-width space, a soft hyphen, a no-break space,
or a line break that wraps a long token (a pasted key, an e-mail client's soft wrap). The
rules read the normalised text; `Normalised.span` maps what they find back to the original.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from fourfold.text._rules import compile_re2
from fourfold.text._shapes import looks_random

__all__ = ["Normalised", "joined", "normalise"]

# Characters that render as nothing (zero-width space/joiners, word joiner, BOM, soft
# hyphen, Mongolian vowel separator, invisible operators) are dropped.
_INVISIBLE = "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"
# Spaces other than " " (no-break, en/em, thin, narrow no-break, ideographic...) become " ".
_SPACES = "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
_ODD = compile_re2(f"[{_INVISIBLE}{_SPACES}]")
_SPACE_TABLE = {ord(c): " " for c in _SPACES}
_DROP_TABLE = {ord(c): None for c in _INVISIBLE}
# A line break inside a token: a run of 12+ token characters, an optional continuation mark
# ("\\" of a shell, "=" of quoted-printable), a line break and indentation, then 8 more.
_WRAP = compile_re2(r"([A-Za-z0-9+/_\-]{12})([\\=]?[ \t]*\r?\n[ \t>]*)([A-Za-z0-9+/_\-]{8})")


_QP_ESCAPE = compile_re2(r"=[0-9A-F]{2}")
_QP_SOFT_BREAK = compile_re2(r"=\r?\n")


@dataclass(frozen=True, slots=True)
class Normalised:
    """A normalised text and where each of its pieces came from in the original."""

    text: str
    # Sorted offsets in `text` where a piece starts, and each piece's offset in `parent`'s
    # text (the original's, without a parent).
    starts: tuple[int, ...] = (0,)
    origins: tuple[int, ...] = (0,)
    parent: Normalised | None = None

    @property
    def identity(self) -> bool:
        return len(self.starts) == 1 and self.parent is None

    def position(self, offset: int, *, end: bool = False) -> int:
        """The original offset of `offset` (an end maps to just after the last kept char)."""
        if self.identity:
            return offset
        at = offset - 1 if end and offset > 0 else offset
        i = bisect.bisect_right(self.starts, at) - 1
        mapped = self.origins[i] + (at - self.starts[i])
        if self.parent is not None:
            mapped = self.parent.position(mapped)
        return mapped + 1 if end and offset > 0 else mapped

    def span(self, start: int, end: int) -> tuple[int, int]:
        return self.position(start), self.position(end, end=True)


def _dropping(text: str, cuts: list[tuple[int, int]]) -> Normalised:
    """`text` without the (start, end) ranges in `cuts` (sorted, disjoint)."""
    parts: list[str] = []
    starts, origins = [0], [0]
    pos = length = 0
    for start, end in cuts:
        parts.append(text[pos:start])
        length += start - pos
        pos = end
        starts.append(length)
        origins.append(end)
    parts.append(text[pos:])
    return Normalised("".join(parts), tuple(starts), tuple(origins))


def normalise(text: str) -> Normalised:
    """Invisible characters dropped and odd spaces made plain; offsets kept mappable."""
    if _ODD.search(text) is None:
        return Normalised(text)
    spaced = text.translate(_SPACE_TABLE)
    cuts: list[tuple[int, int]] = []
    for i, char in enumerate(spaced):
        if char in _INVISIBLE:
            if cuts and cuts[-1][1] == i:
                cuts[-1] = (cuts[-1][0], i + 1)
            else:
                cuts.append((i, i + 1))
    return _dropping(spaced, cuts)


def _wrapped(text: str, match: object) -> bool:
    """A break wraps a token if its line was wrapped (60+ characters, as mail and terminals
    wrap) or holds only the token, and both sides read as noise: joining two lines of words or
    settings would only make a longer word ("DATABASE_URL" after "my_secret_key")."""
    at = match.start(2)  # type: ignore[attr-defined]
    line = text[text.rfind("\n", 0, at) + 1 : at].strip()
    if len(line) < 60 and (" " in line or len(line) < 16):
        return False
    return looks_random(match.group(1) + match.group(3), min_len=16)  # type: ignore[attr-defined]


def joined(norm: Normalised) -> Normalised | None:
    """`norm` with each line break that wraps a long token removed; None if there is none."""
    cuts = [match.span(2) for match in _WRAP.finditer(norm.text) if _wrapped(norm.text, match)]
    if _QP_ESCAPE.search(norm.text) is not None:
        # Quoted-printable: "=" at a line's end is a soft break inside whatever it splits.
        cuts = sorted(set(cuts) | {m.span() for m in _QP_SOFT_BREAK.finditer(norm.text)})
    if not cuts:
        return None
    inner = _dropping(norm.text, cuts)
    return Normalised(inner.text, inner.starts, inner.origins, norm)
