"""Long-term memory: durable, scoped memories recalled by hybrid similarity."""

from __future__ import annotations

import copy
import hashlib
import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any

from fourfold._ids import DOCUMENT_PREFIX, MEMORY_PREFIX, record_id
from fourfold._parallel import overlap, spare_core
from fourfold._validate import (
    check_k,
    check_kind,
    check_metadata,
    check_min_score,
    check_scope,
    check_text,
)
from fourfold.embeddings.base import Embedder, Vectors
from fourfold.errors import InvalidInput, NotFound
from fourfold.longterm.consolidate import (
    CONSOLIDATE_K,
    Consolidator,
    Similar,
    SimilarityConsolidator,
    consolidated,
)
from fourfold.longterm.enrich import Enricher
from fourfold.longterm.large import CandidateStore, LargeScopes
from fourfold.longterm.namespace import one_namespace
from fourfold.longterm.profile import PROFILE_TOKENS, fit_profile
from fourfold.longterm.retrieval import RecordFilter, ScopeIndex, Weights
from fourfold.longterm.versions import (
    VERSION_KEY,
    Clock,
    SystemClock,
    When,
    Write,
    as_timestamp,
    check_key,
    history_order,
    is_current,
    next_time,
    plan,
    user_metadata,
    validity,
    version_of,
)
from fourfold.longterm.where import compile_where, fields_of
from fourfold.ranking import Background, Parts
from fourfold.ranking.bm25 import CollectionStats
from fourfold.stores.vector import DOC_KIND, VectorRecord, VectorStore, WriteTicket, embedding_text
from fourfold.text import is_chatter, redact
from fourfold.text.redact import redact_json, redact_many
from fourfold.types import Recalled, Redaction, Remembered

__all__ = ["DOC_KIND", "LongTermMemory", "MemoryInput", "Prepared", "When"]

log = logging.getLogger("fourfold.longterm")


@dataclass(frozen=True, slots=True)
class MemoryInput:
    """One memory to write with `remember_many` (dicts with these keys work too)."""

    text: str
    scope: str | None = None
    kind: str = "note"
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: A memory with a key replaces the scope's current memory with that key (a new version).
    key: str | None = None
    #: When it became true (unix seconds or a datetime); default: `occurred_at`, else now.
    valid_from: float | datetime | None = None


def memory_id(scope: str | None, text: str, *, prefix: str = MEMORY_PREFIX) -> str:
    """Content-derived id: the same text in the same scope is the same memory."""
    digest = hashlib.blake2b(f"{scope or ''}\x00{text}".encode(), digest_size=16).hexdigest()
    return record_id(prefix, digest)


