"""The remote clients' shared, pure part: each API call as a request plus how to read its answer.

`RemoteMemory` (sync) and `AsyncRemoteMemory` (async) are thin I/O twins over these calls:
every method builds its `Call` here and hands it to its transport, which sends the request
and applies `Call.read` to the answer. So what a call sends, how the answer becomes the
library's types, and which typed error a failure raises are written once, for both.
"""

from __future__ import annotations

import builtins
import inspect
import json
import os
import sys
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, Concatenate, Generic, ParamSpec, TypeVar, overload
from urllib.parse import quote

import httpx

from fourfold.agent.cases import CaseBase
from fourfold.agent.deidentify import Ticket
from fourfold.episodic.log import EpisodeLog
from fourfold.errors import InvalidInput, StoreUnavailable
from fourfold.longterm.store import LongTermMemory, MemoryInput, When
from fourfold.longterm.versions import as_timestamp
from fourfold.protocols import SharedCases
from fourfold.semantic.docs import TEXT_NEEDS_SOURCE, DocumentStore, read_document
from fourfold.semantic.facts import FactStore
from fourfold.serialize import from_json, plain
from fourfold.service.errors import ServiceError, error_for
from fourfold.types import DocHit, Episode, Fact, Recalled, Remembered

T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request to the service, and the function that turns its JSON answer into a `T`."""

    method: str
    path: str
    read: Callable[[Any], T]
    body: Any = None
    params: Mapping[str, Any] | None = None

    def request_args(self) -> dict[str, Any]:
        """Keyword arguments of `httpx.Client.request` / `AsyncClient.request`."""
        content = None if self.body is None else _json_text(self.body)
        headers = {"Content-Type": "application/json"} if content is not None else None
        query = {k: v for k, v in (self.params or {}).items() if v is not None}
        return {"method": self.method, "url": self.path, "content": content, "params": query, "headers": headers}


def _json_text(data: Any) -> str:
    """What the caller passed (metadata, a filter, messages) as JSON, read as the library reads it.

    The library takes JSON-compatible data and reads it through `json` (`check_metadata`), so
    the client encodes it with `json` too: a `Remembered` in metadata travels as its id, a
    tuple as a list, and what `json` cannot encode is refused here, before anything is sent.
    """
    try:
        # ensure_ascii keeps lone surrogates as \\u escapes, so the service (not this
        # client) refuses them, with the same InvalidInput the library raises.
        return json.dumps(plain(data), ensure_ascii=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"not JSON-compatible: {exc}") from None
    except RecursionError:  # a circular or very deep structure
        raise InvalidInput("nested too deeply to send") from None


def answer(call: Call[T], response: httpx.Response) -> T:
    """The call's result from the service's response; a failure as the library's typed error."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if response.is_success:
        return call.read(data)
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        raise error_for(str(error.get("code")), str(error.get("message")))
    raise ServiceError(f"fourfold service answered HTTP {response.status_code}")


def unreachable(base_url: object, exc: httpx.HTTPError) -> StoreUnavailable:
    return StoreUnavailable(f"fourfold service at {base_url} failed: {exc}")


#: Where `connect` finds the API key when none is passed (both clients read it).
API_KEY_ENV = "FOURFOLD_API_KEY"


