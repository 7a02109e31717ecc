"""Authoritative facts (policies, limits, definitions) in SQLite, for exact lookups by key."""

from __future__ import annotations

import builtins
import json
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from fourfold._lifecycle import Closing
from fourfold._validate import check_k, check_text
from fourfold.embeddings.base import Embedder, Vectors
from fourfold.errors import (
    InvalidInput,
    NotFound,
    StoreCorrupt,
    StoreUnavailable,
)
from fourfold.semantic.fact_search import SEARCH_FLOOR, nearest_facts
from fourfold.semantic.keys import (
    MAX_KEY_CHARS,
    MAX_VALUE_BYTES,
    UNKNOWN,
    check_size,
    check_tool_description,
    is_key,
    validate_key,
)
from fourfold.stores.database import Connection, Database
from fourfold.stores.engine import open_database
from fourfold.types import Fact

__all__ = [
    "MAX_DEPTH",
    "MAX_KEY_CHARS",
    "MAX_VALUE_BYTES",
    "UNKNOWN",
    "FactRow",
    "FactStore",
    "check_tool_description",
    "validate_key",
]

#: Deepest list/dict nesting accepted, so encoding never hits the recursion limit.
MAX_DEPTH = 100

_VERSION_NAME = "facts"
_CACHE_LIMIT = 4096  # cached keys (negative ones too) before the cache is dropped
_UPSERT = (
    "INSERT INTO facts (key, value_json, description, updated_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT(key) DO UPDATE SET value_json = excluded.value_json,"
    " description = excluded.description, updated_at = excluded.updated_at"
)
_ARCHIVE = (
    "INSERT INTO fact_history (key, value_json, description, replaced_at) VALUES (?, ?, ?, ?)"
)
# The lookup_policy tool's description, as the operator wrote it, in the engines' meta table.
_TOOL_META = "lookup_policy.description"


class FactRow(NamedTuple):
    """A fact as stored: its JSON text and a time (updated, or replaced for history rows)."""

    key: str
    value_json: str
    description: str
    at: float


class _Row(NamedTuple):
    """A fact as stored, plus its rendering for a model (cached together)."""

    value_json: str
    description: str
    updated_at: float
    text: str