class LongTermMemory:
    """remember / recall / forget over a `VectorStore`, with scope as a hard partition."""

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        *,
        max_chars: int = 20_000,
        weights: Weights | None = None,
        max_cached_records: int = 50_000,
        enricher: Enricher | None = None,
        consolidator: Consolidator | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        #: Where write times come from; a write never takes one before its scope's newest.
        self.clock: Clock = clock or SystemClock()
        #: Write-time enrichment (an LLM extracting facts to index); None, the default, is offline.
        self.enricher = enricher
        #: Judges new memories against similar current ones on every write (None: never).
        self.consolidator = consolidator
        self.embedder = embedder
        self.max_chars = max_chars
        self.weights = weights or Weights()
        # scope -> (the store's version of it, its index). Least recently used scopes are
        # evicted past max_cached_records (memory stays bounded).
        self._indexes = _IndexCache()
        self.max_cached_records = max_cached_records
        self._lock = threading.RLock()
        #: Whether a core is idle, so a scope's first read may run beside its query's embedding.
        self.spare_core: Callable[[], bool] = spare_core
        # Scopes too large to read whole are ranked from the store's candidates (PostgreSQL).
        self._large = LargeScopes(store) if isinstance(store, CandidateStore) else None

    # -- writing --------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        scope: str | None = None,
        kind: str = "note",
        metadata: Mapping[str, Any] | None = None,
        key: str | None = None,
        valid_from: When | None = None,
        consolidate: Consolidator | bool | None = None,
    ) -> Remembered:
        """Store one durable memory; returns its id, a `Remembered` (which also lists redactions and what it superseded).

        With a `key`, the memory is a new version of the scope's memory with that key: the
        current one gets `valid_to` and `Remembered.supersedes` names it. Without one, memories
        are independent (several may hold at once). Writing the text the scope holds already
        stores nothing when kind and metadata are the same too (`created` is False), and a new
        version carrying them when they differ.
        """
        item = MemoryInput(text, scope, kind, metadata or {}, key, valid_from)
        return self.remember_many([item], consolidate=consolidate)[0]

    def remember_many(
        self, items: Iterable[MemoryInput | Mapping[str, Any]], *, consolidate: Consolidator | bool | None = None
    ) -> list[Remembered]:
        """Validate, redact and embed all items, then store them in one locked write.

        A `consolidate` judge keeps restatements of current memories from piling up
        (`fourfold.longterm.consolidate`): None takes this memory's `consolidator` (None unless
        given), True the offline `SimilarityConsolidator`, False none.

        Nothing is written unless every item is valid, so a bad item never leaves half
        a batch behind. The batch's order is kept: items next to each other (in the same
        `thread`/`session`, see `recall`) are neighbours that lend each other context.
        """
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
            raise InvalidInput(f"remember_many takes a list of memories, not {type(items).__name__}")
        judge = _judge(consolidate, self.consolidator)
        prepared = self._prepare_many(_as_input(item) for item in items)
        return self._write_versions(prepared, consolidate=judge)

    def prepare_documents(self, items: Iterable[MemoryInput]) -> list[Prepared]:
        """Validate and redact document chunks (kind DOC_KIND); each carries the id `write_documents` stores it under."""
        chunks = list(items)
        if any(item.kind != DOC_KIND for item in chunks):
            raise InvalidInput(f"prepare_documents takes document chunks (kind {DOC_KIND!r}) only")
        return self._prepare_many(chunks, allow_doc=True)

    def write_documents(self, prepared: Sequence[Prepared]) -> list[Remembered]:
        """Store chunks from `prepare_documents` in one locked write, without versions or a judge (ids stored already are kept)."""
        if any(p.kind != DOC_KIND for p in prepared):
            raise InvalidInput(f"write_documents takes chunks from prepare_documents (kind {DOC_KIND!r}) only")
        return self._write(prepared)

    def update(
        self,
        memory_id: str,
        text: str,
        *,
        kind: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        valid_from: When | None = None,
    ) -> Remembered:
        """A new version of a memory with another text, valid from now (or `valid_from`).

        Kind and metadata stay the memory's unless given. The version current until then
        gets `valid_to`; both stay in `history`. Any version's id names the memory.
        """
        record = self._record(memory_id)
        current = user_metadata(record.metadata)
        item = MemoryInput(
            text, record.scope, kind or record.kind, current if metadata is None else metadata,
            version_of(record).key, valid_from,
        )
        return self._write_versions([self._prepare(item)], lineage=version_of(record).lineage)[0]

    def history(self, memory_id: str) -> list[Recalled]:
        """Every version of a memory, oldest first (by `valid_from`), each with `valid_to`."""
        return [_recalled(r, 1.0) for r in self._lineage(self._record(memory_id))]

    def _record(self, memory_id: str) -> VectorRecord:
        found = self.store.get([memory_id]) if isinstance(memory_id, str) and memory_id else []
        if not found or found[0].kind == DOC_KIND:
            raise NotFound(f"no memory with id {memory_id!r}")
        return found[0]

    def _lineage(self, record: VectorRecord) -> list[VectorRecord]:
        """The versions of a record's lineage, in the order they held."""
        if VERSION_KEY not in record.metadata:
            return [record]
        lineage = version_of(record).lineage
        return sorted((r for r in self.store.versioned(record.scope) if version_of(r).lineage == lineage), key=history_order)

    def _prepare(self, item: MemoryInput, *, allow_doc: bool = False) -> Prepared:
        return self._prepare_many([item], allow_doc=allow_doc)[0]

    def _prepare_many(self, items: Iterable[MemoryInput], *, allow_doc: bool = False) -> list[Prepared]:
        """Validate every item (the first invalid one raises), then redact them as one batch."""
        checked = [self._check(item, allow_doc=allow_doc) for item in items]
        return [_prepared(item, clean, redactions)
                for item, (clean, redactions) in zip(checked, redact_many([c.text for c in checked]), strict=True)]

    def _check(self, item: MemoryInput, *, allow_doc: bool) -> _Checked:
        """The item's fields checked and normalised (metadata a dict, valid_from a timestamp)."""
        text = check_text(item.text, max_chars=self.max_chars)
        scope = check_scope(item.scope)
        kind = check_kind(item.kind)
        if not allow_doc and kind == DOC_KIND:
            raise InvalidInput("kind 'doc' is reserved for documents: use docs.ingest")
        metadata = check_metadata(item.metadata)
        if VERSION_KEY in metadata:
            raise InvalidInput(f"metadata key {VERSION_KEY!r} is reserved for memory versions")
        key = check_key(item.key)
        valid_from = None if item.valid_from is None else as_timestamp(item.valid_from, what="valid_from")
        if kind != DOC_KIND and is_chatter(text):
            raise InvalidInput(f"not a durable memory (chatter): {text[:60]!r}")
        return _Checked(text, scope, kind, metadata, key, valid_from)

    def _write_versions(
        self, prepared: Sequence[Prepared], *, lineage: str | None = None, consolidate: Consolidator | None = None
    ) -> list[Remembered]:
        """Write memories as versions (`fourfold.longterm.versions.plan`), in one locked write."""
        if not prepared:
            return []
        # An update without a valid_from holds from the write on, not from the memory's own date.
        writes = [Write(p.text, p.scope, p.kind, p.metadata, p.key, lineage, p.valid_from, lineage is not None, p.id)
                  for p in prepared]
        ids: dict[str | None, list[str]] = {}
        for p in prepared:
            ids.setdefault(p.scope, []).extend((p.id, lineage) if lineage else (p.id,))
        # Slow work (embedding, an enricher, a consolidating model) happens before the write
        # lock, for texts the scopes do not hold yet; a text held already brings its stored vector.
        known = self.store.versioned_many(ids)
        writes = one_namespace(writes, known)  # before consolidation: a key it adopts is held already
        vectors = self._vectors(prepared, known)
        if consolidate is not None and lineage is None:
            held = {(r.scope, r.text) for records in known.values() for r in records}
            keys = {(r.scope, key) for records in known.values() for r in records
                    if is_current(r) and (key := version_of(r).key) is not None}
            writes = consolidated(
                writes, {t: v for t, (v, _) in vectors.items()}, held, consolidate,
                closest=self._closest, lineage_of=lambda i: version_of(self._record(i)).lineage,
                embed=self.embedder.embed_many, keys=keys,
            )
            for w in writes:
                if w.lineage is not None:
                    ids[w.scope].append(w.lineage)  # the memory it updates, for the plan to see
        with self.store.writing() as ticket:
            known = self.store.versioned_many(ids)
            now = self._write_times(ids)
            done = plan(one_namespace(writes, known), known, now=now, new_id=_new_id)
            # What another process wrote or deleted since the first look is handled here.
            vectors.update(self._vectors([p for p in prepared if p.text not in vectors], known))
            added = [replace(r, embedding=vectors[r.text][0], extra=vectors[r.text][1]) for r in done.added]
            changed = list(done.changed.values())
            self.store.update_metadata(changed)
            self.store.add(added)
        self._refresh_indexes(ticket, set(ids), added=added, changed=changed)
        return [
            Remembered(o.id, p.text, p.redactions, o.created, o.supersedes)
            for p, o in zip(prepared, done.outcomes, strict=True)
        ]

    def _closest(self, w: Write, vector: Vectors) -> list[Similar]:
        """The current memories of the write's scope and kind closest to it, by their own vectors."""

        def keep(r: VectorRecord) -> bool:
            # a keyed write is judged against memories without a key (`consolidated`)
            return r.kind == w.kind and is_current(r) and (w.key is None or version_of(r).key is None)

        found = self._ranking_index(w.scope, vector, w.text)
        if found is None:
            return []
        index, stats = found
        hits = index.search(vector, w.text, k=CONSOLIDATE_K, keep=keep, weights=self.weights, stats=stats)
        stored = {r.id: r for r in self.store.get([r.id for r, _ in hits])}
        return [Similar(r.id, r.text, float(stored[r.id].embedding @ vector)) for r, _ in hits if r.id in stored]

    def _vectors(
        self, prepared: Sequence[Prepared], known: Mapping[str | None, Sequence[VectorRecord]]
    ) -> dict[str, tuple[Vectors, tuple[str, ...]]]:
        """text -> (vector, enriched facts): stored ones for texts held already, new ones for the rest."""
        held = {r.text: (r.embedding, r.extra) for records in known.values() for r in records if r.embedding.size}
        out = {p.text: held[p.text] for p in prepared if p.text in held}
        fresh = list({p.text: p for p in prepared if p.text not in out}.values())
        embedded = self._embed_new(fresh)
        out.update((p.text, embedded[p.id]) for p in fresh)
        return out

    def _write(self, prepared: Sequence[Prepared]) -> list[Remembered]:
        if not prepared:
            return []
        unique = list({p.id: p for p in prepared}.values())
        ids = [p.id for p in unique]
        # Slow work (embedding, an enricher) happens before the write lock, so other writers
        # wait only for the store; ids already stored are neither enriched nor embedded.
        known = self.store.existing(ids)
        done = self._embed_new([p for p in unique if p.id not in known])
        with self.store.writing() as ticket:
            now = self._write_times({p.scope for p in unique})
            already = self.store.existing(ids)
            # What another process deleted since the first look must be embedded after all.
            done.update(self._embed_new([p for p in unique if p.id not in already and p.id not in done]))
            # seq keeps the batch's order: recall reads neighbouring memories from it.
            fresh = [
                VectorRecord(p.id, p.text, done[p.id][0], p.scope, p.kind, now[p.scope], p.metadata, seq, done[p.id][1])
                for seq, p in enumerate(unique)
                if p.id not in already
            ]
            self.store.add(fresh)
        self._refresh_indexes(ticket, {p.scope for p in prepared}, added=fresh)
        new_ids = {r.id for r in fresh}
        return [Remembered(p.id, p.text, p.redactions, p.id in new_ids) for p in prepared]

    def _write_times(self, scopes: Iterable[str | None]) -> dict[str | None, float]:
        """Inside a write block: each scope's write time, after its newest (`next_time`).

        Microseconds: Chroma keeps ~6 decimals of a float, and cached indexes updated in
        place must hold exactly what a rescan reads back.
        """
        wanted = list(dict.fromkeys(scopes))
        now, last = self.clock.now(), self.store.last_written(wanted)
        return {scope: next_time(now, last.get(scope)) for scope in wanted}

    def _embed_new(self, items: Sequence[Prepared]) -> dict[str, tuple[Vectors, tuple[str, ...]]]:
        """Enrich and embed memories to be written: id -> (vector, facts read out of it)."""
        if not items:
            return {}
        extras = self._enrich(items)
        # An enriched memory is embedded together with its facts; its text stays as written.
        vectors = self.embedder.embed_many([embedding_text(p.text, extra) for p, extra in zip(items, extras, strict=True)])
        return {p.id: (vec, extra) for p, vec, extra in zip(items, vectors, extras, strict=True)}

    def _enrich(self, unique: Sequence[Prepared]) -> list[tuple[str, ...]]:
        """Facts the enricher (if any) reads out of new memories, redacted; documents are skipped."""
        if self.enricher is None:
            return [() for _ in unique]
        wanted = [i for i, p in enumerate(unique) if p.kind != DOC_KIND]
        found = self.enricher.extract([unique[i].text for i in wanted]) if wanted else []
        extras: list[tuple[str, ...]] = [() for _ in unique]
        for i, facts in zip(wanted, found, strict=True):
            extras[i] = tuple(redact(f)[0] for f in facts)
        return extras

    def forget(self, memory_id: str) -> None:
        """Erase one memory and every version of it; NotFound if it does not exist."""
        self.forget_many([memory_id])

    def forget_many(self, memory_ids: Sequence[str]) -> None:
        """Delete several memories in one write; NotFound (and nothing deleted) if any is unknown.

        One write matters on embedded Chroma: each delete also scrubs the deleted text from
        its files (a VACUUM), so deleting chunk by chunk would repeat that per chunk.
        """
        if isinstance(memory_ids, str) or not all(isinstance(i, str) and i for i in memory_ids):
            raise InvalidInput("memory ids must be non-empty strings")
        wanted = list(dict.fromkeys(memory_ids))
        with self.store.writing() as ticket:
            found = self.store.get(wanted)
            missing = set(wanted) - {r.id for r in found}
            if missing:
                raise NotFound(f"no memory with id {sorted(missing)[0]!r}")
            # every version of each memory goes with it
            doomed = dict.fromkeys(wanted)
            for record in found:
                if record.kind != DOC_KIND:
                    doomed.update(dict.fromkeys(r.id for r in self._lineage(record)))
            self.store.delete(list(doomed))
        self._refresh_indexes(ticket, {r.scope for r in found})

    def forget_scope(self, scope: str) -> int:
        """Delete every memory (and document chunk) of one scope; returns how many."""
        scope_checked = check_scope(scope)
        if scope_checked is None:
            raise InvalidInput("forget_scope needs a scope name")
        with self.store.writing() as ticket:
            removed = self.store.delete_scope(scope_checked)
        self._refresh_indexes(ticket, {scope_checked})
        return removed

    def get(self, memory_id: str) -> Recalled:
        """One memory (any version, current or not) by id."""
        found = self.store.get([memory_id]) if isinstance(memory_id, str) and memory_id else []
        if not found:
            raise NotFound(f"no memory with id {memory_id!r}")
        return _recalled(found[0], 1.0)

    def all(
        self,
        *,
        scope: str | None = None,
        kinds: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        as_of: When | None = None,
        include_superseded: bool = False,
    ) -> list[Recalled]:
        """Every current memory of a scope, oldest first (documents only when kinds asks for
        them); `where`, `as_of` and `include_superseded` as in `recall`."""
        keep = _record_filter(kinds, where, as_of, include_superseded)
        index = self._index(check_scope(scope))
        records = sorted(filter(keep, index.records), key=lambda r: r.created_at)
        return [_recalled(r, 1.0) for r in records]

    def profile(self, scope: str, *, max_tokens: int = PROFILE_TOKENS) -> list[Recalled]:
        """The scope's profile: its current keyed memories, one per key, and its preferences
        without a key, each with when it was set (`valid_from`); the most recently set first
        while they fit in `max_tokens` (estimated). What a prompt for that scope carries
        whatever the question (`fourfold.longterm.profile`)."""
        return fit_profile(self.all(scope=scope), max_tokens)

    # -- reading --------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        scope: str | None = None,
        k: int = 3,
        kinds: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        min_score: float | None = None,
        as_of: When | None = None,
        include_superseded: bool = False,
    ) -> list[Recalled]:
        """The k memories of `scope` most relevant to `query`, best first.

        Only current versions are searched: `as_of` (unix seconds or a datetime) searches
        the versions that were current then, `include_superseded=True` every version.

        Scope is a hard filter: scope=None sees only memories stored without a scope.
        Documents (kind 'doc') come back only when `kinds` names them.

        Each result's `score` is its relevance in [0, 1], on one scale for every query, scope
        and store size (`fourfold.ranking`); `min_score` drops results below it
        (`fourfold.ranking.RELEVANCE_FLOOR` is the floor the support agent uses).

        `where` filters on metadata and on the memory's dates, with operators ($in, $ne, $gt,
        $gte, $lt, $lte, $and, $or...; see `fourfold.longterm.where`).

        Ranking adds dense and BM25 evidence (`Weights`). Metadata that helps it, all optional:
        `thread` or `session` (memories written in sequence in the same thread lend each other
        context), `occurred_at` or `date` (ISO 8601 or unix seconds: the memory's own date, whose
        month, year and weekday become searchable words), and `speaker` (memories of a speaker
        the query names rank higher).
        """
        hits = self.explain(
            query, scope=scope, k=k, kinds=kinds, where=where, min_score=min_score,
            as_of=as_of, include_superseded=include_superseded,
        )
        return [recalled for recalled, _ in hits]

    def explain(  # recall's parameters
        self, query: str, *, scope: str | None = None, k: int = 3, kinds: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None, min_score: float | None = None, as_of: When | None = None,
        include_superseded: bool = False,
    ) -> list[tuple[Recalled, Parts]]:
        """What `recall` returns, each result with the parts of its score (`fourfold.ranking.Parts`:
        dense similarity, what neighbouring memories added, lexical share and its date part,
        the speaker bonus, the query's background similarity)."""
        query = check_text(query, what="query", max_chars=self.max_chars)
        k = check_k(k)
        scope = check_scope(scope)
        keep = _record_filter(kinds, where, as_of, include_superseded)
        check_min_score(min_score)
        stats = None
        if self._large is not None and self._large.store.is_large(scope):
            vector = self.embedder.embed(query)
            found = self._large.candidate_index(scope, vector, query, weights=self.weights)
            if found is None:
                return []
            index, stats = found
        else:
            index, maybe = self._index_and_vector(scope, query)
            if maybe is None:
                return []  # nothing to rank
            vector = maybe
        null = Background.of(self.embedder).null(vector)
        hits = index.explain(vector, query, k=k, keep=keep, weights=self.weights, stats=stats, null=null)
        if self._large is not None and stats is not None and len(hits) < k:
            # A filter (where, kinds, as_of) too narrow for the candidates: rank every record
            # of the scope that passes it, so no match is lost to candidates picked unfiltered.
            exact = self._large.matching_index(scope, vector, query, keep=keep, k=k, stats=stats, weights=self.weights)
            if exact is not None:
                hits = exact.explain(vector, query, k=k, keep=keep, weights=self.weights, stats=stats, null=null)
        return [(_recalled(r, p.relevance), p) for r, p in hits if min_score is None or p.relevance >= min_score]

    def _ranking_index(
        self, scope: str | None, vector: Vectors, query: str
    ) -> tuple[ScopeIndex, CollectionStats | None] | None:
        """The index a query of this scope is ranked in: the scope's cached index, or for a large
        scope an index of the store's candidates with the scope's statistics (None if none)."""
        if self._large is not None and self._large.store.is_large(scope):
            return self._large.candidate_index(scope, vector, query, weights=self.weights)
        return self._index(scope), None

    def warm(self, scopes: Iterable[str | None]) -> None:
        """Build and cache these scopes' indexes now, so that their next recall reads no store.

        A service calls it after writing: a customer being written about is likely to be
        recalled next, and the writer, not the reader, then pays for a scope's first scan.
        Scopes already cached cost a lookup; the cache's size limit still applies.
        """
        for scope in scopes:
            checked = check_scope(scope)
            if self._large is not None and self._large.store.is_large(checked):
                continue  # searched through the store's candidates: nothing to build
            self._index(checked)

    def _index_and_vector(self, scope: str | None, query: str) -> tuple[ScopeIndex, Vectors | None]:
        """The scope's index and the query's vector (None for an empty scope: nothing to rank).

        When a core is idle, a scope not cached yet is read and built on a helper thread (if
        one is free) while this one embeds the query. The embedding model runs outside the GIL for most of
        its time, so the first recall of a scope (a support agent's first turn with a customer)
        then costs about what a recall of a cached one does instead of adding the scope's read
        to it. With every core busy the two would only take turns (see `fourfold._parallel`), so the
        scope is read first, and its query is not embedded when it is empty.
        """
        with self._lock:
            cached = scope in self._indexes
        both = None if cached else overlap(partial(self._index, scope), partial(self.embedder.embed, query),
                                           spare=self.spare_core)
        if both is not None:
            index, vector = both
            return index, vector if len(index) else None
        index = self._index(scope)
        return index, self.embedder.embed(query) if len(index) else None

    def _index(self, scope: str | None) -> ScopeIndex:
        """The scope's cached index, rebuilt when any process wrote to the scope since.

        The store's version of the scope (one small read) says whether the cached index is
        current. The lock guards only the cache: scanning and building happen outside it.
        """
        with self._lock:
            cached = self._indexes.get(scope)
        if cached is not None:  # a scope not cached is scanned without asking its version first
            version = self.store.version(scope)
            with self._lock:
                cached = self._indexes.get(scope)
                if cached is not None and version is not None and cached[0] == version and cached[1].weights == self.weights:
                    self._indexes.touch(scope)
                    return cached[1]
        records, matrix, tokens, version = self.store.scan_tokens(scope)
        index = ScopeIndex.of_scan(records, matrix, self.embedder.dimension, weights=self.weights, tokens=tokens)
        if version is not None:
            with self._lock:
                self._indexes.put(scope, version, index)
                self._evict()
        return index

    def _evict(self) -> None:
        self._indexes.evict(self.max_cached_records)

    def _refresh_indexes(
        self,
        ticket: WriteTicket,
        scopes: set[str | None],
        *,
        added: Sequence[VectorRecord] | None = None,
        changed: Sequence[VectorRecord] = (),
    ) -> None:
        """After our own write: bring the touched scopes' cached indexes up to date.

        A cached index that was current when the write began (its version is the write's
        "before") and that the write only `added` to becomes itself plus the new records,
        exactly what a rescan would give, without reading the store again; records whose
        metadata it `changed` (a version's end of validity, which no ranking reads) are
        replaced in it. Otherwise (a delete, or a cache that was already behind) the scope
        is dropped and rescanned when next recalled.
        """
        bases: dict[str | None, tuple[Hashable, Hashable, ScopeIndex]] = {}
        with self._lock:
            for scope in scopes:
                change = ticket.change(scope)
                cached = self._indexes.get(scope)
                if added is not None and change is not None and cached is not None and cached[0] == change[0]:
                    bases[scope] = (change[0], change[1], cached[1])
                else:
                    self._indexes.pop(scope)
        # Built outside the lock, so recalls are not held up; installed only over the index it
        # was built from (another write meanwhile makes the next recall rescan instead).
        rebuilt = {
            scope: (before, after, _with_metadata(base, changed).with_added([r for r in added or () if r.scope == scope]))
            for scope, (before, after, base) in bases.items()
        }
        with self._lock:
            for scope, (before, after, index) in rebuilt.items():
                cached = self._indexes.get(scope)
                if cached is not None and cached[0] == before and cached[1] is bases[scope][2]:
                    self._indexes.put(scope, after, index)
                else:
                    self._indexes.pop(scope)
            self._evict()