def headers_for(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


Client = TypeVar("Client", httpx.Client, httpx.AsyncClient)


class Connection(Generic[Client]):
    """The HTTP client a remote memory sends with, carrying its key, and whether the memory owns it.

    An injected `client` (a TestClient, an ASGI transport) gets the key's header and stays the
    caller's to close; without one, `make` builds a client for `url` that the memory closes.
    """

    def __init__(
        self, client: Client | None, make: Callable[..., Client], *, url: str, api_key: str | None, timeout: float
    ) -> None:
        headers = headers_for(api_key if api_key is not None else os.environ.get(API_KEY_ENV))
        self.owned = client is None
        if client is None:
            client = make(base_url=url, headers=headers, timeout=timeout)
        else:
            client.headers.update(headers)
        self.client: Client = client


class Served(Generic[Client]):
    """What both remote memories are: one connection to the service, and a part per store over it.

    Each twin names its connection and client classes and declares its parts as annotations
    (`long_term: RemoteLongTermMemory`); the constructor, written once here, makes each part.
    `client` injects a ready httpx client (FastAPI's TestClient, one on an `httpx.ASGITransport`),
    which stays the caller's to close; else one is made, and closed with the memory.
    """

    _connection: ClassVar[type[Connection[Any]]]
    _client: ClassVar[Callable[..., Any]]
    _http: Connection[Any]
    url: str

    def __init__(
        self, url: str, *, api_key: str | None = None, timeout: float = 30.0, client: Client | None = None
    ) -> None:
        self._http = self._connection(client, self._client, url=url, api_key=api_key, timeout=timeout)
        self.url = url
        for name, part in _parts(type(self)):
            setattr(self, name, part(self._http))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


_Parts = tuple[tuple[str, type["SyncPart | AsyncPart"]], ...]
#: Each remote memory class's parts, found at its first construction (its module is whole by then).
_PARTS: dict[type[Any], _Parts] = {}


def _parts(served: type[Any]) -> _Parts:
    """The parts a remote memory declares, found once per class (threads that race find the same)."""
    found = _PARTS.get(served)
    if found is None:
        found = _PARTS[served] = _declared_parts(served)
    return found


def _declared_parts(served: type[Any]) -> _Parts:
    """The annotations of a remote memory and its bases that name a part class of their module.

    They are looked up, not evaluated (they are strings, `from __future__ import annotations`),
    so no other annotation can fail or run code on construction. An annotation that is a name
    (`long_term: RemoteLongTermMemory`) must name something: a misspelt part would otherwise
    leave the memory without it, unnoticed until a call.
    """
    found: dict[str, Any] = {}
    for klass in reversed(served.__mro__):
        names = vars(sys.modules[klass.__module__])
        for name, hint in vars(klass).get("__annotations__", {}).items():
            # fourfold's own clients must name their parts right (a misspelt one would be a part
            # silently missing); a user's subclass may annotate names it imports for type checking only.
            strict = klass.__module__.split(".")[0] == "fourfold"
            found[name] = _named(hint, names, f"{klass.__qualname__}.{name}", strict) if isinstance(hint, str) else hint
    return tuple((name, kind) for name, kind in found.items() if isinstance(kind, type) and issubclass(kind, SyncPart | AsyncPart))


def _named(hint: str, names: Mapping[str, Any], where: str, strict: bool) -> Any:
    """What an annotation that is a (dotted) name names in its module; None for any other
    annotation (`ClassVar[...]`, a union), which is never a part, and, unless `strict`, for a
    name the module does not hold at run time."""
    first, *rest = hint.split(".")
    if not all(part.isidentifier() for part in (first, *rest)):
        return None
    if first in names:
        value = names[first]
    elif hasattr(builtins, first):
        value = getattr(builtins, first)
    else:
        return _unnamed(hint, where, strict)
    for part in rest:
        if not hasattr(value, part):
            return _unnamed(hint, where, strict)
        value = getattr(value, part)
    return value


def _unnamed(hint: str, where: str, strict: bool) -> None:
    if strict:
        raise TypeError(f"{where}: the annotation {hint!r} names nothing in its module")
    return None


# -- the calls ------------------------------------------------------------------------------------


class SyncPart:
    """A part of the sync client: its `_http.run(call)` returns the call's result."""

    def __init__(self, http: Any) -> None:
        self._http = http


class AsyncPart:
    """A part of the async client: its `_http.run(call)` is awaited for the call's result."""

    def __init__(self, http: Any) -> None:
        self._http = http


class Remote(Generic[P, T]):
    """One API call, a method of both clients: read from a `SyncPart` it returns the result,
    from an `AsyncPart` a coroutine of it. Signed and documented as its `build`."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build

        def sent(part: SyncPart, /, *args: Any, **kwargs: Any) -> Any:
            return part._http.run(build(*args, **kwargs))

        async def awaited(part: AsyncPart, /, *args: Any, **kwargs: Any) -> Any:
            return await part._http.run(build(*args, **kwargs))

        self.sent, self.awaited = _signed(sent, build), _signed(awaited, build)

    @overload
    def __get__(self, part: None, owner: type[Any]) -> Remote[P, T]: ...
    @overload
    def __get__(self, part: AsyncPart, owner: type[Any]) -> Callable[P, Coroutine[Any, Any, T]]: ...
    @overload
    def __get__(self, part: SyncPart, owner: type[Any]) -> Callable[P, T]: ...
    def __get__(self, part: object, owner: type[Any]) -> Any:
        if part is None:  # on a class: the function, for help() and inspect; on these namespaces, itself
            return self.awaited if issubclass(owner, AsyncPart) else self.sent if issubclass(owner, SyncPart) else self
        return (self.awaited if isinstance(part, AsyncPart) else self.sent).__get__(part, owner)


def _signed(run: Callable[..., Any], build: Callable[..., Any]) -> Callable[..., Any]:
    """`run` named, documented and signed as `build` with the part (`self`) first."""
    signature = inspect.signature(build)
    this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    run.__name__ = run.__qualname__ = build.__name__
    run.__doc__ = build.__doc__
    result = signature.return_annotation  # "Call[X]": the method returns X
    if isinstance(result, str) and result.startswith("Call[") and result.endswith("]"):
        result = result[len("Call["):-1]
    run.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[this, *signature.parameters.values()], return_annotation=result
    )
    return run


def remote(build: Callable[P, Call[T]]) -> Remote[P, T]:
    """A call with the parameters `build` declares (where the remote API differs from the library's)."""
    return Remote(build)


def like(method: Callable[Concatenate[Any, P], T]) -> Callable[[Callable[..., Call[T]]], Remote[P, T]]:
    """A call that takes exactly the library method's parameters, defaults included (the remote
    API is the library's); the builder is given every argument by name."""
    full = inspect.signature(method)
    public = full.replace(parameters=list(full.parameters.values())[1:])

    def decorate(build: Callable[..., Call[T]]) -> Remote[P, T]:
        def call(*args: P.args, **kwargs: P.kwargs) -> Call[T]:
            bound = public.bind(*args, **kwargs)
            bound.apply_defaults()
            return build(**bound.arguments)

        call.__name__ = call.__qualname__ = build.__name__
        call.__doc__ = build.__doc__ or method.__doc__
        call.__signature__ = public  # type: ignore[attr-defined]
        return Remote(call)

    return decorate


class _Items(Generic[T]):
    """The calls every collection of the service has alike: one item by id (`get`), erasing it
    (`forget`), erasing a scope's items (`forget_scope`). The id travels as a path segment."""

    def __init__(self, path: str, kind: type[T]) -> None:
        self.path, self.kind = path, kind

    def get(self, **item_id: str) -> Call[T]:
        return Call("GET", self._item(item_id), partial(from_json, self.kind))

    def forget(self, **item_id: str) -> Call[None]:
        return Call("DELETE", self._item(item_id), _nothing)

    def forget_scope(self, scope: str) -> Call[int]:
        return _forget_scope(self.path, scope)

    def _item(self, item_id: dict[str, str]) -> str:
        ((name, value),) = item_id.items()  # the library method's one parameter: memory_id, episode_id
        return f"{self.path}/{_segment(value, name)}"


_TICKET = ("problem", "fix")
_MEMORIES = _Items("/v1/memories", Recalled)
_EPISODES = _Items("/v1/episodes", Episode)


class Root:
    """Calls of `Memory` itself."""

    @remote
    def forget_scope(scope: str) -> Call[dict[str, int]]:
        """Erase one scope from every store; other scopes are untouched. Returns counts."""
        return Call("DELETE", f"/v1/scopes/{_segment(scope, 'scope')}", lambda d: {str(k): int(v) for k, v in d.items()})

    @remote
    def whoami() -> Call[str]:
        """The tenant this key belongs to."""
        return Call("GET", "/v1/whoami", lambda d: str(d["tenant"]))

    @remote
    def add(messages: Iterable[Mapping[str, Any] | str], *, scope: str | None = None) -> Call[list[Remembered]]:
        """Keep what a conversation says that is worth remembering (the service's model or rules)."""
        if isinstance(messages, (str, Mapping)):
            raise InvalidInput("messages must be a list of messages")
        body = {"messages": list(messages), "scope": scope}
        return Call("POST", "/v1/memories/add", lambda d: [_remembered(r) for r in d["results"]], body)


class LongTerm:
    """Calls of `LongTermMemory`."""

    @remote
    def remember(text: str, *, scope: str | None = None, kind: str = "note", metadata: Mapping[str, Any] | None = None,
                 key: str | None = None, valid_from: When | None = None) -> Call[Remembered]:
        """One memory, redacted and embedded by the service (its own consolidation applies)."""
        body = {"text": text, "scope": scope, "kind": kind, "metadata": metadata, "key": key,
                "valid_from": _when(valid_from, "valid_from")}
        return Call("POST", "/v1/memories", _remembered, _unset(body, "key", "valid_from"))

    @like(LongTermMemory.update)
    def update(memory_id: str, text: str, kind: str | None, metadata: Mapping[str, Any] | None,
               valid_from: When | None) -> Call[Remembered]:
        body = {"text": text, "kind": kind, "metadata": metadata, "valid_from": _when(valid_from, "valid_from")}
        return Call("POST", f"/v1/memories/{_segment(memory_id, 'memory_id')}/versions", _remembered, body)

    @like(LongTermMemory.history)
    def history(memory_id: str) -> Call[list[Recalled]]:
        return Call("GET", f"/v1/memories/{_segment(memory_id, 'memory_id')}/versions", _recalled_list)

    @like(LongTermMemory.profile)
    def profile(scope: str, max_tokens: int) -> Call[list[Recalled]]:
        return Call("GET", "/v1/profile", _recalled_list, params={"scope": scope, "max_tokens": max_tokens})

    @remote
    def remember_many(items: Iterable[MemoryInput | Mapping[str, Any]]) -> Call[list[Remembered]]:
        """Several memories in one request, in order (the service's consolidation applies)."""
        body = {"items": [_memory_input(item) for item in items]}
        return Call("POST", "/v1/memories/batch", lambda d: [_remembered(r) for r in d["results"]], body)

    @like(LongTermMemory.recall)
    def recall(query: str, scope: str | None, k: int, kinds: Sequence[str] | None, where: Mapping[str, Any] | None,
               min_score: float | None, as_of: When | None, include_superseded: bool) -> Call[list[Recalled]]:
        body = {"query": query, "scope": scope, "k": k, "kinds": _kinds(kinds), "where": where,
                "min_score": min_score, "as_of": _when(as_of, "as_of"), "include_superseded": include_superseded}
        return Call("POST", "/v1/memories/search", _recalled_list, body)

    forget = like(LongTermMemory.forget)(_MEMORIES.forget)
    forget_scope = like(LongTermMemory.forget_scope)(_MEMORIES.forget_scope)
    get = like(LongTermMemory.get)(_MEMORIES.get)

    @like(LongTermMemory.all)
    def all(scope: str | None, kinds: Sequence[str] | None, where: Mapping[str, Any] | None, as_of: When | None,
            include_superseded: bool) -> Call[list[Recalled]]:
        params = {"scope": scope, "kind": _kinds(kinds), "where": _where_text(where), "as_of": _when(as_of, "as_of"),
                  "include_superseded": "true" if include_superseded else None}
        return Call("GET", "/v1/memories", _recalled_list, params=params)


class Episodes:
    """Calls of `EpisodeLog`."""

    @like(EpisodeLog.record)
    def record(goal: str, actions: Sequence[str], outcome: str, success: bool, scope: str | None,
               tags: Sequence[str], problem: str, fix: str) -> Call[Episode]:
        body = {"goal": goal, "actions": _list(actions), "outcome": outcome, "success": success,
                "scope": scope, "tags": _list(tags), "problem": problem, "fix": fix}
        # a service of before problem and fix refuses the fields: sent only when given
        return Call("POST", "/v1/episodes", _episode, {k: v for k, v in body.items() if v != "" or k not in _TICKET})

    @like(EpisodeLog.record_many)
    def record_many(items: Sequence[Mapping[str, Any]]) -> Call[list[Episode]]:
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise InvalidInput("record_many takes a sequence of episode mappings")
        return Call("POST", "/v1/episodes/batch", _episode_list, {"items": list(items)})

    @like(EpisodeLog.similar_successes)
    def similar_successes(
        situation: str, k: int, scope: str | None, include_unscoped: bool = True, min_score: float | None = None
    ) -> Call[list[Episode]]:
        return Call("POST", "/v1/episodes/similar", _episode_list, {
            "situation": situation, "k": k, "scope": scope, "include_unscoped": include_unscoped, "min_score": min_score})

    @like(EpisodeLog.episodes)
    def episodes(scope: str | None, success: bool | None) -> Call[list[Episode]]:
        params = {"scope": scope, "success": None if success is None else str(success).lower()}
        return Call("GET", "/v1/episodes", _episode_list, params=params)

    @remote
    def count() -> Call[int]:
        """How many episodes there are (`len()` of the log)."""
        return Call("GET", "/v1/episodes", lambda d: len(d["results"]))

    get = like(EpisodeLog.get)(_EPISODES.get)
    forget = like(EpisodeLog.forget)(_EPISODES.forget)
    forget_scope = like(EpisodeLog.forget_scope)(_EPISODES.forget_scope)

    @like(EpisodeLog.forget_unscoped)
    def forget_unscoped() -> Call[int]:
        return Call("DELETE", "/v1/episodes", _deleted, params={"unscoped": "true"})


class Cases:
    """Calls of the shared case base (`CaseBase`): the service de-identifies what it is sent."""

    @like(SharedCases.add)
    def add(ticket: Ticket, source_scope: str) -> Call[Episode | None]:
        """Send a successfully resolved ticket for sharing: the case the service wrote, waiting
        for an operator's review (None when nothing generic was left). Forbidden when the service
        does not review cases."""
        body = {"goal": ticket.goal, "messages": _list(ticket.messages), "actions": _list(ticket.actions),
                "outcome": ticket.outcome, "source_scope": source_scope, "success": True}
        return Call("POST", "/v1/cases", lambda d: _episode(d["case"]) if d["case"] is not None else None, body)

    @like(CaseBase.similar)
    def similar(situation: str, k: int, exclude_source: str | None, min_score: float | None) -> Call[list[Episode]]:
        """The shared cases most like `situation`, without those made from `exclude_source`'s tickets."""
        return Call("POST", "/v1/cases/similar", _episode_list, {
            "situation": situation, "k": k, "exclude_source": exclude_source, "min_score": min_score})


class Facts:
    """Calls of `FactStore`."""

    @like(FactStore.set)
    def set(key: str, value: Any, description: str | None) -> Call[Fact]:
        return Call("PUT", f"/v1/facts/{_segment(key, 'key')}", _fact, {"value": value, "description": description})

    @like(FactStore.get)
    def get(key: str) -> Call[Fact]:
        return Call("GET", f"/v1/facts/{_segment(key, 'key')}", _fact)

    @like(FactStore.lookup)
    def lookup(key: object) -> Call[str]:
        try:
            json.dumps(key)
        except (TypeError, ValueError):
            key = None  # not JSON: as unknown as a key can be
        return Call("POST", "/v1/facts/lookup", lambda d: str(d["text"]), {"key": key})

    @like(FactStore.search)
    def search(query: str, k: int, min_score: float) -> Call[builtins.list[Fact]]:
        return Call("POST", "/v1/facts/search", lambda d: [_fact(f) for f in d["facts"]],
                    {"query": query, "k": k, "min_score": min_score})

    @like(FactStore.delete)
    def delete(key: str, purge: bool) -> Call[None]:
        return Call("DELETE", f"/v1/facts/{_segment(key, 'key')}", _nothing, params={"purge": "true"} if purge else None)

    @like(FactStore.keys)
    def keys() -> Call[builtins.list[str]]:
        return Call("GET", "/v1/facts", lambda d: [str(f["key"]) for f in d["facts"]])

    @like(FactStore.list)
    def list() -> Call[builtins.list[Fact]]:
        return Call("GET", "/v1/facts", lambda d: [_fact(f) for f in d["facts"]])

    @like(FactStore.history)
    def history(key: str) -> Call[builtins.list[tuple[Any, float]]]:
        return Call("GET", f"/v1/facts/{_segment(key, 'key')}/history",
                    lambda d: [(h["value"], float(h["replaced_at"])) for h in d["history"]])

    @like(FactStore.tool_schema)
    def tool_schema(name: str, description: str | None) -> Call[dict[str, Any]]:
        """Built by the service with the library's own function (the stored description unless
        `description` is given)."""
        return Call("GET", "/v1/facts/tool-schema", dict, params={"name": name, "description": description})

    @like(FactStore.tool_description)
    def tool_description() -> Call[str]:
        return Call("GET", "/v1/facts/tool-description", lambda d: str(d["description"]))

    @like(FactStore.set_tool_description)
    def set_tool_description(description: str | None) -> Call[str]:
        return Call("PUT", "/v1/facts/tool-description", lambda d: str(d["description"]), {"description": description})

    @like(FactStore.descriptions)
    def descriptions() -> Call[dict[str, str]]:
        return Call("GET", "/v1/facts", lambda d: {str(f["key"]): str(f["description"]) for f in d["facts"]})


class Docs:
    """Calls of `DocumentStore`; a path is read here, on the client, never by the service."""

    @like(DocumentStore.ingest)
    def ingest(text: str | os.PathLike[str], source: str | None, scope: str | None) -> Call[list[str]]:
        """A string is the document's text; a `Path` is read here, as `ingest_file` does."""
        if isinstance(text, os.PathLike):
            return Docs.ingest_file.build(text, source=source, scope=scope)
        if not isinstance(source, str):
            raise InvalidInput(TEXT_NEEDS_SOURCE)
        return Docs.ingest_text.build(text, source=source, scope=scope)

    @like(DocumentStore.ingest_file)
    def ingest_file(path: str | os.PathLike[str], source: str | None, scope: str | None) -> Call[list[str]]:
        """Read a local UTF-8 file (on this client) and send its text."""
        text, name = read_document(path)  # the library's own reading rule
        return Docs.ingest_text.build(text, source=source or name, scope=scope)

    @remote
    def ingest_text(text: str, *, source: str, scope: str | None = None) -> Call[list[str]]:
        """One document's text, chunked, redacted and embedded by the service."""
        return Call("POST", "/v1/docs", lambda d: [str(i) for i in d["ids"]], {"text": text, "source": source, "scope": scope})

    @like(DocumentStore.search)
    def search(
        query: str, k: int, scope: str | None, source: str | None, min_score: float | None = None
    ) -> Call[list[DocHit]]:
        return Call("POST", "/v1/docs/search", lambda d: [from_json(DocHit, h) for h in d["results"]],
                    {"query": query, "k": k, "scope": scope, "source": source, "min_score": min_score})

    @like(DocumentStore.sources)
    def sources(scope: str | None) -> Call[list[str]]:
        return Call("GET", "/v1/docs/sources", lambda d: [str(s) for s in d["sources"]], params={"scope": scope})

    @like(DocumentStore.delete_source)
    def delete_source(source: str, scope: str | None) -> Call[int]:
        return Call("DELETE", f"/v1/docs/sources/{_segment(source, 'source')}", _deleted, params={"scope": scope})


# -- wire <-> library types ----------------------------------------------------------------


def _segment(value: object, what: str) -> str:
    """A path segment; the service gives the library's answer for any non-empty string."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{what} must be a non-empty string")
    return quote(value, safe="").replace(".", "%2E")  # so "." and ".." stay names, not paths


def _where_text(where: Mapping[str, Any] | None) -> str | None:
    """A filter as the JSON text of a query parameter (the service checks it)."""
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise InvalidInput(f"where must be a mapping of field -> condition, not {type(where).__name__}")
    return _json_text(where)


def _list(value: Any) -> Any:
    """Sequences travel as lists; anything else as itself, for the service to refuse."""
    return list(value) if isinstance(value, (list, tuple)) else value


def _kinds(kinds: Sequence[str] | None) -> Any:
    return [kinds] if isinstance(kinds, str) else _list(kinds)


def _memory_input(item: MemoryInput | Mapping[str, Any]) -> Any:
    if isinstance(item, MemoryInput):
        body = {"text": item.text, "scope": item.scope, "kind": item.kind, "metadata": item.metadata,
                "key": item.key, "valid_from": _when(item.valid_from, "valid_from")}
        return _unset(body, "key", "valid_from")
    plain = dict(item) if isinstance(item, Mapping) else item
    if isinstance(plain, dict) and "valid_from" in plain:
        plain["valid_from"] = _when(plain["valid_from"], "valid_from")
    return plain


def _when(value: Any, what: str) -> float | None:
    """A time as unix seconds for the wire (the library's checks, before anything is sent)."""
    return None if value is None else as_timestamp(value, what=what)


def _unset(body: dict[str, Any], *names: str) -> dict[str, Any]:
    """The body without these fields when they are None (a service of before versions refuses them)."""
    return {k: v for k, v in body.items() if k not in names or v is not None}


def _nothing(_data: Any) -> None:
    return None


def _deleted(data: Any) -> int:
    return int(data["deleted"])


def _forget_scope(path: str, scope: object) -> Call[int]:
    """DELETE every item of one named scope under `path`; returns how many."""
    if not isinstance(scope, str):
        raise InvalidInput("forget_scope needs a scope name")
    return Call("DELETE", path, _deleted, params={"scope": scope})


def _remembered(r: Mapping[str, Any]) -> Remembered:
    return from_json(Remembered, r)


def _recalled(r: Mapping[str, Any]) -> Recalled:
    return from_json(Recalled, r)


def _recalled_list(d: Any) -> list[Recalled]:
    return [_recalled(r) for r in d["results"]]


def _episode(e: Mapping[str, Any]) -> Episode:
    return from_json(Episode, e)


def _episode_list(d: Any) -> list[Episode]:
    return [_episode(e) for e in d["results"]]


def _fact(f: Mapping[str, Any]) -> Fact:
    return from_json(Fact, f)
