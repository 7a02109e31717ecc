"""Known personal names and place names, however they are typed ("hi, ambrose baker here from reading").

The detector finds names by their capitals and by the words around them; a customer who types
in lowercase gives it neither. This recogniser looks words up in two public lists that ship
with installed packages (nothing is downloaded at run time):

- people's names: the 1990 US census lists of the `names` package (MIT; census data in the
  public domain), every given name and the surnames borne by at least one American in
  100,000 (18,839 of 88,799: the rest of the list is a long tail of one-off entries that
  holds everyday words such as "app", "server" and "code");
- places: the GeoNames cities of 15,000 people or more that `geotext` ships (MIT; GeoNames
  data CC BY 4.0, geonames.org), by their name and ASCII name, up to four words ("san jose",
  "stoke on trent").

Many of these are everyday words too ("reading", "bath", "grace", "fails", "mobile"): a known
word is only a *candidate*. The caller decides what it may keep by where the word comes from
(`fourfold.agent.deidentify`: a known word of a customer's travels only if the company's own
texts use it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from importlib import resources
from itertools import pairwise
from typing import Literal

from fourfold.errors import MissingDependency

__all__ = ["MIN_SURNAME_SHARE", "Known", "known", "known_words"]

Known = Literal["given_name", "surname", "place"]
#: A census surname is known when at least this share of people (in percent) bear it.
MIN_SURNAME_SHARE = 0.001
#: The longest place name looked up, in words.
MAX_PLACE_WORDS = 4
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
#: What may stand between the words of one name: spaces, or a hyphen ("stoke-on-trent").
_JOINED = re.compile(r"[ \t\-]+")


def _data(package: str, *path: str) -> str:
    try:
        return resources.files(package).joinpath(*path).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError) as exc:  # a core dependency: the install is broken
        raise MissingDependency(
            f"recognising names and places needs the {package!r} package (a dependency of fourfold): "
            f"pip install {package}"
        ) from exc


def _census(*files: str, min_share: float = 0.0) -> frozenset[str]:
    found: set[str] = set()
    for file in files:
        for line in _data("names", file).splitlines():
            parts = line.split()
            if len(parts) == 4 and float(parts[1]) >= min_share:
                found.add(parts[0].lower())
    return frozenset(w for w in found if len(w) > 1)


@cache
def _given() -> frozenset[str]:
    """Lowercased given names of the census lists."""
    return _census("dist.male.first", "dist.female.first")


@cache
def _surnames() -> frozenset[str]:
    """Lowercased surnames borne by at least `MIN_SURNAME_SHARE` percent of people."""
    return _census("dist.all.last", min_share=MIN_SURNAME_SHARE)


@cache
def _places() -> frozenset[tuple[str, ...]]:
    """Lowercased place names as tuples of words (one word or up to `MAX_PLACE_WORDS`)."""
    found: set[tuple[str, ...]] = set()
    for line in _data("geotext", "data", "cities15000.txt").splitlines():
        columns = line.split("\t")
        if len(columns) > 2:
            for name in columns[1:3]:  # the name and the ASCII name
                words = tuple(w.lower() for w in _WORD.findall(name))
                if words and len(words) <= MAX_PLACE_WORDS and len("".join(words)) > 2:
                    found.add(words)
    return frozenset(found)


def known(word: str) -> Known | None:
    """What one word is by the lists alone (any case), whatever stands around it: a place of
    one word, a given name, a surname, or None."""
    lowered = word.lower()
    return "place" if (lowered,) in _places() else _person(lowered)


def _person(lowered: str) -> Known | None:
    """A lowercased word as a given name or a surname by the census lists, or None."""
    if lowered in _given():
        return "given_name"
    return "surname" if lowered in _surnames() else None


def known_words(text: str) -> Iterator[tuple[int, int, Known]]:
    """Spans of `text` that are a known name or place, in any case: (start, end, kind), one
    per word or per whole place name ("new york"), in order and never overlapping."""
    words = list(_WORD.finditer(text))
    places = _places()
    i = 0
    while i < len(words):
        n = _place_at(text, words, i, places)
        if n:
            yield words[i].start(), words[i + n - 1].end(), "place"
            i += n
            continue
        person = _person(words[i].group().lower())
        if person is not None:
            yield words[i].start(), words[i].end(), person
        i += 1


def _place_at(text: str, words: list[re.Match[str]], i: int, places: frozenset[tuple[str, ...]]) -> int:
    """How many words from `words[i]` on make the longest known place name (0: none)."""
    for n in range(min(MAX_PLACE_WORDS, len(words) - i), 0, -1):
        run = words[i : i + n]
        if tuple(m.group().lower() for m in run) in places and all(
                _JOINED.fullmatch(text[a.end() : b.start()]) for a, b in pairwise(run)):
            return n
    return 0
