"""Pure value types shared by the stores. Storage owns ids and timestamps."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any, Literal

__all__ = [
    "DocHit",
    "DocSource",
    "Episode",
    "Fact",
    "Ingested",
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


class Remembered(str):
    """The outcome of a write (`remember`, `remember_many`, `update`, `add`): the memory's id,
    which it is, with what was stored and redacted on the way in.

    As a string it is the id: equal to it, hashed, printed and JSON-encoded as it, so code that
    keeps, compares or passes on the id of a write works as with a plain `str` (a fact's value,
    which keeps exact JSON types so that it reads back as it was set, takes `str(r)`). Its read-only
    fields say the rest, and its value-type JSON (`fourfold.serialize.to_json`) carries them all.
    It is not a dataclass, so that generic encoders (pydantic, `dataclasses.asdict` of a
    dataclass holding an id) take it for the string it is, as `json` does.
    """

    id: str
    text: str  # the text as stored (after redaction)
    redactions: tuple[Redaction, ...]
    created: bool  # False when an identical memory already existed
    supersedes: tuple[str, ...]  # the version this write replaced (a keyed memory, an update)

    def __new__(
        cls, id: str, text: str, redactions: tuple[Redaction, ...] = (), created: bool = True,
        supersedes: tuple[str, ...] = (),
    ) -> Remembered:
        if not isinstance(id, str):
            raise TypeError(f"a memory id is a str, not {type(id).__name__}")
        self = super().__new__(cls, id)
        for name, value in (("id", str(id)), ("text", text), ("redactions", redactions), ("created", created),
                            ("supersedes", supersedes)):
            object.__setattr__(self, name, value)
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[type[Remembered], tuple[Any, ...]]:
        # str's own reduction would rebuild the id alone and drop the fields.
        return type(self), (self.id, self.text, self.redactions, self.created, self.supersedes)


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

    `problem` and `fix` are the episode as a prompt may show it: the problem in one statement
    and what solved it, apart from the `goal` as it was said (a customer's whole message, with
    its greeting, contact details and preferences). Empty on an episode that did not record them.
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
    problem: str = ""
    fix: str = ""


@dataclass(frozen=True, slots=True)
class Fact:
    """An authoritative value in the semantic store."""

    key: str
    value: Any  # JSON-compatible: str, int, float, bool, None, list, dict
    description: str = ""
    updated_at: float = 0.0


@dataclass(frozen=True, slots=True)
class Ingested:
    """What ingesting one source did: added, replaced its old version, or found it unchanged."""

    source: str
    status: Literal["added", "replaced", "unchanged"]
    chunks: int
    removed: int = 0


@dataclass(frozen=True, slots=True)
class DocSource:
    """A stored document: its source name, its chunk count, when it was last written."""

    #: The name it was ingested under (a path, a URL, any label).
    source: str
    #: How many chunks of it are stored.
    chunks: int
    #: When it was last written, unix seconds.
    updated_at: float


@dataclass(frozen=True, slots=True)
class DocHit:
    """A chunk of an ingested document returned by docs.search; `score` is its relevance in [0, 1]."""

    id: str
    text: str
    source: str
    position: int  # chunk index within the source
    score: float
    heading: str = ""