class _IndexCache:
    """scope -> (the store's version of it, its index), least recently used first, with the
    records it holds counted as they come and go (eviction never walks every cached scope)."""

    def __init__(self) -> None:
        self._items: OrderedDict[str | None, tuple[Hashable, ScopeIndex]] = OrderedDict()
        self.records = 0

    def __contains__(self, scope: object) -> bool:
        return scope in self._items

    def __len__(self) -> int:
        return len(self._items)

    def get(self, scope: str | None) -> tuple[Hashable, ScopeIndex] | None:
        return self._items.get(scope)

    def touch(self, scope: str | None) -> None:
        self._items.move_to_end(scope)

    def put(self, scope: str | None, version: Hashable, index: ScopeIndex) -> None:
        self.pop(scope)
        self._items[scope] = (version, index)
        self.records += len(index)

    def pop(self, scope: str | None) -> None:
        old = self._items.pop(scope, None)
        if old is not None:
            self.records -= len(old[1])

    def evict(self, limit: int) -> None:
        """Drop the least recently used scopes until at most `limit` records remain (one stays)."""
        while self.records > limit and len(self._items) > 1:
            _, (_, evicted) = self._items.popitem(last=False)
            self.records -= len(evicted)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A memory validated and redacted, with the id it will be stored under (`prepare_documents`)."""

    id: str
    text: str
    scope: str | None
    kind: str
    metadata: dict[str, Any]
    redactions: tuple[Redaction, ...]
    key: str | None = None
    valid_from: float | None = None


@dataclass(frozen=True, slots=True)
class _Checked:
    """A memory's fields as `LongTermMemory._check` found them valid, not yet redacted."""

    text: str
    scope: str | None
    kind: str
    metadata: dict[str, Any]
    key: str | None
    valid_from: float | None