class FactStore(Closing):
    """Key -> JSON value facts in one SQLite file, safe across threads and processes."""

    def __init__(self, path: str | Path | Database, *, timeout: float = 30.0, embedder: Embedder | None = None) -> None:
        """A path (or a postgresql:// URL) opens a database of the store's own; a `Database` is shared.

        `embedder` lets `search` match a question to a fact by meaning, not only by shared words."""
        self._owns = not isinstance(path, Database)
        self.db = open_database(path, timeout=timeout)
        self.path = self.db.where
        self.timeout = timeout
        self._lock = threading.Lock()
        # key -> row (None: known absent); valid while the facts' version is unchanged.
        self._cache: dict[str, _Row | None] = {}
        self._seen_version: int | None = None
        self._closed = False
        self.embedder = embedder
        self._vectors: dict[str, Vectors] = {}  # fact_text -> its vector, for `search`

    def __repr__(self) -> str:
        return f"FactStore({str(self.path)!r})"

    def close(self) -> None:
        """Close the connection; further calls raise StoreUnavailable. Idempotent."""
        with self._lock:
            if not self._closed and self._owns:
                self.db.close()
            self._closed = True
            self._cache.clear()

    def set(self, key: str, value: Any, *, description: str | None = None) -> Fact:
        """Record `value` under `key`, archiving the previous value; None keeps the description."""
        key = validate_key(key)
        value_json = _encode(value)
        if description is not None:
            _check_description(description)
        _refuse_secrets(key, value, description)
        with self._writing() as conn:
            stored = _upsert(conn, key, value_json, description)
            row = _make_row(*stored, path=self.path)
        self._remember(key, row)
        return _fact(key, row, self.path)

    def get(self, key: str) -> Fact:
        """The fact recorded under `key`; NotFound if there is none."""
        row = self._row(validate_key(key))
        if row is None:
            raise NotFound(f"no fact named {key!r}")
        return _fact(key, row, self.path)

    def lookup(self, key: object) -> str:
        """The value as text for a model (str as-is, else JSON), or exactly UNKNOWN.

        An invalid or non-string key is also UNKNOWN: a model's bad call is not an error.
        """
        if not is_key(key):
            return UNKNOWN
        row = self._row(key)
        return UNKNOWN if row is None else row.text

    def search(self, query: str, *, k: int = 3, min_score: float = SEARCH_FLOOR) -> builtins.list[Fact]:
        """The facts whose key name and description are nearest a question, best first ("money
        back on the annual plan" finds `refund_window_days_annual`); those less than `min_score`
        relevant are left out (`fourfold.semantic.fact_search`)."""
        query, k = check_text(query, what="query"), check_k(k)
        embed = self._embed if self.embedder is not None else None
        return [fact for fact, _ in nearest_facts(query, self.list(), k=k, embed=embed, min_score=min_score)]

    def _embed(self, texts: builtins.list[str]) -> Vectors:
        """The query's vector and the facts' (cached by text), as rows, for `nearest_facts`."""
        assert self.embedder is not None
        query, *known = texts
        found = {t: self._vectors.get(t) for t in known}  # read once: another thread may clear the cache
        missing = [t for t, v in found.items() if v is None]
        fresh = self.embedder.embed_many([query, *missing])
        made = dict(zip(missing, fresh[1:], strict=True))
        if len(self._vectors) + len(made) > _CACHE_LIMIT:
            self._vectors.clear()
        self._vectors.update(made)
        return np.stack([fresh[0], *(made[t] if (v := found[t]) is None else v for t in known)])

    def delete(self, key: str, *, purge: bool = False) -> None:
        """Remove a fact, keeping its last value in the history; NotFound if unknown.

        `purge` erases the key and every value it ever had (its whole history) from the
        database and its log instead, for a value that should never have been stored.
        """
        key = validate_key(key)
        with self._writing() as conn:
            old = _current(conn, key)
            if old is None and not (purge and conn.execute(
                    "SELECT 1 FROM fact_history WHERE key = ?", (key,)).fetchone()):
                raise NotFound(f"no fact named {key!r}")
            if purge:
                conn.execute("DELETE FROM fact_history WHERE key = ?", (key,))
            elif old is not None:
                conn.execute(_ARCHIVE, (key, old[0], old[1], time.time()))
            conn.execute("DELETE FROM facts WHERE key = ?", (key,))
        if purge:
            self.db.erased()
        self._remember(key, None)

    def keys(self) -> builtins.list[str]:
        """Every key, sorted."""
        with self._locked() as conn:
            return [r[0] for r in conn.execute("SELECT key FROM facts ORDER BY key")]

    def history(self, key: str) -> builtins.list[tuple[Any, float]]:
        """Previous values with the time each was replaced or deleted, oldest first."""
        key = validate_key(key)
        sql = "SELECT value_json, replaced_at FROM fact_history WHERE key = ? ORDER BY id"
        with self._locked() as conn:
            rows = conn.execute(sql, (key,)).fetchall()
        return [(_decode(value_json, self.path), when) for value_json, when in rows]

    def dump(self) -> tuple[builtins.list[FactRow], builtins.list[FactRow]]:
        """Every current value and every archived one, as stored (for an export)."""
        with self._locked() as conn:
            current = conn.execute("SELECT key, value_json, description, updated_at FROM facts ORDER BY key").fetchall()
            history = conn.execute(
                "SELECT key, value_json, description, replaced_at FROM fact_history ORDER BY id"
            ).fetchall()
        return [FactRow(*r) for r in current], [FactRow(*r) for r in history]

    def restore(self, current: Sequence[FactRow], history: Sequence[FactRow]) -> None:
        """Write rows of a `dump` back as they were (an import); values are checked as by `set`."""
        for row in (*current, *history):
            validate_key(row.key)
            _encode(_decode(row.value_json, self.path))
        with self._writing() as conn:
            for row in history:  # a row already there (the same dump read twice) is not doubled
                if conn.execute("SELECT 1 FROM fact_history WHERE key = ? AND value_json = ? AND replaced_at = ?",
                                (row.key, row.value_json, row.at)).fetchone() is None:
                    conn.execute(_ARCHIVE, tuple(row))
            conn.executemany(_UPSERT, [tuple(r) for r in current])
        with self._lock:
            self._cache.clear()

    def list(self) -> builtins.list[Fact]:
        """Every fact, sorted by key."""
        sql = "SELECT key, value_json, description, updated_at FROM facts ORDER BY key"
        with self._locked() as conn:
            rows = conn.execute(sql).fetchall()
        return [Fact(k, _decode(v, self.path), d, t) for k, v, d, t in rows]

    def tool_schema(
        self, *, name: str = "lookup_policy", description: str | None = None
    ) -> dict[str, Any]:
        """An Anthropic tool schema whose key enum is the current keys (see `policy_tool_schema`).

        The tool's description is `description`, else the one stored by `set_tool_description`.
        """
        from fourfold.semantic.tools import policy_tool_schema

        text = self.tool_description() if description is None else description
        return policy_tool_schema(self.descriptions(), name=name, description=text)

    def tool_description(self) -> str:
        """What the lookup_policy tool is for, as the operator stored it (else the default)."""
        from fourfold.semantic.tools import DEFAULT_DESCRIPTION

        with self._locked() as conn:
            row = conn.execute("SELECT value FROM meta WHERE name = ?", (_TOOL_META,)).fetchone()
        return DEFAULT_DESCRIPTION if row is None else str(row[0])

    def set_tool_description(self, description: str | None) -> str:
        """Store what the lookup_policy tool is for ("Values of the Acme returns desk"), so every
        schema, agent and MCP server of this data dir offers it; None restores the default."""
        if description is not None:
            description = check_tool_description(description)
            _refuse_secrets(_TOOL_META, description, None)
        with self._writing() as conn:
            if description is None:
                conn.execute("DELETE FROM meta WHERE name = ?", (_TOOL_META,))
            else:
                conn.execute(
                    "INSERT INTO meta (name, value) VALUES (?, ?)"
                    " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    (_TOOL_META, description),
                )
        return self.tool_description()

    def descriptions(self) -> dict[str, str]:
        """Every key with the description it was set with ("" for none), for tool schemas."""
        return {fact.key: fact.description for fact in self.list()}

    def _locked(self) -> AbstractContextManager[Connection]:
        """A read snapshot of the database."""
        return self._open(self.db.read)

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """A write transaction that moves the facts' version on (other processes see it)."""
        with self._open(self.db.write) as conn:
            yield conn
            ((before, after),) = self.db.bump(conn, [_VERSION_NAME]).values()
        with self._lock:  # the cache stays only if it was current when the write began
            if self._seen_version == before:
                self._seen_version = after
            else:
                self._cache.clear()
                self._seen_version = None

    def _open(self, connect: Callable[[], AbstractContextManager[Connection]]) -> AbstractContextManager[Connection]:
        """A connection from `connect`, unless the store is closed."""
        if self._closed:
            raise StoreUnavailable(f"the fact store {self.path} is closed")
        return connect()

    def _row(self, key: str) -> _Row | None:
        """The stored row for a valid key, from the cache when no one has written facts since."""
        with self._locked() as conn:
            version = self.db.version(_VERSION_NAME)
            with self._lock:
                if version != self._seen_version:
                    self._cache.clear()
                    self._seen_version = version
                if key in self._cache:
                    return self._cache[key]
            row = _current(conn, key)
        made = None if row is None else _make_row(*row, path=self.path)
        with self._lock:
            if self._seen_version == version:
                self._remember(key, made)
        return made

    def _remember(self, key: str, row: _Row | None) -> None:
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = row


