"""Mem0's `Memory` API over fourfold, so an application switches by changing one import.

    from fourfold.compat.mem0 import Memory      # was: from mem0 import Memory

Methods and return shapes follow mem0ai 2.2.1 (`add`, `search`, `get`, `get_all`, `update`,
`delete`, `delete_all`, `history`, `reset`). `user_id`, `agent_id` and `run_id` become a scope
as `fourfold.compat.identity` says, and a read by ids ranks every scope that holds them in one
list. `Memory()` opens the default data dir, offline: memories are extracted by fourfold's
rules unless a chat model is configured (`Memory(model=...)`, `{"llm": "anthropic:..."}` or
`$FOURFOLD_MODEL`).

Where fourfold differs it says so rather than pretend: `delete` erases a memory with all its
versions (so its `history` is empty afterwards), and filters Mem0 has but fourfold cannot run
(`contains`, `NOT`, the `*` wildcard) raise `InvalidInput` instead of being ignored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, TypedDict, Unpack

from fourfold._lifecycle import Closing
from fourfold._validate import check_metadata
from fourfold.compat.identity import Identity
from fourfold.compat.opening import open_memory
from fourfold.errors import InvalidInput, NotFound
from fourfold.longterm import MemoryInput
from fourfold.longterm.consolidate import Consolidator, ModelConsolidator, SimilarityConsolidator
from fourfold.longterm.extract import extract
from fourfold.longterm.versions import version_of
from fourfold.memory import Memory as FourfoldMemory
from fourfold.models.base import ChatModel
from fourfold.text import is_chatter
from fourfold.types import Recalled

__all__ = ["Memory", "MemoryNotFound", "ReadOptions"]

#: Keys Mem0 lifts out of a memory's metadata onto the result itself.
_PROMOTED = ("actor_id", "role", "expiration_date")
#: Ids are set by the arguments, never through metadata (as in Mem0).
_ID_KEYS = frozenset({"user_id", "agent_id", "run_id", "actor_id"})
_OPERATORS = {"eq": "$eq", "ne": "$ne", "in": "$in", "nin": "$nin", "gt": "$gt", "gte": "$gte", "lt": "$lt",
              "lte": "$lte"}
_CONFIG_KEYS = frozenset({"path", "llm"})


class MemoryNotFound(NotFound, ValueError):
    """No memory with that id. A `ValueError` too, which is what Mem0 raises there."""


class Memory(Closing):
    """Mem0's `Memory`, kept in a fourfold data dir (or PostgreSQL).

    `config` takes `path` (a data dir or a `postgresql://` URL; default: fourfold's data dir)
    and `llm` (a model spec such as `"anthropic:claude-haiku-4-5"`); Mem0's own configuration
    keys are refused, since they name backends fourfold does not use. `memory` injects an
    open fourfold `Memory` (it stays the caller's to close); `model` a chat model.

    Without them it opens as the CLI does: the data dir `$FOURFOLD_DATA_DIR` (else
    ./agent_memory), the embedder `$FOURFOLD_EMBEDDER` (else the bundled MiniLM), the model
    `$FOURFOLD_MODEL` (else Claude when `ANTHROPIC_API_KEY` is set, else the offline rules).
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        memory: FourfoldMemory | None = None,
        model: ChatModel | None = None,
    ) -> None:
        config = dict(config or {})
        unknown = set(config) - _CONFIG_KEYS
        if unknown:
            raise InvalidInput(
                f"fourfold's Mem0 API takes config keys {sorted(_CONFIG_KEYS)}, not {sorted(unknown)}: "
                "fourfold keeps its own stores and embedder")
        if memory is not None and "path" in config:
            raise InvalidInput("give either memory= or a config path, not both")
        if model is None:
            from fourfold.models.spec import default_model

            model = default_model(str(config["llm"]) if config.get("llm") else None)
        self._owned = memory is None
        self.memory: FourfoldMemory = memory if memory is not None else open_memory(config.get("path"))
        #: The chat model that extracts memories; the offline model means fourfold's rules.
        self.model = model

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> Memory:
        """Mem0's constructor from a dict (the keys `Memory` takes)."""
        return cls(config_dict)

    # -- writing ----------------------------------------------------------------------------

    def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,
        expiration_date: str | date | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """Keep what the messages say worth remembering: `{"results": [{"id", "memory", "event"}]}`.

        `infer=False` keeps every user and assistant message as it is (chatter such as "thanks!"
        excepted), each with its `role`; otherwise fourfold's extraction picks the lasting facts
        and preferences, and a changed preference replaces the old one (event "UPDATE").
        """
        scope = Identity.of(user_id, agent_id, run_id).scope
        listed = _messages(messages)
        base = {k: v for k, v in check_metadata(metadata).items() if k not in _ID_KEYS}
        if expiration_date is not None:
            base["expiration_date"] = _expiry(expiration_date)
        if not infer:
            return {"results": self._add_raw(listed, scope, base)}
        found = extract(listed, model=self.model)
        judge: Consolidator = (ModelConsolidator(self.model) if self.model is not None and self.model.is_llm
                               else SimilarityConsolidator())
        items = [MemoryInput(e.text, scope, e.kind, base, key=e.key) for e in found]
        written = self.memory.long_term.remember_many(items, consolidate=judge)
        return {"results": [
            {"id": lineage, "memory": r.text, "event": "UPDATE" if r.supersedes else "ADD"}
            for r, lineage in zip(written, self._lineages(written), strict=True) if r.created
        ]}

    def _add_raw(self, messages: list[Mapping[str, Any]], scope: str, base: dict[str, Any]) -> list[dict[str, Any]]:
        kept = [m for m in messages
                if m.get("role") not in (None, "system") and isinstance(m.get("content"), str)
                and m["content"].strip() and not is_chatter(m["content"])]
        items = [MemoryInput(m["content"], scope, "note", {**base, "role": m["role"],
                                                            **({"actor_id": m["name"]} if m.get("name") else {})})
                 for m in kept]
        written = self.memory.long_term.remember_many(items, consolidate=False)
        return [
            {"id": lineage, "memory": r.text, "event": "ADD", "actor_id": m.get("name") or None, "role": m["role"]}
            for r, m, lineage in zip(written, kept, self._lineages(written), strict=True) if r.created
        ]

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        *,
        data: str | None = None,
    ) -> dict[str, str]:
        """A new version of the memory (its old text stays in `history`); metadata is merged in."""
        text = text if text is not None else data
        if text is None and metadata is None:
            raise InvalidInput("At least one of text or metadata must be provided.")
        current = self._current(memory_id)
        merged = {**current.metadata, **{k: v for k, v in check_metadata(metadata).items() if k not in _ID_KEYS}}
        self.memory.long_term.update(current.id, text if text is not None else current.text, metadata=merged)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, str]:
        """Erase the memory and every version of it."""
        self.memory.long_term.forget(self._current(memory_id).id)
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, str]:
        """Erase every memory of the scopes holding these ids (a user's: across all their agents and runs)."""
        if user_id is None and agent_id is None and run_id is None:
            raise InvalidInput("At least one filter is required to delete all memories. "
                               "If you want to delete all memories, use the `reset()` method.")
        for scope in self._scopes(Identity.of(user_id, agent_id, run_id)):
            self.memory.long_term.forget_scope(scope)
        return {"message": "Memories deleted successfully!"}

    def reset(self) -> None:
        """Erase every memory kept through this API (scopes made of ids); other scopes are untouched."""
        for scope in self._scopes(None):
            self.memory.long_term.forget_scope(scope)

    # -- reading ----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: Mapping[str, Any] | None = None,
        threshold: float = 0.1,
        **options: Unpack[ReadOptions],
    ) -> dict[str, list[dict[str, Any]]]:
        """The memories of the ids most relevant to `query`, best first, each with its `score` in [0, 1].

        Ids go in `filters` (Mem0 2.x) or as keywords (Mem0 1.x), and so does `limit` for `top_k`.
        Every scope holding the ids is ranked in one list: scores share one scale across scopes.
        """
        read = _Read.of(filters, top_k, options)
        if not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise InvalidInput(f"threshold must be between 0 and 1, not {threshold!r}")
        hits: list[Recalled] = []
        if read.k:
            for scope in self._scopes(read.identity):
                hits.extend(self.memory.long_term.recall(query, scope=scope, k=read.k, where=read.where,
                                                         min_score=threshold))
        hits = [h for h in hits if read.shows(h)]
        hits.sort(key=lambda h: -h.score)
        return {"results": self._items(hits[:read.k], score=True)}

    def get_all(
        self, *, filters: Mapping[str, Any] | None = None, top_k: int = 20, **options: Unpack[ReadOptions]
    ) -> dict[str, list[dict[str, Any]]]:
        """The current memories of the ids, oldest first, at most `top_k` (or `limit`)."""
        read = _Read.of(filters, top_k, options)
        found = [r for scope in self._scopes(read.identity)
                 for r in self.memory.long_term.all(scope=scope, where=read.where) if read.shows(r)]
        found.sort(key=lambda r: r.created_at)
        return {"results": self._items(found[:read.k], score=False)}

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """The memory as it reads now (any of its versions' ids names it), or None."""
        try:
            current = self._current(memory_id)
        except NotFound:
            return None
        return self._items([current], score=None)[0]

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """Its versions, oldest first: the first an "ADD", each later one an "UPDATE" with the text it replaced."""
        try:
            self._current(memory_id)
            versions = self.memory.long_term.history(memory_id)
        except NotFound:
            return []
        first = versions[0]
        rows = []
        for i, v in enumerate(versions):
            rows.append({
                "id": v.id, "memory_id": first.id, "old_memory": versions[i - 1].text if i else None,
                "new_memory": v.text, "event": "UPDATE" if i else "ADD", "created_at": _iso(first.created_at),
                "updated_at": _iso(v.created_at), "is_deleted": False,
                "actor_id": v.metadata.get("actor_id"), "role": v.metadata.get("role"),
            })
        return rows

    # -- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the data dir, if this object opened it."""
        if self._owned:
            self.memory.close()


    def __repr__(self) -> str:
        return f"fourfold.compat.mem0.Memory({self.memory!r})"

    # -- helpers ----------------------------------------------------------------------------

    def _scopes(self, identity: Identity | None) -> list[str]:
        """The scopes these ids read (None: every scope made of ids)."""
        scopes = self.memory.long_term.store.scopes()
        if identity is None:
            return sorted(s for s in scopes if s is not None and Identity.from_scope(s) is not None)
        return identity.scopes_in(scopes)

    def _current(self, memory_id: str) -> Recalled:
        """The current version of the memory any version's id names, kept through this API."""
        if not isinstance(memory_id, str) or not memory_id:
            raise InvalidInput("memory_id must be a non-empty string")
        try:
            versions = self.memory.long_term.history(memory_id)
        except NotFound:
            raise MemoryNotFound(f"Memory with id {memory_id} not found") from None
        current = [v for v in versions if v.valid_to is None]
        if not current or Identity.from_scope(current[-1].scope) is None:
            raise MemoryNotFound(f"Memory with id {memory_id} not found")
        return current[-1]

    def _lineages(self, ids: Iterable[str]) -> list[str]:
        """Each memory's id as Mem0 keeps it: the id of its first version, which stays across updates."""
        wanted = list(ids)
        records = {r.id: r for r in self.memory.long_term.store.get([str(i) for i in dict.fromkeys(wanted)])}
        return [version_of(records[i]).lineage if i in records else str(i) for i in wanted]

    def _items(self, memories: Sequence[Recalled], *, score: bool | None) -> list[dict[str, Any]]:
        """Mem0's result items; `score` True carries the score, None a null score, False none."""
        lineages = self._lineages(m.id for m in memories)
        firsts = {r.id: r.created_at for r in self.memory.long_term.store.get(list(set(lineages)))}
        return [_item(m, lineage, firsts.get(lineage, m.created_at), score)
                for m, lineage in zip(memories, lineages, strict=True)]


