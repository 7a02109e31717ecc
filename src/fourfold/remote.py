"""`RemoteMemory`: the `Memory` API over HTTP, so an agent moves to the service by configuration.

    memory = Memory.open("./agent_memory")                       # embedded
    memory = connect("http://127.0.0.1:8765", api_key="ffk_...")  # the same calls, served

Each method sends one request to `fourfold serve` and returns the library's own types;
failures raise the library's typed errors (plus `Unauthorized` and `TooLarge`), rebuilt
from the service's stable error codes.
"""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from fourfold.errors import InvalidInput, StoreUnavailable
from fourfold.longterm.store import MemoryId, MemoryInput, When
from fourfold.longterm.versions import as_timestamp
from fourfold.semantic.tools import DEFAULT_DESCRIPTION, policy_tool_schema
from fourfold.service.errors import ServiceError, TooLarge, Unauthorized, error_for
from fourfold.types import DocHit, Episode, Fact, Recalled, Redaction, Remembered

__all__ = ["API_KEY_ENV", "RemoteMemory", "ServiceError", "TooLarge", "Unauthorized", "connect"]

#: Where `connect` finds the API key when none is passed.
API_KEY_ENV = "FOURFOLD_API_KEY"


def connect(url: str, *, api_key: str | None = None, timeout: float = 30.0) -> RemoteMemory:
    """A `RemoteMemory` for the service at `url` (the key defaults to $FOURFOLD_API_KEY)."""
    return RemoteMemory(url, api_key=api_key, timeout=timeout)


class _Http:
    """One HTTP client, JSON both ways, and error codes turned back into typed errors."""

    def __init__(self, client: httpx.Client, *, owned: bool) -> None:
        self.client = client
        self.owned = owned

    def call(self, method: str, path: str, body: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        # ensure_ascii keeps lone surrogates as \\u escapes, so the service (not this
        # client) refuses them, with the same InvalidInput the library raises.
        content = None if body is None else json.dumps(body, ensure_ascii=True)
        headers = {"Content-Type": "application/json"} if content is not None else None
        query = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = self.client.request(method, path, content=content, params=query, headers=headers)
        except httpx.HTTPError as exc:
            raise StoreUnavailable(f"fourfold service at {self.client.base_url} failed: {exc}") from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_success:
            return data
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):
            raise error_for(str(error.get("code")), str(error.get("message")))
        raise ServiceError(f"fourfold service answered HTTP {response.status_code}")


