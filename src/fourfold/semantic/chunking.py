"""Markdown-aware chunking of documents into overlapping pieces that keep their heading path."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass

from fourfold.errors import InvalidInput

__all__ = ["MIN_CHUNK_CHARS", "Chunk", "chunk_text"]

MIN_CHUNK_CHARS = 100

_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
# Where a sentence or line starts: after .!? (maybe closed by a quote or bracket), or a newline.
_SENTENCE_GAP = re.compile(r"""(?:(?<=[.!?])|(?<=[.!?]["'”’)\]]))\s+|\n\s*""")
_WORD_GAP = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document: `text` is exactly `source[start:end]`."""

    text: str
    position: int  # 0..n-1 in document order
    heading: str  # heading path, e.g. "Refunds > Card payments"; "" before the first heading
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Block:
    """A heading line, a paragraph, or a fenced code block, trimmed of outer whitespace."""

    start: int
    end: int
    kind: str  # "heading", "prose" or "code"
    level: int = 0
    title: str = ""


@dataclass(frozen=True, slots=True)
class _Unit:
    """The smallest piece packed into chunks; atomic units are whole code blocks."""

    start: int
    end: int
    atomic: bool = False


def chunk_text(text: str, *, max_chars: int = 1200, overlap: int = 200) -> list[Chunk]:
    """Split a (markdown or plain) text into chunks of at most `max_chars` characters.

    Sections follow headings; paragraphs are packed, long ones split at sentences, then
    words, then hard; fenced code stays whole unless it alone is too long. Consecutive
    chunks of a section share about `overlap` characters, starting at a sentence or word.
    """
    _check_options(text, max_chars, overlap)
    chunks: list[Chunk] = []
    for heading, blocks in _sections(_blocks(text)):
        units = [u for b in blocks for u in _units(text, b, max_chars)]
        for start, end in _pack(text, units, max_chars, overlap):
            chunks.append(Chunk(text[start:end], len(chunks), heading, start, end))
    return chunks


def _check_options(text: object, max_chars: object, overlap: object) -> None:
    if not isinstance(text, str):
        raise InvalidInput(f"chunk_text takes a string, not {type(text).__name__}")
    if type(max_chars) is not int or max_chars < MIN_CHUNK_CHARS:
        raise InvalidInput(f"max_chars must be an integer >= {MIN_CHUNK_CHARS}, got {max_chars!r}")
    if type(overlap) is not int or overlap < 0 or overlap * 2 >= max_chars:
        raise InvalidInput(f"overlap must be an integer in [0, max_chars / 2), got {overlap!r}")


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """(offset, line without its newline or trailing whitespace) for each line."""
    offset = 0
    for raw in text.split("\n"):
        yield offset, raw.rstrip()
        offset += len(raw) + 1


def _blocks(text: str) -> list[_Block]:
    """Headings, paragraphs and fenced code blocks, in order (headings inside code are code)."""
    blocks: list[_Block] = []
    para: tuple[int, int] | None = None  # (start, end) of the open paragraph
    fence: tuple[str, int] | None = None  # (fence run, start offset) of the open code block
    for offset, line in _lines(text):
        end = offset + len(line)
        if fence is not None:
            if _closes(line, fence[0]):
                blocks.append(_Block(fence[1], end, "code"))
                fence = None
            continue
        opening = _opening_fence(line)
        heading = _HEADING.fullmatch(line)
        if para is not None and (not line or opening or heading):
            blocks.append(_Block(*para, "prose"))
            para = None
        if opening:
            fence = (opening.group(1), offset)
        elif heading:
            start = offset + len(line) - len(line.lstrip())
            title = (heading.group(2) or "").strip()
            blocks.append(_Block(start, end, "heading", len(heading.group(1)), title))
        elif line:
            para = (offset + len(line) - len(line.lstrip()) if para is None else para[0], end)
    if para is not None:
        blocks.append(_Block(*para, "prose"))
    if fence is not None:  # an unclosed fence runs to the end, as in CommonMark
        blocks.append(_Block(fence[1], len(text.rstrip()), "code"))
    return blocks


def _opening_fence(line: str) -> re.Match[str] | None:
    """A ``` or ~~~ fence; a backtick fence's info string has no backticks (else it is inline code)."""
    match = _FENCE.match(line)
    if match and match.group(1)[0] == "`" and "`" in line[match.end() :]:
        return None
    return match


def _closes(line: str, run: str) -> bool:
    stripped = line.lstrip(" ")
    return (
        len(line) - len(stripped) <= 3
        and stripped.startswith(run)
        and stripped == run[0] * len(stripped)
    )


def _sections(blocks: list[_Block]) -> list[tuple[str, list[_Block]]]:
    """Group blocks under their heading path; a heading with no body joins the next section."""
    sections: list[tuple[str, list[_Block]]] = []
    path: list[tuple[int, str]] = []
    heading = ""
    current: list[_Block] = []
    for block in blocks:
        if block.kind == "heading":
            if current and any(b.kind != "heading" for b in current):
                sections.append((heading, current))
                current = []
            path = [p for p in path if p[0] < block.level] + [(block.level, block.title)]
            heading = " > ".join(title for _, title in path if title)
        current.append(block)
    if current:
        sections.append((heading, current))
    return sections


def _units(text: str, block: _Block, max_chars: int) -> list[_Unit]:
    """A block as packable units: whole if it fits, else sentences, then words, then hard cuts."""
    if block.end - block.start <= max_chars:
        return [_Unit(block.start, block.end, atomic=block.kind == "code")]
    units: list[_Unit] = []
    for s, e in _cut(text, block.start, block.end, _SENTENCE_GAP):
        if e - s <= max_chars:
            units.append(_Unit(s, e))
            continue
        for ws, we in _cut(text, s, e, _WORD_GAP):
            units.extend(_Unit(i, min(i + max_chars, we)) for i in range(ws, we, max_chars))
    return units


def _cut(text: str, start: int, end: int, gap: re.Pattern[str]) -> list[tuple[int, int]]:
    """The non-blank pieces of text[start:end] between matches of `gap`."""
    pieces: list[tuple[int, int]] = []
    cursor = start
    for match in gap.finditer(text, start, end):
        pieces.append(_trim(text, cursor, match.start()))
        cursor = match.end()
    pieces.append(_trim(text, cursor, end))
    return [(s, e) for s, e in pieces if e > s]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return start, start
    lead = len(piece) - len(piece.lstrip())
    return start + lead, start + lead + len(stripped)


class _Atomic:
    """The whole code blocks of a section, sorted, to test "is this offset inside one"."""

    def __init__(self, units: list[_Unit]) -> None:
        self._starts = [u.start for u in units]
        self._ends = [u.end for u in units]

    def inside(self, pos: int) -> bool:
        i = bisect.bisect_right(self._starts, pos) - 1
        return i >= 0 and self._starts[i] < pos < self._ends[i]


def _pack(text: str, units: list[_Unit], max_chars: int, overlap: int) -> list[tuple[int, int]]:
    """Greedily pack units into spans of at most max_chars, each overlapping the one before."""
    if not units:
        return []
    spans: list[tuple[int, int]] = []
    atomic = _Atomic([u for u in units if u.atomic])
    start, end = units[0].start, units[0].end
    for unit in units[1:]:
        if unit.end - start <= max_chars:
            end = unit.end
            continue
        spans.append((start, end))
        start = _overlap_start(text, (start, end), unit, atomic, max_chars, overlap)
        end = unit.end
    spans.append((start, end))
    return spans


def _overlap_start(
    text: str,
    previous: tuple[int, int],
    unit: _Unit,
    atomic: _Atomic,
    max_chars: int,
    overlap: int,
) -> int:
    """Where the chunk ending with `unit` starts: a sentence or word start near
    `overlap` characters before the previous chunk's end, never inside a whole code block."""
    prev_start, prev_end = previous
    lowest = max(prev_end - overlap, prev_start + 1, unit.end - max_chars)

    def usable(gap: re.Pattern[str], highest: int) -> int | None:
        for match in gap.finditer(text, prev_start, prev_end):
            pos = match.end()
            if lowest <= pos <= highest and not atomic.inside(pos):
                return pos
        return None

    sentence = usable(_SENTENCE_GAP, prev_end - overlap // 2)
    if sentence is not None:
        return sentence
    word = usable(_WORD_GAP, prev_end - 1)
    return unit.start if word is None else word