def _item(m: Recalled, lineage: str, created_at: float, score: bool | None) -> dict[str, Any]:
    metadata = dict(m.metadata)
    item: dict[str, Any] = {
        "id": lineage, "memory": m.text, "hash": hashlib.md5(m.text.encode(), usedforsecurity=False).hexdigest(),
        "metadata": None, "score": m.score if score else None,
        "created_at": _iso(created_at), "updated_at": _iso(m.created_at),
    }
    if score is False:
        del item["score"]
    identity = Identity.from_scope(m.scope)
    if identity is not None:
        item.update(identity.as_dict())
    for key in _PROMOTED:
        if key in metadata:
            item[key] = metadata.pop(key)
    if metadata:
        item["metadata"] = metadata
    return item


def _messages(messages: object) -> list[Mapping[str, Any]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, Mapping):
        return [messages]
    if isinstance(messages, list) and all(isinstance(m, Mapping) for m in messages):
        return list(messages)
    raise InvalidInput(f"messages must be str, dict, or list[dict], not {type(messages).__name__}")


class ReadOptions(TypedDict, total=False):
    """What `search` and `get_all` take besides `filters`: Mem0 1.x's keywords, and expired memories."""

    user_id: str | None
    agent_id: str | None
    run_id: str | None
    #: Mem0 1.x's name for `top_k`.
    limit: int | None
    #: Whether memories past their `expiration_date` are shown.
    show_expired: bool


