"""The vector-store seam: durable records with embeddings, read back one scope at a time.

fourfold does its own ranking (dense + lexical, filters) over a scope's records, so a
backend only needs to store, fetch by scope and delete. That keeps backends small and
makes scope a hard partition rather than a relevance hint.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from fourfold.embeddings.base import Vectors
from fourfold.text.tokenize import TOKENS_TAG, tokenize_many

__all__ = [
    "DOC_KIND", "GLOBAL_SCOPE_KEY", "NO_VECTOR", "VERSION_KEY", "VectorRecord", "VectorStore", "kept_tokens", "record_tokens",
    "scope_key", "stored_record", "tokens_of", "tokens_to_keep",
]

#: How the unscoped space (scope=None) is stored; user scopes are never empty strings.
GLOBAL_SCOPE_KEY = ""

#: The kind of a document chunk (`fourfold.semantic.docs`): kept apart from memories by every layer.
DOC_KIND = "doc"

#: The metadata entry holding a memory's version bookkeeping (`fourfold.longterm.versions`):
#: stores keep it like any metadata and only need to find the records that carry it.
VERSION_KEY = "ff_version"


#: The `embedding` of a record whose vector is held elsewhere (a scope index's matrix).
NO_VECTOR: Vectors = np.zeros(0, dtype=np.float32)


def scope_key(scope: str | None) -> str:
    return GLOBAL_SCOPE_KEY if scope is None else scope


def embedding_text(text: str, extra: Sequence[str]) -> str:
    """What a memory's vector is made from: its text with the facts an enricher read out of it."""
    return " ".join((text, *extra))


def record_tokens(records: Sequence[VectorRecord]) -> list[list[str]]:
    """Each record's own words as lexical search reads them: its text and extra facts,
    tokenized (`fourfold.text.tokenize_many`; its date's words are not among them)."""
    return tokenize_many([embedding_text(r.text, r.extra) if r.extra else r.text for r in records])


def tokens_to_keep(tokens: Sequence[str]) -> str:
    """`record_tokens` of one record as a store keeps them: the tokenizer's tag, then the tokens
    (which never hold whitespace), space-separated."""
    return " ".join((TOKENS_TAG, *tokens))


def kept_tokens(kept: str | None) -> list[str] | None:
    """The tokens `tokens_to_keep` kept, or None when there are none or another tokenizer made them."""
    if kept is None:
        return None
    tag, _, tokens = kept.partition(" ")
    return tokens.split() if tag == TOKENS_TAG else None


def tokens_of(records: Sequence[VectorRecord], kept: Sequence[str | None]) -> list[list[str]]:
    """Each record's `record_tokens`: those a store kept for it (`kept[i]`, as `tokens_to_keep`
    made them), else made now, in one call for all those lacking."""
    head = TOKENS_TAG + " "
    cut = len(head)
    found = [k[cut:].split() if k is not None and k.startswith(head) else kept_tokens(k) for k in kept]
    made = iter(record_tokens([r for r, tokens in zip(records, found, strict=True) if tokens is None]))
    return [tokens if tokens is not None else next(made) for tokens in found]


@dataclass(frozen=True, slots=True)
class VectorRecord:
    """One stored memory: text, its embedding and fourfold's bookkeeping."""

    id: str
    text: str
    embedding: Vectors  # shape (dimension,), float32, unit length
    scope: str | None
    kind: str
    created_at: float
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: Position within the write that stored it: orders records sharing one `created_at`
    #: (a `remember_many` batch). Records stored before this field existed read back as 0.
    seq: int = 0
    #: Durable facts a write-time enricher (an LLM) read out of the text: indexed with it,
    #: never shown in its place. Empty unless `LongTermMemory(enricher=...)` is used.
    extra: tuple[str, ...] = ()

    def flat_metadata(self) -> dict[str, str | int | float | bool]:
        """Metadata in the flat shape vector databases accept; user metadata travels as JSON."""
        return {
            "ff_scope": scope_key(self.scope),
            "ff_kind": self.kind,
            "ff_created": float(self.created_at),
            "ff_seq": int(self.seq),
            "ff_meta": json.dumps(self.metadata, ensure_ascii=False, sort_keys=True),
            "ff_extra": json.dumps(list(self.extra), ensure_ascii=False),
        }

    @staticmethod
    def from_flat(id: str, text: str, embedding: Any, flat: Mapping[str, Any]) -> VectorRecord:
        scope = str(flat.get("ff_scope", GLOBAL_SCOPE_KEY))
        return VectorRecord(
            id=id,
            text=text,
            embedding=np.asarray(embedding, dtype=np.float32),
            scope=None if scope == GLOBAL_SCOPE_KEY else scope,
            kind=str(flat.get("ff_kind", "note")),
            created_at=float(flat.get("ff_created", 0.0)),
            metadata=json.loads(str(flat.get("ff_meta", "{}"))),
            seq=int(flat.get("ff_seq", 0)),
            extra=tuple(json.loads(str(flat.get("ff_extra", "[]")))),
        )


