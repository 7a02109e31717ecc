"""Memory versions: a memory's texts over time, each valid from one moment until the next.

A version is an ordinary stored memory whose bookkeeping travels in its metadata under
`VERSION_KEY` (the lineage it belongs to, its `key`, when it became and stopped being valid),
so every store keeps versions the same way and an export carries them whole. A memory
without that entry is a lineage of one, valid from its own date (`occurred_at`) or its write
time, still current. Only this module reads or writes the entry.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from fourfold._validate import check_identifier
from fourfold.errors import InvalidInput
from fourfold.stores.vector import VERSION_KEY, VectorRecord
from fourfold.text import memory_date

__all__ = [
    "TICK",
    "VERSION_KEY",
    "Clock",
    "Outcome",
    "Plan",
    "SystemClock",
    "Version",
    "When",
    "Write",
    "as_timestamp",
    "check_key",
    "history_order",
    "is_current",
    "next_time",
    "place",
    "plan",
    "user_metadata",
    "validity",
    "version_of",
    "with_version",
]


class Clock(Protocol):
    """Where write times come from: unix seconds, which may step backwards (NTP, a resumed VM)."""

    def now(self) -> float: ...


class SystemClock:
    """The wall clock (`time.time`)."""

    def now(self) -> float:
        return time.time()


#: The least step between two write times of one scope: a microsecond, the resolution
#: every store reads back exactly.
TICK = 1e-6


def next_time(now: float, last: float | None) -> float:
    """A scope's next write time: `max(now, last + TICK)`, in microseconds.

    A wall clock that steps back would otherwise give a new version a `valid_from` before
    the one it supersedes (placing it in the past, superseding nothing) and let a new
    memory appear in `as_of` answers already given. Write times so never go back within a
    scope; once the clock catches up, they follow it again.
    """
    at = round(now, 6)
    return at if last is None else max(at, round(last + TICK, 6))


#: The longest key a memory may have.
MAX_KEY = 128
#: Values a time travel takes: unix seconds or a datetime.
When = float | int | datetime


@dataclass(frozen=True, slots=True)
class Version:
    """Where one stored memory sits among the versions of its lineage."""

    lineage: str  # the id of the lineage's first version
    key: str | None  # unique per (scope, key) among current memories; None: an independent memory
    valid_from: float  # unix seconds
    valid_to: float | None = None  # when the next version took over; None while current

    def at(self, when: float) -> bool:
        """Whether this version was the current one at `when`."""
        return self.valid_from <= when and (self.valid_to is None or when < self.valid_to)


def version_of(record: VectorRecord) -> Version:
    """A stored memory's version; one written before versions existed is its own lineage."""
    raw = record.metadata.get(VERSION_KEY)
    if isinstance(raw, Mapping):
        valid_to = raw.get("valid_to")
        return Version(
            lineage=str(raw.get("lineage") or record.id),
            key=str(raw["key"]) if raw.get("key") is not None else None,
            valid_from=float(raw.get("valid_from", record.created_at)),
            valid_to=float(valid_to) if valid_to is not None else None,
        )
    return Version(record.id, None, default_valid_from(record.metadata, record.created_at))


def is_current(record: VectorRecord) -> bool:
    """`version_of(record).valid_to is None`, without parsing the memory's date."""
    raw = record.metadata.get(VERSION_KEY)
    return not isinstance(raw, Mapping) or raw.get("valid_to") is None


def default_valid_from(metadata: Mapping[str, Any], written_at: float) -> float:
    """A memory's own date (`occurred_at`) when its metadata gives one, else its write time."""
    when = memory_date(metadata)
    if when is None:
        return written_at
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # naive dates are taken as UTC, the store's clock
    try:
        return when.timestamp()
    except (OverflowError, OSError, ValueError):
        return written_at


