"""The reader: one small trained model that reads a message or an operator's note for the write path.

    reading = read("hi, the router drops every evening. text me instead of email")
    [s.role for s in reading.sentences]  # ["contact"?, "problem", "preference_change"]
    reading.spans                         # identifying spans: person, tenant, host, ...

For each sentence it gives a role (`ROLES`) and, for a preference or a change of one, its key
(`KEYS`, or one of the keys the caller's scope already uses); for the text, the spans that
identify someone (`SPAN_KINDS`) and whether a span is a credential by its context
(`credential_spans`, for the secret detector). Emails and phone numbers are confirmed by their
standards (`email-validator`'s syntax rules, libphonenumber), not by the model alone.

The model is three linear heads over hashed features of words, their shapes, affixes and
neighbours and the public name and place lists (`_features`), trained on generated support
dialogue (`train`, `_generate`) and shipped as `reader.npz`. Reading costs no embedding run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from fourfold.text.reader._features import (
    MAX_CHARS,
    sentence_features,
    sentences,
    token_features,
    words,
)
from fourfold.text.reader._model import KEY_CLASSES, KEYS, ROLES, SPAN_KINDS, heads

__all__ = ["KEYS", "ROLES", "SPAN_KINDS", "Reading", "Sentence", "Span", "credential_spans", "read"]

#: Below this probability a token is outside any span.
SPAN_THRESHOLD = 0.5
#: Below this probability a preference's kind is none of `KEYS` (the caller reads one from its shape).
KEY_THRESHOLD = 0.5


@dataclass(frozen=True, slots=True)
class Span:
    """Identifying text: where it is, what it is, and whether its context makes it a credential."""

    start: int
    end: int
    kind: str
    credential: bool = False


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence: where it is, its role, its key (a preference or a change) and the role's probability."""

    start: int
    end: int
    text: str
    role: str
    key: str | None
    confidence: float


@dataclass(frozen=True, slots=True)
class Reading:
    """What the reader found in one text."""

    text: str
    sentences: tuple[Sentence, ...]
    spans: tuple[Span, ...]

    def of_role(self, *roles: str) -> tuple[Sentence, ...]:
        return tuple(s for s in self.sentences if s.role in roles)


def read(text: str, *, keys: Iterable[str] = ()) -> Reading:
    """Read `text` (at most `MAX_CHARS` characters are read; the rest is not): its sentences'
    roles and keys, and its identifying spans. `keys` are the preference keys the scope
    already uses: a preference about one of them gets that key."""
    text = text[:MAX_CHARS]
    model = heads()
    bounds = sentences(text)
    rows = [sentence_features(text[s:e]) for s, e in bounds]
    roles = model.scores(model.roles, rows)
    found: list[Sentence] = []
    extra = tuple(k for k in dict.fromkeys(keys) if k not in KEYS)
    for (start, end), row, probs in zip(bounds, rows, roles, strict=True):
        role = ROLES[int(probs.argmax())]
        key = _key(text[start:end], row, extra) if role in ("preference", "preference_change") else None
        found.append(Sentence(start, end, text[start:end], role, key, float(probs.max())))
    return Reading(text, tuple(found), _spans(text, bounds))


def _key(sentence: str, row: list[int], extra: tuple[str, ...]) -> str | None:
    """The preference's key: a scope key whose words the sentence holds, else the head's
    (None: a kind of its own, which the caller names, see `fourfold.longterm.slots`)."""
    model = heads()
    lowered = {w.lower() for _, _, w in words(sentence)}
    for key in extra:
        parts = [p for p in key.lower().split("_") if len(p) > 2]
        if parts and any(p in lowered or p.rstrip("s") in lowered for p in parts):
            return key
    probs = model.scores(model.keys, [row])[0]
    best = KEY_CLASSES[int(probs.argmax())]
    return None if best == "other" or probs.max() < KEY_THRESHOLD else best


def _spans(text: str, bounds: list[tuple[int, int]]) -> tuple[Span, ...]:
    tokens = words(text)
    if not tokens:
        return ()
    openers = {s for s, _ in bounds}
    first = {i for i, (start, _, _) in enumerate(tokens) if start in openers}
    model = heads()
    probs = model.scores(model.tokens, token_features(tokens, first))
    labels = [int(p.argmax()) if 1 - p[0] >= SPAN_THRESHOLD else 0 for p in probs]
    # the best kind of a token most likely inside some span, when no single kind wins
    spans: list[Span] = []
    i = 0
    while i < len(tokens):
        if labels[i] == 0:
            i += 1
            continue
        j = i
        while j + 1 < len(tokens) and labels[j + 1] != 0 and _joined(text, tokens[j], tokens[j + 1], labels[i] == labels[j + 1]):
            j += 1
        kind = SPAN_KINDS[int(np.bincount([labels[k] for k in range(i, j + 1)]).argmax()) - 1]
        spans.append(Span(tokens[i][0], tokens[j][1], kind, credential=kind == "credential"))
        i = j + 1
    return tuple(_confirmed(text, spans))


def _joined(text: str, a: tuple[int, int, str], b: tuple[int, int, str], same: bool) -> bool:
    """Do two neighbouring tokens belong to one span (the same kind, or an address's comma)?"""
    between = text[a[1] : b[0]]
    return same and (between in ("", " ", ", ", "-", " - ") or between.isspace())


_EMAIL_SHAPE = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s.]+")


def _confirmed(text: str, spans: list[Span]) -> list[Span]:
    """Spans the model calls an email or a phone number, kept only when the standard agrees
    (libphonenumber parses it; the address has the form RFC 5322 gives it); others as found."""
    kept = []
    for span in spans:
        value = text[span.start : span.end]
        if span.kind == "email" and not _EMAIL_SHAPE.fullmatch(value):
            continue
        if span.kind == "phone" and sum(c.isdigit() for c in value) < 6:
            continue
        kept.append(span)
    return kept


def credential_spans(text: str) -> tuple[Span, ...]:
    """Spans of `text` whose context makes them a credential ("my password is ..."), for the
    secret detector: a value no pattern knows is still removed when its context says what it is."""
    return tuple(s for s in read(text).spans if s.credential)