class _Unfrozen:
    """A `VectorRecord`'s slots without its frozen `__setattr__`: `stored_record` fills one and
    makes it a VectorRecord (same slots, so the class can be swapped)."""

    __slots__ = VectorRecord.__slots__

    def __init__(
        self, id: str, text: str, embedding: Vectors, scope: str | None, kind: str, created_at: float,
        metadata: Mapping[str, Any], seq: int, extra: tuple[str, ...],
    ) -> None:
        self.id, self.text, self.embedding, self.scope, self.kind = id, text, embedding, scope, kind
        self.created_at, self.metadata, self.seq, self.extra = created_at, metadata, seq, extra


def stored_record(
    id: str, text: str, embedding: Vectors, scope: str | None, kind: str, created_at: float,
    metadata: Mapping[str, Any], seq: int, extra: tuple[str, ...],
) -> VectorRecord:
    """`VectorRecord(...)` of every field, made a quarter as fast, for a store's reads.

    A frozen dataclass's `__init__` sets each field through `object.__setattr__` (the largest
    part of reading a customer's hundred memories); plain slot stores
    and a class swap make the same record, which is as frozen as any.
    """
    record = _Unfrozen(id, text, embedding, scope, kind, created_at, metadata, seq, extra)
    object.__setattr__(record, "__class__", VectorRecord)
    return cast(VectorRecord, record)


@dataclass(slots=True)
class WriteTicket:
    """Filled in by a `writing()` block: how the versions of the scopes it wrote moved.

    A store with a version per scope lists each written scope as (before, after). A store
    with one generation for everything sets `before` and `generation` instead, which then
    stand for every scope.
    """

    generation: Hashable | None = None
    before: Hashable | None = None
    scopes: dict[str | None, tuple[Hashable, Hashable]] = field(default_factory=dict)

    def change(self, scope: str | None) -> tuple[Hashable, Hashable] | None:
        """(version before, version after) of a scope this write touched; None if unknown."""
        if scope in self.scopes:
            return self.scopes[scope]
        if self.before is not None and self.generation is not None:
            return self.before, self.generation
        return None