def _check_description(description: object) -> None:
    if not isinstance(description, str):
        raise InvalidInput(f"description must be a string, not {type(description).__name__}")
    check_size(description, "description")


def _encode(value: Any) -> str:
    """The value as JSON text; InvalidInput unless it round-trips to an equal value of the same types."""
    _check_json(value, 0)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:  # e.g. an int past Python's digit limit
        raise InvalidInput(f"fact value cannot be stored as JSON: {exc}") from None
    check_size(text, "fact value (as JSON)")
    return text


def _check_json(value: Any, depth: int) -> None:
    """Exact JSON types only: a tuple, set, int subclass or non-str dict key would not round-trip."""
    if depth > MAX_DEPTH:
        raise InvalidInput(f"fact value is nested deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if kind in (str, int, bool, type(None)):
        return
    if kind is float:
        if not math.isfinite(value):
            raise InvalidInput(f"fact value {value!r} is not a finite number (JSON has no NaN/inf)")
        return
    if kind is list:
        for item in value:
            _check_json(item, depth + 1)
        return
    if kind is dict:
        for name, item in value.items():
            if type(name) is not str:
                raise InvalidInput(
                    f"fact value dict keys must be strings, got {type(name).__name__}"
                )
            _check_json(item, depth + 1)
        return
    raise InvalidInput(
        f"fact values are JSON (str, int, float, bool, None, list, dict), not {kind.__name__}"
    )


def _decode(value_json: str, path: str) -> Any:
    try:
        return json.loads(value_json)
    except (TypeError, ValueError) as exc:
        raise StoreCorrupt(
            f"{path} holds a fact value that is not valid JSON ({exc}); restore the file from "
            "a backup, or move it aside to start an empty fact store"
        ) from None


def _make_row(value_json: str, description: str, updated_at: float, *, path: str) -> _Row:
    value = _decode(value_json, path)
    return _Row(
        value_json, description, updated_at, value if isinstance(value, str) else value_json
    )


def _fact(key: str, row: _Row, path: str) -> Fact:
    """A Fact with a freshly decoded value, so callers cannot mutate the cache."""
    return Fact(key, _decode(row.value_json, path), row.description, row.updated_at)


def _current(conn: Connection, key: str) -> tuple[str, str, float] | None:
    sql = "SELECT value_json, description, updated_at FROM facts WHERE key = ?"
    row: tuple[str, str, float] | None = conn.execute(sql, (key,)).fetchone()
    return row


def _upsert(
    conn: Connection, key: str, value_json: str, description: str | None
) -> tuple[str, str, float]:
    """Write inside a transaction; an unchanged value and description is not a new version."""
    old = _current(conn, key)
    text = description if description is not None else (old[1] if old else "")
    if old is not None and old[0] == value_json and old[1] == text:
        return old
    now = time.time()
    if old is not None:
        conn.execute(_ARCHIVE, (key, old[0], old[1], now))
    conn.execute(_UPSERT, (key, value_json, text, now))
    return value_json, text, now


def _refuse_secrets(key: str, value: Any, description: str | None) -> None:
    """Facts are shown to every customer's model through lookup_policy: never store a secret.

    Redacting would silently change an authoritative value, so a secret is refused instead.
    """
    from fourfold._validate import check_identifier
    from fourfold.text.redact import redact_json

    check_identifier(key, what="fact key")
    # Every string in the value counts, its objects' keys included, at any depth.
    found = redact_json([value, description])[1]
    if found:
        kinds = ", ".join(sorted(set(found)))
        raise InvalidInput(f"fact {key!r} looks like it holds a secret ({kinds}); facts are shown to the model")