def with_version(metadata: Mapping[str, Any], version: Version, *, record_id: str, written_at: float) -> dict[str, Any]:
    """The metadata to store: the user's, plus the version entry unless it says nothing new."""
    out = user_metadata(metadata)
    plain = (
        version.lineage == record_id
        and version.key is None
        and version.valid_to is None
        and version.valid_from == default_valid_from(out, written_at)
    )
    if not plain:
        entry: dict[str, Any] = {"lineage": version.lineage, "valid_from": version.valid_from, "valid_to": version.valid_to}
        if version.key is not None:
            entry["key"] = version.key
        out[VERSION_KEY] = entry
    return out


def user_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata as the user wrote it (without the version entry)."""
    return {k: v for k, v in metadata.items() if k != VERSION_KEY}


def history_order(record: VectorRecord) -> tuple[float, float, int]:
    """Versions in the order they held: by valid_from, then by when they were written."""
    return (version_of(record).valid_from, record.created_at, record.seq)


def place(history: Sequence[VectorRecord], valid_from: float) -> tuple[VectorRecord | None, float | None]:
    """Where a new version valid from `valid_from` goes in a lineage's `history` (in `history_order`).

    Returns the version it supersedes (the last one valid from no later than it; None when it
    is older than all) and its own end of validity (the valid_from of the first version
    after it; None when it becomes the current one). A backdated version so takes its place
    in the history and supersedes nothing newer.
    """
    before = [r for r in history if version_of(r).valid_from <= valid_from]
    after = [r for r in history if version_of(r).valid_from > valid_from]
    return (before[-1] if before else None), (version_of(after[0]).valid_from if after else None)


def as_timestamp(value: object, *, what: str) -> float:
    """Unix seconds from a number or a `datetime` (a naive one is taken as UTC)."""
    if isinstance(value, datetime):
        return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"{what} must be unix seconds or a datetime, got {type(value).__name__}")
    return float(value)


def check_key(key: object) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY or not key.isprintable():
        raise InvalidInput(f"key must be 1-{MAX_KEY} printable characters, got {str(key)[:40]!r}")
    return check_identifier(key, what="key")


def validity(as_of: When | None, include_superseded: bool) -> Callable[[VectorRecord], bool]:
    """Which versions a read sees: current ones, those current at `as_of`, or all."""
    if as_of is not None:
        if include_superseded:
            raise InvalidInput("give as_of or include_superseded, not both")
        when = as_timestamp(as_of, what="as_of")
        return lambda r: version_of(r).at(when)
    if include_superseded:
        return lambda r: True
    return is_current



# -- planning a versioned write -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Write:
    """One memory to write, as the planner sees it (validated and redacted already)."""

    text: str
    scope: str | None
    kind: str
    metadata: Mapping[str, Any]  # the user's
    key: str | None = None
    lineage: str | None = None  # `update`: the lineage to add a version to
    valid_from: float | None = None  # None: the memory's own date, or the write time
    valid_now: bool = False  # with valid_from None: the write time, never the memory's own date
    content_id: str = ""  # the id an independent memory of this text gets when it is free
    follows: int | None = None  # consolidation: the batch's earlier write whose lineage it joins
    skip: bool = False  # consolidation: the lineage holds it already; store nothing
    #: current versions of other lineages this write ends too (another key of its kind:
    #: `fourfold.longterm.namespace`)
    ends: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one write did: the id it stands for, whether it stored a new record, what it superseded."""

    id: str
    created: bool
    supersedes: tuple[str, ...] = ()


@dataclass
class Plan:
    """The records a batch adds, the stored ones whose validity it changes, and each write's outcome."""

    added: list[VectorRecord]
    changed: dict[str, VectorRecord]
    outcomes: list[Outcome]