class VectorStore(ABC):
    """Durable storage of `VectorRecord`s, partitioned by scope."""

    #: "embedder:dimension" of the vectors this store holds; checked when it is opened.
    embedder_identity: str = ""

    @abstractmethod
    def add(self, records: Sequence[VectorRecord]) -> None:
        """Store records whose ids are new (callers check with `existing`)."""

    @abstractmethod
    def existing(self, ids: Sequence[str]) -> set[str]:
        """The subset of ids already stored."""

    @abstractmethod
    def get(self, ids: Sequence[str]) -> list[VectorRecord]:
        """Records by id, in no particular order; unknown ids are skipped."""

    @abstractmethod
    def scan(self, scope: str | None) -> list[VectorRecord]:
        """Every record of one scope (None: the unscoped space), with embeddings."""

    @abstractmethod
    def delete(self, ids: Sequence[str]) -> None:
        """Remove records; unknown ids are ignored."""

    @abstractmethod
    def delete_scope(self, scope: str) -> int:
        """Remove every record of a scope; returns how many."""

    @abstractmethod
    def count(self) -> int:
        """Number of records in the store."""

    @abstractmethod
    def scopes(self) -> list[str | None]:
        """Every scope that holds at least one record."""

    def versioned(self, scope: str | None, ids: Sequence[str] = ()) -> list[VectorRecord]:
        """The scope's records with one of `ids`, and every record of it that carries a
        `VERSION_KEY` entry in its metadata: what a versioned write must see.

        This default scans the scope; a store that can filter on its side should.
        """
        wanted = set(ids)
        return [r for r in self.scan(scope) if r.id in wanted or VERSION_KEY in r.metadata]

    def versioned_many(self, wanted: Mapping[str | None, Sequence[str]]) -> dict[str | None, list[VectorRecord]]:
        """`versioned` of several scopes at once: scope -> its records (every scope asked is a key).

        A batch of memories spread over many scopes asks for all of them; this default asks
        scope by scope, a store that can read them together should.
        """
        return {scope: self.versioned(scope, ids) for scope, ids in wanted.items()}

    def last_written(self, scopes: Iterable[str | None]) -> dict[str | None, float]:
        """The newest write time (`created_at`) of each scope that holds anything.

        A write takes its time from here and the clock (`fourfold.longterm.versions.next_time`),
        inside its write block. This default scans the scopes; a store that can read the newest
        time of a scope by itself should.
        """
        found: dict[str | None, float] = {}
        for scope in dict.fromkeys(scopes):
            times = [r.created_at for r in self.scan(scope)]
            if times:
                found[scope] = max(times)
        return found

    def update_metadata(self, records: Sequence[VectorRecord]) -> None:
        """Store new metadata for records that exist (everything else about them is kept).

        This default deletes and adds them again in one write block; a store that can
        update a row in place should (a delete is an erasure, which can cost more).
        """
        if not records:
            return
        with self.writing():
            stored = {r.id: r for r in self.get([r.id for r in records])}
            kept = [replace(stored[r.id], metadata=dict(r.metadata)) for r in records if r.id in stored]
            self.delete([r.id for r in kept])
            self.add(kept)

    @contextmanager
    def writing(self) -> Iterator[WriteTicket]:
        """Hold the store's write lock across several calls (check-then-add stays atomic).

        The ticket says how the written scopes' versions moved, so a reader in the same
        process can update the caches it knows were current instead of dropping them.
        This default holds no lock and knows no versions.
        """
        yield WriteTicket()

    def generation(self) -> Hashable | None:
        """A token that changes whenever any process writes; None when unknowable."""
        return None

    def version(self, scope: str | None) -> Hashable | None:
        """A token that changes whenever the scope is written (by any process); None: unknowable.

        The default is the whole store's generation.
        """
        return self.generation()

    def scan_versioned(self, scope: str | None) -> tuple[list[VectorRecord], Hashable | None]:
        """`scan` together with the version it read (None when a write may have interleaved)."""
        before = self.version(scope)
        records = self.scan(scope)
        return records, (before if before is not None and before == self.version(scope) else None)

    def scan_matrix(self, scope: str | None) -> tuple[list[VectorRecord], Vectors, Hashable | None]:
        """`scan_versioned` in write order (`created_at`, then `seq`), the vectors apart: the
        records without theirs (`NO_VECTOR`) and one (n, dimension) matrix of them, row i for
        record i (shape (0, 0) when the scope is empty). What a scope's index is built from.

        This default sorts and stacks `scan_versioned`; a store that reads the vectors as one
        block should.
        """
        records, version = self.scan_versioned(scope)
        ordered = sorted(records, key=lambda r: (r.created_at, r.seq))
        matrix: Vectors = (
            np.stack([r.embedding for r in ordered]).astype(np.float32, copy=False)
            if ordered
            else np.zeros((0, 0), dtype=np.float32)
        )
        return [replace(r, embedding=NO_VECTOR) for r in ordered], matrix, version

    def scan_tokens(self, scope: str | None) -> tuple[list[VectorRecord], Vectors, list[list[str]], Hashable | None]:
        """`scan_matrix` with each record's `record_tokens` (list i for record i): everything a
        scope's index is built from.

        This default tokenizes on read; a store that keeps the tokens written with each record
        (`tokens_to_keep`, deleted with it) reads them, and tokenizes only those it lacks.
        """
        records, matrix, version = self.scan_matrix(scope)
        return records, matrix, record_tokens(records), version

    def close(self) -> None:  # noqa: B027 - optional hook; most backends hold nothing
        """Release files and clients."""


def chunked(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