class RemoteMemory:
    """Long-term, episodic and semantic memory of one tenant, served by `fourfold serve`."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        client: httpx.Client | None = None,
    ) -> None:
        """`client` injects a ready `httpx.Client` (e.g. FastAPI's TestClient); else one is made."""
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if client is None:
            http = _Http(httpx.Client(base_url=url, headers=headers, timeout=timeout), owned=True)
        else:
            client.headers.update(headers)
            http = _Http(client, owned=False)
        self.url = url
        self._http = http
        self.long_term = RemoteLongTermMemory(http)
        self.episodes = RemoteEpisodeLog(http)
        self.facts = RemoteFactStore(http)
        self.docs = RemoteDocumentStore(http)

    def add(self, messages: Iterable[Mapping[str, Any] | str], *, scope: str | None = None) -> list[Remembered]:
        """Keep what a conversation says that is worth remembering (the service's model or rules)."""
        if isinstance(messages, (str, Mapping)):
            raise InvalidInput("messages must be a list of messages")
        body = {"messages": [_plain(m) for m in messages], "scope": scope}
        return [_remembered(r) for r in self._http.call("POST", "/v1/memories/add", body)["results"]]

    def forget_scope(self, scope: str) -> dict[str, int]:
        """Erase one scope from every store; other scopes are untouched. Returns counts."""
        counts: dict[str, int] = self._http.call("DELETE", f"/v1/scopes/{_segment(scope, 'scope')}")
        return counts

    def whoami(self) -> str:
        """The tenant this key belongs to."""
        return str(self._http.call("GET", "/v1/whoami")["tenant"])

    def close(self) -> None:
        if self._http.owned:
            self._http.client.close()

    def __enter__(self) -> RemoteMemory:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteMemory({self.url!r})"


class RemoteLongTermMemory:
    """`LongTermMemory` over HTTP: remember / recall / forget."""

    def __init__(self, http: _Http) -> None:
        self._http = http

    def remember(
        self,
        text: str,
        *,
        scope: str | None = None,
        kind: str = "note",
        metadata: Mapping[str, Any] | None = None,
        key: str | None = None,
        valid_from: When | None = None,
    ) -> MemoryId:
        body = {"text": text, "scope": scope, "kind": kind, "metadata": _plain(metadata), "key": key,
                "valid_from": _when(valid_from, "valid_from")}
        return MemoryId.of(_remembered(self._http.call("POST", "/v1/memories", _unset(body, "key", "valid_from"))))

    def update(
        self,
        memory_id: str,
        text: str,
        *,
        kind: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        valid_from: When | None = None,
    ) -> MemoryId:
        body = {"text": text, "kind": kind, "metadata": _plain(metadata), "valid_from": _when(valid_from, "valid_from")}
        path = f"/v1/memories/{_segment(memory_id, 'memory_id')}/versions"
        return MemoryId.of(_remembered(self._http.call("POST", path, body)))

    def history(self, memory_id: str) -> list[Recalled]:
        path = f"/v1/memories/{_segment(memory_id, 'memory_id')}/versions"
        return [_recalled(r) for r in self._http.call("GET", path)["results"]]

    def remember_many(self, items: Iterable[MemoryInput | Mapping[str, Any]]) -> list[Remembered]:
        body = {"items": [_memory_input(item) for item in items]}
        return [_remembered(r) for r in self._http.call("POST", "/v1/memories/batch", body)["results"]]

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
        body = {
            "query": query, "scope": scope, "k": k, "kinds": _kinds(kinds),
            "where": _plain(where), "min_score": min_score,
            "as_of": _when(as_of, "as_of"), "include_superseded": include_superseded,
        }
        return [_recalled(r) for r in self._http.call("POST", "/v1/memories/search", body)["results"]]

    def forget(self, memory_id: str) -> None:
        self._http.call("DELETE", f"/v1/memories/{_segment(memory_id, 'memory_id')}")

    def forget_scope(self, scope: str) -> int:
        return _forget_scope(self._http, "/v1/memories", scope)

    def get(self, memory_id: str) -> Recalled:
        return _recalled(self._http.call("GET", f"/v1/memories/{_segment(memory_id, 'memory_id')}"))

    def all(
        self,
        *,
        scope: str | None = None,
        kinds: Sequence[str] | None = None,
        as_of: When | None = None,
        include_superseded: bool = False,
    ) -> list[Recalled]:
        params = {"scope": scope, "kind": _kinds(kinds), "as_of": _when(as_of, "as_of"),
                  "include_superseded": "true" if include_superseded else None}
        return [_recalled(r) for r in self._http.call("GET", "/v1/memories", params=params)["results"]]


class RemoteEpisodeLog:
    """`EpisodeLog` over HTTP: record episodes, find similar successes, erase them."""

    def __init__(self, http: _Http) -> None:
        self._http = http

    def record(
        self,
        *,
        goal: str,
        actions: Sequence[str],
        outcome: str,
        success: bool,
        scope: str | None = None,
        tags: Sequence[str] = (),
    ) -> Episode:
        body = {"goal": goal, "actions": _list(actions), "outcome": outcome, "success": success,
                "scope": scope, "tags": _list(tags)}
        return _episode(self._http.call("POST", "/v1/episodes", body))

    def record_many(self, items: Sequence[Mapping[str, Any]]) -> list[Episode]:
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise InvalidInput("record_many takes a sequence of episode mappings")
        body = {"items": [_plain(item) for item in items]}
        return [_episode(e) for e in self._http.call("POST", "/v1/episodes/batch", body)["results"]]

    def similar_successes(self, situation: str, *, k: int = 3, scope: str | None = None) -> list[Episode]:
        body = {"situation": situation, "k": k, "scope": scope}
        return [_episode(e) for e in self._http.call("POST", "/v1/episodes/similar", body)["results"]]

    def episodes(self, *, scope: str | None = None, success: bool | None = None) -> list[Episode]:
        params = {"scope": scope, "success": None if success is None else str(success).lower()}
        return [_episode(e) for e in self._http.call("GET", "/v1/episodes", params=params)["results"]]

    def get(self, episode_id: str) -> Episode:
        return _episode(self._http.call("GET", f"/v1/episodes/{_segment(episode_id, 'episode_id')}"))

    def forget(self, episode_id: str) -> None:
        self._http.call("DELETE", f"/v1/episodes/{_segment(episode_id, 'episode_id')}")

    def forget_scope(self, scope: str) -> int:
        return _forget_scope(self._http, "/v1/episodes", scope)

    def forget_unscoped(self) -> int:
        return int(self._http.call("DELETE", "/v1/episodes", params={"unscoped": "true"})["deleted"])

    def __len__(self) -> int:
        return len(self.episodes())


class RemoteFactStore:
    """`FactStore` over HTTP: authoritative facts by key."""

    def __init__(self, http: _Http) -> None:
        self._http = http

    def set(self, key: str, value: Any, *, description: str | None = None) -> Fact:
        body = {"value": value, "description": description}
        return _fact(self._http.call("PUT", f"/v1/facts/{_segment(key, 'key')}", body))

    def get(self, key: str) -> Fact:
        return _fact(self._http.call("GET", f"/v1/facts/{_segment(key, 'key')}"))

    def lookup(self, key: object) -> str:
        """The value as text for a model, or exactly UNKNOWN (for any key, even a bad one)."""
        try:
            json.dumps(key)
        except (TypeError, ValueError):
            key = None  # not JSON: as unknown as a key can be
        return str(self._http.call("POST", "/v1/facts/lookup", {"key": key})["text"])

    def delete(self, key: str, *, purge: bool = False) -> None:
        self._http.call("DELETE", f"/v1/facts/{_segment(key, 'key')}", params={"purge": "true"} if purge else None)

    def keys(self) -> builtins.list[str]:
        return [f.key for f in self.list()]

    def list(self) -> builtins.list[Fact]:
        return [_fact(f) for f in self._http.call("GET", "/v1/facts")["facts"]]

    def history(self, key: str) -> builtins.list[tuple[Any, float]]:
        found = self._http.call("GET", f"/v1/facts/{_segment(key, 'key')}/history")["history"]
        return [(h["value"], float(h["replaced_at"])) for h in found]

    def tool_schema(self, *, name: str = "lookup_policy", description: str | None = None) -> dict[str, Any]:
        """The lookup_policy schema over the current keys (built by the library's own function)."""
        text = DEFAULT_DESCRIPTION if description is None else description
        return policy_tool_schema(self.descriptions(), name=name, description=text)

    def descriptions(self) -> dict[str, str]:
        """Every key with the description it was set with ("" for none), for tool schemas."""
        return {fact.key: fact.description for fact in self.list()}


class RemoteDocumentStore:
    """`DocumentStore` over HTTP; a path is read here, on the client, never by the service."""

    def __init__(self, http: _Http) -> None:
        self._http = http

    def ingest(
        self, text: str | os.PathLike[str], *, source: str | None = None, scope: str | None = None
    ) -> list[str]:
        """A string is the document's text; a `Path` is read here, as `ingest_file` does."""
        if isinstance(text, os.PathLike):
            return self.ingest_file(text, source=source, scope=scope)
        if not isinstance(source, str):
            raise InvalidInput("give a source name for text documents (source='refund-policy.md')")
        return self.ingest_text(text, source=source, scope=scope)

    def ingest_file(self, path: str | os.PathLike[str], *, source: str | None = None, scope: str | None = None) -> list[str]:
        """Read a local UTF-8 file (on this client) and send its text."""
        from fourfold.semantic.docs import read_document  # the library's own reading rule

        text, name = read_document(path)
        return self.ingest_text(text, source=source or name, scope=scope)

    def ingest_text(self, text: str, *, source: str, scope: str | None = None) -> list[str]:
        body = {"text": text, "source": source, "scope": scope}
        return [str(i) for i in self._http.call("POST", "/v1/docs", body)["ids"]]

    def search(
        self, query: str, *, k: int = 5, scope: str | None = None, source: str | None = None
    ) -> list[DocHit]:
        body = {"query": query, "k": k, "scope": scope, "source": source}
        return [DocHit(**h) for h in self._http.call("POST", "/v1/docs/search", body)["results"]]

    def sources(self, *, scope: str | None = None) -> list[str]:
        return [str(s) for s in self._http.call("GET", "/v1/docs/sources", params={"scope": scope})["sources"]]

    def delete_source(self, source: str, *, scope: str | None = None) -> int:
        path = f"/v1/docs/sources/{_segment(source, 'source')}"
        return int(self._http.call("DELETE", path, params={"scope": scope})["deleted"])


# -- wire <-> library types ----------------------------------------------------------------


def _segment(value: object, what: str) -> str:
    """A path segment; the service gives the library's answer for any non-empty string."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{what} must be a non-empty string")
    return quote(value, safe="").replace(".", "%2E")  # so "." and ".." stay names, not paths


def _plain(value: Any) -> Any:
    """Mappings and sequences as JSON-ready dicts and lists (tuples included)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _list(value: Any) -> Any:
    """Sequences travel as lists; anything else as itself, for the service to refuse."""
    return list(value) if isinstance(value, (list, tuple)) else value


def _kinds(kinds: Sequence[str] | None) -> Any:
    return [kinds] if isinstance(kinds, str) else _list(kinds)


def _memory_input(item: MemoryInput | Mapping[str, Any]) -> Any:
    if isinstance(item, MemoryInput):
        body = {"text": item.text, "scope": item.scope, "kind": item.kind, "metadata": _plain(item.metadata),
                "key": item.key, "valid_from": _when(item.valid_from, "valid_from")}
        return _unset(body, "key", "valid_from")
    plain = _plain(item)
    if isinstance(plain, dict) and "valid_from" in plain:
        plain["valid_from"] = _when(plain["valid_from"], "valid_from")
    return plain


def _when(value: Any, what: str) -> float | None:
    """A time as unix seconds for the wire (the library's checks, before anything is sent)."""
    return None if value is None else as_timestamp(value, what=what)


def _unset(body: dict[str, Any], *names: str) -> dict[str, Any]:
    """The body without these fields when they are None (a service of before versions refuses them)."""
    return {k: v for k, v in body.items() if k not in names or v is not None}


def _remembered(r: Mapping[str, Any]) -> Remembered:
    redactions = tuple(Redaction(**x) for x in r["redacted"])
    return Remembered(r["id"], r["text"], redactions, bool(r["created"]), tuple(r.get("supersedes", ())))


def _recalled(r: Mapping[str, Any]) -> Recalled:
    return Recalled(
        id=r["id"], text=r["text"], kind=r["kind"], scope=r["scope"], score=float(r["score"]),
        metadata=dict(r["metadata"]), created_at=float(r["created_at"]),
        key=r.get("key"), valid_from=float(r.get("valid_from") or 0.0),
        valid_to=None if r.get("valid_to") is None else float(r["valid_to"]),
    )


def _forget_scope(http: _Http, path: str, scope: object) -> int:
    """DELETE every item of one named scope under `path`; returns how many."""
    if not isinstance(scope, str):
        raise InvalidInput("forget_scope needs a scope name")
    return int(http.call("DELETE", path, params={"scope": scope})["deleted"])


def _episode(e: Mapping[str, Any]) -> Episode:
    return Episode(
        goal=e["goal"], actions=tuple(e["actions"]), outcome=e["outcome"], success=bool(e["success"]),
        ts=float(e["ts"]), id=e["id"], scope=e["scope"], tags=tuple(e["tags"]),
    )


def _fact(f: Mapping[str, Any]) -> Fact:
    return Fact(f["key"], f["value"], f["description"], float(f["updated_at"]))