@dataclass(frozen=True, slots=True)
class _Read:
    """A read's ids (in `filters` or as keywords), the rest of `filters` as fourfold's `where`, and its count."""

    identity: Identity
    where: dict[str, Any] | None
    k: int
    show_expired: bool

    @classmethod
    def of(cls, filters: Mapping[str, Any] | None, top_k: int, options: ReadOptions) -> _Read:
        unknown = options.keys() - ReadOptions.__optional_keys__
        if unknown:
            raise TypeError(f"unexpected keyword arguments: {', '.join(sorted(unknown))}")
        rest = dict(filters or {})
        ids: dict[str, Any] = {}
        for name in ("user_id", "agent_id", "run_id"):
            given, in_filters = options.get(name), rest.pop(name, None)
            if given is not None and in_filters is not None and str(given) != str(in_filters):
                raise InvalidInput(f"{name} is given twice, as {given!r} and in filters as {in_filters!r}")
            ids[name] = given if given is not None else in_filters
        if all(v is None for v in ids.values()):
            raise InvalidInput("filters must contain at least one of: user_id, agent_id, run_id. "
                               "Example: filters={'user_id': 'u1'}")
        limit = options.get("limit")
        return cls(Identity.of(**ids), _where(rest) or None, _count(limit if limit is not None else top_k),
                   bool(options.get("show_expired", False)))

    def shows(self, memory: Recalled) -> bool:
        return self.show_expired or not _expired(memory)