def _prepared(item: _Checked, clean: str, redactions: tuple[Redaction, ...]) -> Prepared:
    """A checked memory whose text was redacted to `clean`, with the id it is stored under."""
    metadata, meta_redactions = _redact_metadata(item.metadata)
    if redactions or meta_redactions:
        log.warning("redacted %d secret(s) before storing a memory", len(redactions) + meta_redactions)
    kind = item.kind
    prefix = DOCUMENT_PREFIX if kind == DOC_KIND else MEMORY_PREFIX
    key_text = clean if kind != DOC_KIND else f"{metadata.get('source', '')}\x00{metadata.get('position', '')}\x00{clean}"
    return Prepared(memory_id(item.scope, key_text, prefix=prefix), clean, item.scope, kind, metadata, redactions,
                    item.key, item.valid_from)


def _new_id() -> str:
    """A version's id: never derived from its text, which an earlier version may share."""
    return record_id(MEMORY_PREFIX, uuid.uuid4().hex)


def _with_metadata(index: ScopeIndex, changed: Sequence[VectorRecord]) -> ScopeIndex:
    """The index with these records' metadata replaced (a new object: recalls may be reading it)."""
    updated = {r.id: r.metadata for r in changed}
    if not updated or not any(r.id in updated for r in index.records):
        return index
    out = copy.copy(index)
    out.records = [replace(r, metadata=updated[r.id]) if r.id in updated else r for r in index.records]
    return out


