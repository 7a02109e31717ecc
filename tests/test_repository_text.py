"""The repository speaks of the product: no working notes dated or numbered by a team's schedule
in CHANGELOG.md, README.md, docs/ or benchmarks/ (a reader learns nothing from which day of
whose work a change came, and such notes go stale)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: A note tied to the team's schedule: its numbered issues, sessions, rounds and passes, the day
#: it was written, the helpers who wrote it.
_ORDINAL = (r"first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth"
            r"|thirteenth|fourteenth|fifteenth|sixteenth|last|previous|next|this|that|same|earlier|later"
            r"|morning|afternoon|evening|night")
_SCHEDULE = re.compile(
    rf"\bissues? \d+"
    rf"|\b(?:{_ORDINAL}) (?:session|round|pass)\b"
    rf"|\bround (?:\d+|one|two|three)\b"
    rf"|\bhelpers?\b(?! threads?)",
    re.IGNORECASE,
)
#: The same in prose, which also may not say when it was written.
_SCHEDULE_PROSE = re.compile(
    rf"{_SCHEDULE.pattern}"
    rf"|\b(?:session|pass)'s\b"
    rf"|\b(?:today|yesterday|tonight)\b"
    rf"|\b(?:that|the) day's\b|\bthat day\b",
    re.IGNORECASE,
)
#: A calendar date in prose (examples of output and data stay inside code).
_DATE = re.compile(r"(?<![\"'=\[])\b20\d\d-\d\d-\d\d\b(?![\"'T])")
#: Release headings of the changelog carry their date.
_RELEASE = re.compile(r"^## \[\d+\.\d+\.\d+\] - \d{4}-\d\d-\d\d$")


def _prose(markdown: str) -> list[tuple[int, str]]:
    """The lines of a Markdown text outside fenced code, with inline code removed."""
    out, fenced = [], False
    for number, line in enumerate(markdown.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, re.sub(r"`[^`]*`", "", line)))
    return out


def _texts() -> list[Path]:
    paths = [ROOT / "CHANGELOG.md", ROOT / "README.md"]
    paths += sorted((ROOT / "docs").rglob("*.md"))
    paths += sorted((ROOT / "benchmarks").rglob("*.md"))
    paths += sorted((ROOT / "benchmarks").rglob("*.py"))
    return paths


def schedule_notes(name: str, text: str) -> list[str]:
    """Each line of the file `name` holding `text` that reads as a working note, as `name:line: text`.

    In Markdown, code is left out; in Python, the LoCoMo data's own sessions are not notes."""
    found = []
    if name.endswith(".md"):
        for number, line in _prose(text):
            if _RELEASE.match(line):
                continue
            if _SCHEDULE_PROSE.search(line) or _DATE.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    else:
        for number, line in enumerate(text.splitlines(), 1):
            if _SCHEDULE.search(line) and not re.search(r"\bsession\b", line, re.IGNORECASE):
                found.append(f"{name}:{number}: {line.strip()}")
    return found


@pytest.mark.parametrize("path", _texts(), ids=lambda p: str(p.relative_to(ROOT)))
def test_holds_no_working_notes(path: Path) -> None:
    assert schedule_notes(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) == []


def test_the_check_finds_notes_of_each_kind() -> None:
    """Each kind of note the check exists for is found; code examples and release headings pass."""
    notes = ["Fixed in the fourteenth session.", "As issue 14 asked.", "Round 2: faster.",
             "Measured on 2026-12-06 at noon.", "The day's slow runs.", "Three helpers were starting."]
    kept = ["## [0.2.0] - 2026-12-07", "A helper thread reads the scope.", "`valid_from=2026-12-01`",
            "```", "[2025-03-02 14:05 UTC] a dated line", "```"]
    found = schedule_notes("docs/page.md", "\n".join(notes + kept) + "\n")
    assert [line.split(": ", 1)[1] for line in found] == notes


def test_every_checked_kind_of_file_is_read() -> None:
    names = {str(p.relative_to(ROOT)) for p in _texts()}
    assert {"CHANGELOG.md", "README.md", "benchmarks/README.md", "docs/index.md"} <= names
    assert any(n.startswith("benchmarks/results/") for n in names)