def plan(
    writes: Sequence[Write],
    known: Mapping[str | None, Sequence[VectorRecord]],
    *,
    now: Mapping[str | None, float],
    new_id: Any,
) -> Plan:
    """Decide what a batch of writes does, given each scope's `VectorStore.versioned` records.

    Writes apply in order, each seeing the ones before it. A keyed write adds a version to
    the scope's lineage of that key; an `update` to the given lineage; a write of text the
    scope holds already to that memory's lineage (so new kind or metadata are applied as a new
    version, and the text of a superseded version comes back as a new current one). A write
    identical to the current version (text, kind and metadata) stores nothing. New records
    carry an empty embedding: the caller fills in the vectors. `now` is each written
    scope's write time (`next_time`).
    """
    scopes: dict[str | None, list[VectorRecord]] = {s: list(rs) for s, rs in known.items()}
    out = Plan([], {}, [])
    seq = 0
    lineages: list[str | None] = []  # the lineage each write ended in
    for w in writes:
        records = scopes.setdefault(w.scope, [])
        if w.follows is not None:
            w = replace(w, lineage=lineages[w.follows])
        lineage = _lineage_of(w, records)
        history = sorted(lineage, key=history_order)
        current = next((r for r in reversed(history) if version_of(r).valid_to is None), None)
        if current is not None and (w.skip or (current.text == w.text and current.kind == w.kind
                                               and user_metadata(current.metadata) == dict(w.metadata))):
            out.outcomes.append(Outcome(current.id, False))
            lineages.append(version_of(current).lineage)
            continue
        written_at = now[w.scope]
        if w.valid_from is not None:
            valid_from = w.valid_from
        else:
            valid_from = written_at if w.valid_now else default_valid_from(w.metadata, written_at)
        before, valid_to = place(history, valid_from)
        taken = {r.id for r in records}
        record_id = w.content_id if not history and w.key is None and w.content_id and w.content_id not in taken \
            else str(new_id())
        first = version_of(history[0]) if history else None
        version = Version(
            lineage=first.lineage if first else record_id,
            key=w.key if w.key is not None else (first.key if first else None),
            valid_from=valid_from,
            valid_to=valid_to,
        )
        record = VectorRecord(
            record_id, w.text, _EMPTY, w.scope, w.kind, written_at,
            with_version(w.metadata, version, record_id=record_id, written_at=written_at), seq,
        )
        seq += 1
        mine = {r.id for r in lineage}
        others = [r for r in records if r.id in w.ends and is_current(r) and r.id not in mine]
        if before is not None:
            _end(out, records, before, valid_from)
        for other in others:  # a backdated write ends another key's version no earlier than it began
            _end(out, records, other, max(valid_from, version_of(other).valid_from))
        records.append(record)
        out.added.append(record)
        out.outcomes.append(Outcome(record_id, True, tuple(r.id for r in ([before] if before else []) + others)))
        lineages.append(version.lineage)
    return out


def _end(out: Plan, records: list[VectorRecord], old: VectorRecord, valid_to: float) -> None:
    """`old` ends at `valid_to`: changed in the store, or added so when this batch adds it."""
    ended = _replace_version(old, valid_to=valid_to)
    records[next(i for i, r in enumerate(records) if r.id == old.id)] = ended
    for i, added in enumerate(out.added):
        if added.id == old.id:  # a record this batch adds is added with its final metadata
            out.added[i] = ended
            return
    out.changed[old.id] = ended


def _lineage_of(w: Write, records: Sequence[VectorRecord]) -> list[VectorRecord]:
    if w.lineage is not None:
        return [r for r in records if version_of(r).lineage == w.lineage]
    if w.key is not None:
        keyed = [r for r in records if version_of(r).key == w.key]
        return [r for r in records if keyed and version_of(r).lineage == version_of(keyed[0]).lineage]
    same = [r for r in records if r.text == w.text]
    if not same:
        return []
    # the current memory of that text, else the version that held it last
    chosen = max(same, key=lambda r: (is_current(r), history_order(r)))
    lineage = version_of(chosen).lineage
    return [r for r in records if version_of(r).lineage == lineage]


def _replace_version(record: VectorRecord, *, valid_to: float) -> VectorRecord:
    v = version_of(record)
    ended = Version(v.lineage, v.key, v.valid_from, valid_to)
    return VectorRecord(
        record.id, record.text, record.embedding, record.scope, record.kind, record.created_at,
        with_version(record.metadata, ended, record_id=record.id, written_at=record.created_at),
        record.seq, record.extra,
    )


_EMPTY = np.zeros(0, dtype=np.float32)