def _where(filters: Mapping[str, Any]) -> dict[str, Any]:
    """Mem0's metadata filter as fourfold's `where` (`fourfold.longterm.where`)."""
    parts: list[dict[str, Any]] = []
    for key, condition in filters.items():
        if key in ("AND", "OR"):
            if not isinstance(condition, list):
                raise InvalidInput(f"{key} takes a list of filters")
            parts.append({"$and" if key == "AND" else "$or": [_where(_plain(c)) for c in condition]})
        elif key == "NOT" or condition == "*":
            raise InvalidInput(f"the filter {key!r}: {condition!r} is not supported by fourfold's Mem0 API")
        elif isinstance(condition, Mapping):
            parts.append({key: {_operator(op): value for op, value in condition.items()}})
        else:
            parts.append({key: condition})
    return parts[0] if len(parts) == 1 else ({"$and": parts} if parts else {})


def _plain(condition: object) -> Mapping[str, Any]:
    if not isinstance(condition, Mapping) or _ID_KEYS & set(condition):
        raise InvalidInput("each filter inside AND / OR is a dict of metadata conditions (ids go at the top)")
    return condition


def _operator(op: str) -> str:
    if op in _OPERATORS:
        return _OPERATORS[op]
    if op in _OPERATORS.values():
        return op
    raise InvalidInput(f"the filter operator {op!r} is not supported by fourfold's Mem0 API "
                       f"(supported: {', '.join(_OPERATORS)})")


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput(f"top_k must be a non-negative integer, not {value!r}")
    return value


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def _expiry(value: str | date) -> str:
    """An expiration date as Mem0 keeps it: YYYY-MM-DD."""
    if isinstance(value, date):
        return value.isoformat()[:10]
    try:
        return date.fromisoformat(str(value)[:10]).isoformat()
    except ValueError:
        raise InvalidInput(f"expiration_date must be a date in YYYY-MM-DD format, not {value!r}") from None


def _expired(memory: Recalled) -> bool:
    until = memory.metadata.get("expiration_date")
    return isinstance(until, str) and until < date.today().isoformat()