def _as_input(item: MemoryInput | Mapping[str, Any]) -> MemoryInput:
    if isinstance(item, MemoryInput):
        return item
    if not isinstance(item, Mapping):
        raise InvalidInput(f"each memory must be a MemoryInput or a mapping, not {type(item).__name__}")
    unknown = set(item) - {"text", "scope", "kind", "metadata", "key", "valid_from"}
    if unknown:
        raise InvalidInput(f"unknown memory fields: {sorted(unknown)}")
    if "text" not in item:
        raise InvalidInput("each memory needs a 'text'")
    return MemoryInput(
        item["text"], item.get("scope"), item.get("kind", "note"), item.get("metadata") or {},
        item.get("key"), item.get("valid_from"),
    )


def _kinds(kinds: Sequence[str] | None) -> frozenset[str] | None:
    """The kind names a read asks for, checked; None: every kind but documents."""
    if kinds is None:
        return None
    if isinstance(kinds, str):
        kinds = (kinds,)
    if not isinstance(kinds, (list, tuple, set, frozenset)):
        raise InvalidInput(f"kinds must be a list of kind names, not {type(kinds).__name__}")
    return frozenset(check_kind(k) for k in kinds)


def _redact_metadata(metadata: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Metadata with every string value redacted (its keys were checked by `check_metadata`)."""
    cleaned, kinds = redact_json(metadata)
    return cleaned, len(kinds)


def _recalled(record: VectorRecord, score: float) -> Recalled:
    version = version_of(record)
    return Recalled(
        id=record.id,
        text=record.text,
        kind=record.kind,
        scope=record.scope,
        score=score,
        metadata=user_metadata(record.metadata),
        created_at=record.created_at,
        key=version.key,
        valid_from=version.valid_from,
        valid_to=version.valid_to,
    )


def _record_filter(
    kinds: Sequence[str] | None, where: Mapping[str, Any] | None, as_of: When | None, include_superseded: bool
) -> Callable[[VectorRecord], bool]:
    """Which records a read keeps: of `kinds`, valid as asked, matching `where`. Without a
    `where`, no fields are made per record (a large scope's hundreds of candidates). The filter
    is checked as metadata is (JSON, size), then compiled: the same for every engine."""
    wanted, holds = _kinds(kinds), validity(as_of, include_superseded)

    def keep_kind(kind: str) -> bool:
        return kind != DOC_KIND if wanted is None else kind in wanted

    if not where:
        # Kinds and validity without a time keep the same records of an index on every read.
        key = None if as_of is not None else (wanted, include_superseded)
        return RecordFilter(lambda r: keep_kind(r.kind) and holds(r), key)
    match = compile_where(check_metadata(where))
    return RecordFilter(lambda r: keep_kind(r.kind) and holds(r) and match(fields_of(r)))


def _judge(consolidate: object, default: Consolidator | None) -> Consolidator | None:
    """The consolidator a write asks for: a judge, True (the offline one), False (none), None (default)."""
    if consolidate is None:
        return default
    if consolidate is True:
        return SimilarityConsolidator()
    if consolidate is False:
        return None
    if not isinstance(consolidate, Consolidator):
        raise InvalidInput(f"consolidate must be a Consolidator, True, False or None, not {type(consolidate).__name__}")
    return consolidate
