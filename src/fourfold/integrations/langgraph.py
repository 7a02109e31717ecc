"""A LangGraph `BaseStore` over fourfold's long-term memory: namespaces are scopes.

    from fourfold.integrations.langgraph import FourfoldStore

    store = FourfoldStore.open("agent_memory", index={"fields": ["text"]})
    graph = builder.compile(store=store)

A namespace `("users", "alice")` is the scope `users/alice` (a `/` or `%` inside a label is
written `%2F` or `%25`), so the CLI, the REST API and the inspector see the same items. An item
is one long-term memory of kind `item`: its value's top-level fields are kept as its metadata,
and the text embedded for `search(query=...)` is what the store's `index["fields"]` (or the
put's `index=`) name, joined; `index=False` keeps an item out of ranked search. A put over an
existing key is a new version of the same memory (its old value stays in fourfold's history).
`search(query=...)` is fourfold's hybrid recall (dense and BM25), with `filter` applied before
ranking; its scores are relevances in [0, 1]. `index["embed"]` and `index["dims"]` are not used:
the data dir's embedder embeds. TTLs are not supported (`supports_ttl` is False).

Sync and async share one implementation: `abatch` runs `batch` in a worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from fourfold.integrations._require import require_framework

require_framework("langgraph.store.base", "langgraph", what="fourfold.integrations.langgraph")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path  # noqa: E402

from fourfold._lifecycle import Closing  # noqa: E402
from fourfold._validate import check_scope  # noqa: E402
from fourfold.compat.opening import open_memory  # noqa: E402
from fourfold.errors import InvalidInput  # noqa: E402
from fourfold.longterm.versions import check_key, version_of  # noqa: E402
from fourfold.memory import Memory  # noqa: E402
from fourfold.text import is_chatter  # noqa: E402
from fourfold.types import Recalled  # noqa: E402

__all__ = ["ITEM_KIND", "FourfoldStore", "namespace_of", "scope_of"]

#: The kind of the memories that hold LangGraph items.
ITEM_KIND = "item"
_KEY = "langgraph.key"
_INDEXED = "langgraph.indexed"
_FIELD = "v."  # a value's field `f` is the metadata key `v.f`


def scope_of(namespace: Sequence[str]) -> str:
    """The scope of a namespace: its labels joined by `/`."""
    labels = [label.replace("%", "%25").replace("/", "%2F") for label in namespace]
    scope = check_scope("/".join(labels))
    if scope is None:
        raise InvalidInput("a namespace needs at least one label")
    return scope


def namespace_of(scope: str) -> tuple[str, ...]:
    """The namespace a scope stands for (the inverse of `scope_of`)."""
    return tuple(label.replace("%2F", "/").replace("%25", "%") for label in scope.split("/"))


class FourfoldStore(Closing, BaseStore):
    """LangGraph's store interface over a fourfold `Memory` (a data dir or PostgreSQL)."""

    supports_ttl = False

    def __init__(self, memory: Memory, *, index: IndexConfig | None = None, owned: bool = False) -> None:
        self.memory = memory
        self.index_config = index
        #: What is embedded of a value when its put names no fields: the index's fields, else all of it.
        self.fields: list[str] = list((index or {}).get("fields") or ["$"])
        self._owned = owned

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] | None = None, *, index: IndexConfig | None = None, **options: Any
    ) -> FourfoldStore:
        """A store over the data dir (or PostgreSQL URL) `path`, opened as the CLI opens it
        (`$FOURFOLD_DATA_DIR`, `$FOURFOLD_EMBEDDER`); `options` go to `Memory.open`."""
        return cls(open_memory(path, **options), index=index, owned=True)

    def close(self) -> None:
        """Close the memory, if this store opened it."""
        if self._owned:
            self.memory.close()


    # -- the two abstract methods -----------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; each result is what its op returns."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise InvalidInput(f"unknown store operation: {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in a worker thread, so the event loop never waits on the database."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations ---------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        found = self._current(scope_of(op.namespace), op.key)
        return self._items([found], None)[0] if found is not None else None

    def _put(self, op: PutOp) -> None:
        scope = scope_of(op.namespace)
        if op.value is None:
            current = self._current(scope, op.key)
            if current is not None:
                self.memory.long_term.forget(current.id)
            return
        if not isinstance(op.value, Mapping) or not all(isinstance(k, str) for k in op.value):
            raise InvalidInput("a store value must be a dict with string keys")
        text, indexed = self._text(op.namespace, op.key, op.value, op.index)
        metadata = {_KEY: op.key, _INDEXED: indexed, **{_FIELD + k: v for k, v in op.value.items()}}
        self.memory.long_term.remember(text, scope=scope, kind=ITEM_KIND, metadata=metadata,
                                       key=_memory_key(op.key), consolidate=False)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        where = _where(op.filter)
        scopes = [s for s in self._scopes() if namespace_of(s)[:len(op.namespace_prefix)] == op.namespace_prefix]
        wanted = op.offset + op.limit
        ranked: list[Recalled] = []
        if op.query and wanted:
            indexed = {"$and": [where, {_INDEXED: True}]} if where else {_INDEXED: True}
            for scope in scopes:
                ranked.extend(self.memory.long_term.recall(op.query, scope=scope, k=wanted, kinds=(ITEM_KIND,),
                                                           where=indexed))
            ranked.sort(key=lambda r: -r.score)
            page = ranked[op.offset:wanted]
            if len(page) < op.limit:  # as LangGraph's own stores do: fill up with items that are not indexed
                unindexed = {"$and": [where, {_INDEXED: False}]} if where else {_INDEXED: False}
                page += self._listed(scopes, unindexed)[:op.limit - len(page)]
            scored = {r.id for r in ranked}
            return self._items(page, [r.score if r.id in scored else None for r in page])
        page = self._listed(scopes, where)[op.offset:wanted]
        return self._items(page, [None] * len(page))

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = [namespace_of(s) for s in self._scopes()
                      if self.memory.long_term.all(scope=s, kinds=(ITEM_KIND,))]
        namespaces = [ns for ns in namespaces if all(_matches(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            namespaces = [ns[:op.max_depth] for ns in namespaces]
        return sorted(set(namespaces))[op.offset:op.offset + op.limit]

    # -- helpers ------------------------------------------------------------------------------

    def _scopes(self) -> list[str]:
        return sorted(s for s in self.memory.long_term.store.scopes() if s is not None)

    def _current(self, scope: str, key: str) -> Recalled | None:
        found = self.memory.long_term.all(scope=scope, kinds=(ITEM_KIND,), where={_KEY: key})
        return found[-1] if found else None

    def _listed(self, scopes: Sequence[str], where: Mapping[str, Any] | None) -> list[Recalled]:
        """The current items of the scopes that pass `where`, in the order they were first put,
        namespace by namespace (a put over a key keeps its place, as in LangGraph's own stores)."""
        groups = []
        for scope in scopes:
            found = self.memory.long_term.all(scope=scope, kinds=(ITEM_KIND,), where=where)
            if found:
                groups.append(sorted(zip(self._origins(found), found, strict=True), key=lambda p: p[0]))
        groups.sort(key=lambda group: group[0][0])
        return [r for group in groups for _, r in group]

    def _origins(self, found: Sequence[Recalled]) -> list[float]:
        """When each item was first put: its first version's write time."""
        records = {r.id: r for r in self.memory.long_term.store.get([m.id for m in found])}
        lineages = [version_of(records[m.id]).lineage if m.id in records else m.id for m in found]
        firsts = {r.id: r.created_at for r in self.memory.long_term.store.get(list(set(lineages)))}
        return [firsts.get(lineage, m.created_at) for lineage, m in zip(lineages, found, strict=True)]

    def _text(
        self, namespace: Sequence[str], key: str, value: Mapping[str, Any], index: Literal[False] | list[str] | None
    ) -> tuple[str, bool]:
        """What is embedded of an item, and whether ranked search sees it.

        An item without text to embed (`index=False`, fields it lacks, or only small talk such
        as "ok", which fourfold never keeps as a memory) is stored under its path instead.
        """
        fields = self.fields if index is None else (index or [])
        texts = [t for path in fields for t in get_text_at_path(dict(value), tokenize_path(path) if path != "$" else path)]
        text = "\n".join(t for t in texts if t.strip())
        if text.strip() and not is_chatter(text):
            return text, True
        return "/".join([*namespace, key]), False

    def _items(self, found: Sequence[Recalled], scores: Sequence[float | None] | None) -> list[Any]:
        """LangGraph's `Item`s (or `SearchItem`s with `scores`), created when their first version was."""
        origins = self._origins(found)
        out: list[Any] = []
        for i, m in enumerate(found):
            fields: dict[str, Any] = {
                "namespace": namespace_of(m.scope or ""), "key": str(m.metadata[_KEY]),
                "value": {k[len(_FIELD):]: v for k, v in m.metadata.items() if k.startswith(_FIELD)},
                "created_at": _when(origins[i]), "updated_at": _when(m.created_at),
            }
            out.append(Item(**fields) if scores is None else SearchItem(**fields, score=scores[i]))
        return out


def _memory_key(key: str) -> str:
    """The memory key an item's versions share: a digest, so no two keys are ever taken for one
    kind of preference (`fourfold.longterm.namespace`), and none reads as a secret."""
    if not isinstance(key, str) or not key:
        raise InvalidInput("a store key must be a non-empty string")
    for salt in range(16):
        digest = hashlib.blake2b(f"{salt}\x00{key}".encode(), digest_size=8).hexdigest()
        try:
            return str(check_key(f"item {digest}"))
        except InvalidInput:
            continue
    raise InvalidInput(f"no memory key can be made for the store key {key[:40]!r}")


def _where(langgraph_filter: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """LangGraph's filter on a value's fields as fourfold's `where` on the item's metadata."""
    if not langgraph_filter:
        return None
    return {_FIELD + k: v for k, v in langgraph_filter.items()}


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    else:
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    return all(p == "*" or n == p for n, p in pairs)


def _when(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)
