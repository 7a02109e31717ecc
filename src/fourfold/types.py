"""Pure value types shared by the stores. Storage owns ids and timestamps."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DocHit",
    "Episode",
    "Fact",
    "Recalled",
    "Redaction",
    "Remembered",
]


@dataclass(frozen=True, slots=True)
class Redaction:
    """One secret removed from a text before storage (never the secret itself)."""

    kind: str  # e.g. "aws_access_key", "password", "card_number"
    start: int  # offset in the original text
    end: int
    placeholder: str  # what replaced it, e.g. "[REDACTED:password]"


@dataclass(frozen=True, slots=True)
class Remembered:
    """The outcome of a write: the id and what was redacted on the way in."""

    id: str
    text: str  # the text as stored (after redaction)
    redactions: tuple[Redaction, ...] = ()
    created: bool = True  # False when an identical memory already existed
    supersedes: tuple[str, ...] = ()  # the version this write replaced (a keyed memory, an update)


@dataclass(frozen=True, slots=True)
class Recalled:
    """One memory returned by recall; `score` is its relevance in [0, 1] (`fourfold.ranking`)."""

    id: str
    text: str
    kind: str
    scope: str | None
    score: float
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: float = 0.0  # unix seconds
    key: str | None = None  # the key a version of it replaces; None: an independent memory
    valid_from: float = 0.0  # unix seconds: when this version became true (its date, or its write)
    valid_to: float | None = None  # when a newer version replaced it; None while current


@dataclass(frozen=True, slots=True)
class Episode:
    """One past experience: what was tried, and how it ended.

    `score` is its relevance in [0, 1] to the situation of the search that returned it
    (`EpisodeLog.similar_successes`, on the scale of `Recalled.score`); None on an episode that
    no search returned. It is not part of the episode's identity: equality ignores it.
    """

    goal: str
    actions: tuple[str, ...]
    outcome: str
    success: bool
    ts: float
    id: str
    scope: str | None = None
    tags: tuple[str, ...] = ()
    score: float | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Fact:
    """An authoritative value in the semantic store."""

    key: str
    value: Any  # JSON-compatible: str, int, float, bool, None, list, dict
    description: str = ""
    updated_at: float = 0.0


@dataclass(frozen=True, slots=True)
class DocHit:
    """A chunk of an ingested document returned by docs.search; `score` is its relevance in [0, 1]."""

    id: str
    text: str
    source: str
    position: int  # chunk index within the source
    score: float
    heading: str = ""
