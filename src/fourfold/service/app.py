"""The HTTP API: FastAPI routes that each parse JSON, make one library call and return JSON.

Every route runs against the `Memory` of the caller's tenant (see `tenancy`), chosen by the
bearer key; nothing here decides anything about memory.
"""

# No `from __future__ import annotations`: FastAPI reads these annotations at runtime.

import asyncio
import contextlib
import functools
import inspect
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated, Any, Literal

import anyio.to_thread
from fastapi import APIRouter, Depends, FastAPI, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from fourfold import __version__
from fourfold.episodic import PENDING_SCOPE, SHARED_SCOPE
from fourfold.errors import FourfoldError, InvalidInput
from fourfold.longterm.profile import PROFILE_TOKENS
from fourfold.memory import Memory
from fourfold.models.base import ChatModel
from fourfold.service import schemas as s
from fourfold.service.admission import Admission
from fourfold.service.auth import Authenticator, Caller, check, needs, role_of
from fourfold.service.batching import GroupCommit
from fourfold.service.cases import install_case_routes
from fourfold.service.errors import Unauthorized, one_line, status_for
from fourfold.service.fastlane import FastLane, lanes_for
from fourfold.service.key_routes import install_key_routes
from fourfold.service.keys import KeyStore, Role
from fourfold.service.swagger import install_swagger_ui
from fourfold.service.tenancy import Tenants
from fourfold.service.ui import LOOPBACK_HOSTS, install_inspector

__all__ = ["DEFAULT_MAX_BODY", "DEFAULT_WORKER_THREADS", "Authenticator", "create_app"]

log = logging.getLogger("fourfold.service")

#: Largest request body accepted (documents are the big ones), in bytes.
DEFAULT_MAX_BODY = 8 * 1024 * 1024
#: Threads that run routes (anyio's default is 40). Most of a busy service's threads wait
#: (for a group commit, a shared embedding batch, the store's write lock) and cost little;
#: with too few, a cheap request queues behind them for a thread before it even starts.
DEFAULT_WORKER_THREADS = 128
_API_PREFIX = "/v1"
_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": s.ErrorOut, "description": text}
    for status, text in (
        (401, "No API key, or an unknown or revoked one."),
        (404, "Not found (in your tenant: other tenants' data is never visible)."),
        (413, "The request body is too large."),
        (422, "Invalid input."),
    )
}

Scope = Annotated[str | None, Query(description="The scope; omit it for your unscoped space.")]
#: What a route that changes what every customer's agent reads needs (facts, documents).
OPERATOR = needs("operator")


def _tenant_memory(request: Request) -> Memory:
    """The caller's tenant's memory, once its key is known to have the role the route needs
    (the inspector's dependency; /v1 routes get it through `_Caller`)."""
    tenants: Tenants = request.app.state.tenants
    return tenants.get(check(_caller_of(request), role_of(request.scope.get("route"))).tenant)


def _caller_of(request: Request) -> Caller:
    """Who sends the request (raises Unauthorized)."""
    auth: Authenticator = request.app.state.auth
    return auth.of_scope(request.scope)


Who = Annotated[Caller, Depends(_caller_of)]


def _shared_needs_operator(caller: Caller, scope: str | None) -> None:
    """Erasing shared cases (read by every customer's agent) takes an operator's key."""
    if scope in (SHARED_SCOPE, PENDING_SCOPE):
        check(caller, "operator")


def _caller_id(request: Request) -> str:
    """Who sends the request: its key's public id, or ANONYMOUS (raises Unauthorized)."""
    return _caller_of(request).who


class _Caller:
    """The sender of a /v1 request; `memory()` checks its key and opens its tenant's memory.

    The `Mem` dependency returns one of these without any I/O, and `_Router` turns it into the
    `Memory` in the route's own thread hop: the key check reads the database, and doing it in
    a hop of its own costs the event loop a share of its time under load (a read on the loop itself
    would stall it behind busy threads for up to the GIL's switch interval). A request whose
    input is invalid has its key checked before the 422 is sent (`_install_error_handlers`),
    so a caller without a valid key still always gets 401.
    """

    __slots__ = ("request",)

    def __init__(self, request: Request) -> None:
        self.request = request

    def memory(self) -> Memory:
        return _tenant_memory(self.request)


async def _caller(request: Request) -> Any:  # a _Caller, the route receives the Memory
    return _Caller(request)


Mem = Annotated[Memory, Depends(_caller)]
ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]


def create_app(
    tenants: Tenants,
    keys: KeyStore,
    *,
    model: ChatModel | None = None,
    allow_anonymous: bool = False,
    max_body_bytes: int = DEFAULT_MAX_BODY,
    mount_mcp: bool = True,
    worker_threads: int = DEFAULT_WORKER_THREADS,
    review_cases: bool = False,
    allowed_hosts: Sequence[str] | None = LOOPBACK_HOSTS,
    fast_lane: bool = True,
    run_secret: str | None = None,
) -> FastAPI:
    """The service over `tenants`, authenticated by `keys`.

    `model` answers `/v1/agent/*` (default: `fourfold.models.default_model()`, made on first
    use). The MCP streamable-HTTP transport is mounted at `/mcp` behind the same keys. The web
    inspector is at `/ui`; browsers may reach the service by `allowed_hosts` only (None: any).
    `review_cases` holds each new shared case for an operator's approval. `fast_lane` answers
    the busiest JSON routes without FastAPI's request pipeline (`fourfold.service.fastlane`;
    off while FastAPI's own telemetry is on, whose spans need that pipeline).
    """
    auth = Authenticator(keys, allow_anonymous=allow_anonymous, run_secret=run_secret)
    mcp_server = _mcp_server(tenants, auth) if mount_mcp else None
    requests = ThreadPoolExecutor(max_workers=worker_threads, thread_name_prefix="fourfold-request")
    telemetry = _telemetry()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        limiter = anyio.to_thread.current_default_thread_limiter()  # this event loop's
        limiter.total_tokens = worker_threads
        # `requests` outlives a lifespan: an app may be started again (tests do), and its idle
        # threads end with the executor or the interpreter.
        if mcp_server is None:
            yield
            return
        async with mcp_server.session_manager.run():
            yield

    app = FastAPI(
        title="fourfold",
        version=__version__,
        description="Memory for LLM agents (long-term, episodic, semantic) as an authenticated service.",
        lifespan=lifespan,
        telemetry=telemetry,
        docs_url=None,  # served from local assets below; ReDoc would load from a CDN
        redoc_url=None,
    )
    install_swagger_ui(app, title="fourfold")
    _install_error_handlers(app)

    app.state.auth, app.state.tenants, app.state.requests = auth, tenants, requests
    bearer = HTTPBearer(auto_error=False, description="An API key from `fourfold keys create`.")
    api = _Router(requests, prefix=_API_PREFIX, dependencies=[Security(bearer)], responses=_ERRORS)
    agents = _Agents(model, review_cases=review_cases)
    writers = _Writers()
    background = _EpisodeEmbedding()

    @app.get("/healthz", tags=["service"])
    def healthz() -> dict[str, str]:
        """Answers once the service is ready (no key needed): "ok", or "degraded" with the cause
        while a store refuses writes (reads are still answered); ok again once a write lands."""
        degraded = tenants.degraded()
        if not degraded:
            return {"status": "ok"}
        # The cause's code only: no key is needed here, and a message names paths and hosts.
        return {"status": "degraded", "cause": next(iter(degraded.values())).code, "tenants": str(len(degraded))}

    @api.get("/whoami", tags=["service"])
    def whoami(request: Request) -> s.WhoAmIOut:
        """The tenant your key belongs to."""
        tenant, how = auth.tenant(request.headers.get("authorization"), request.headers.get("host"))
        return s.WhoAmIOut(tenant=tenant, auth=how)

    # -- long-term memory ------------------------------------------------------------------

    @api.post("/memories", status_code=201, tags=["memories"])
    def remember(body: s.RememberIn, mem: Mem) -> s.RememberedOut:
        """Store one durable memory; secrets are redacted first and reported."""
        done = writers.get(mem).remember(body.model_dump())  # remember(), group-committed
        return s.RememberedOut.model_validate(s.remembered_out(done))

    @api.post("/memories/batch", status_code=201, tags=["memories"])
    def remember_many(body: s.MemoriesIn, mem: Mem) -> s.RememberedManyOut:
        """Store several memories in one write: all of them, or none if any is invalid."""
        done = mem.long_term.remember_many([item.model_dump() for item in body.items])
        with contextlib.suppress(FourfoldError):  # the write stands either way
            mem.long_term.warm({item.scope for item in body.items})  # their first recall scans nothing
        return s.RememberedManyOut.model_validate({"results": [s.remembered_out(r) for r in done]})

    @api.post("/memories/add", status_code=201, tags=["memories"])
    def add(body: s.AddIn, mem: Mem) -> s.RememberedManyOut:
        """Keep what a conversation says that is worth remembering: stated preferences (a changed
        one replaces the old) and lasting facts about the user; with the service's chat model
        when it is an LLM, else by rules. Only the user's messages are read."""
        done = mem.add(body.messages, scope=body.scope, model=agents.model())
        return s.RememberedManyOut.model_validate({"results": [s.remembered_out(r) for r in done]})

    @api.post("/memories/search", tags=["memories"])
    def recall(body: s.SearchIn, mem: Mem) -> s.MemoriesOut:
        """The k memories of a scope most relevant to the query, best first."""
        hits = mem.long_term.recall(
            body.query, scope=body.scope, k=body.k, kinds=body.kinds, where=body.where, min_score=body.min_score,
            as_of=body.as_of, include_superseded=body.include_superseded,
        )
        return s.MemoriesOut.model_validate({"results": [s.memory_out(h) for h in hits]})

    @api.get("/memories", tags=["memories"])
    def all_memories(
        mem: Mem,
        scope: Scope = None,
        kind: Annotated[list[str] | None, Query()] = None,
        where: Annotated[str | None, Query(description="As JSON text. " + s.WHERE_HELP)] = None,
        as_of: Annotated[datetime | None, Query(description="The versions current then.")] = None,
        include_superseded: Annotated[bool, Query(description="Every version.")] = False,
    ) -> s.MemoriesOut:
        """Every current memory of a scope, oldest first; `where` filters them as search does."""
        from fourfold.longterm.where import parse_where

        found = mem.long_term.all(scope=scope, kinds=kind, where=parse_where(where), as_of=as_of,
                                  include_superseded=include_superseded)
        return s.MemoriesOut.model_validate({"results": [s.memory_out(r) for r in found]})

    @api.delete("/memories", tags=["memories"])
    def forget_memories_of_scope(mem: Mem, scope: Annotated[str, Query()]) -> s.DeletedCount:
        """Delete every memory (and document chunk) of one scope; episodes stay."""
        return s.DeletedCount(deleted=mem.long_term.forget_scope(scope))

    @api.get("/profile", tags=["memories"])
    def profile(
        mem: Mem, scope: Annotated[str, Query()],
        max_tokens: Annotated[int, Query(description="The bound, in estimated tokens.")] = PROFILE_TOKENS,
    ) -> s.MemoriesOut:
        """A scope's profile: its current keyed memories, one per key, and its preferences, each
        with when it was set (valid_from), within a token bound; what a prompt for that scope
        carries whatever the question."""
        return s.MemoriesOut.model_validate({"results": [s.memory_out(r) for r in mem.long_term.profile(
            scope, max_tokens=max_tokens)]})

    @api.get("/memories/{memory_id}", tags=["memories"])
    def get_memory(memory_id: str, mem: Mem) -> s.MemoryOut:
        return s.MemoryOut.model_validate(s.memory_out(mem.long_term.get(memory_id)))

    @api.post("/memories/{memory_id}/versions", status_code=201, tags=["memories"])
    def update(memory_id: str, body: s.UpdateIn, mem: Mem) -> s.RememberedOut:
        """A new version of a memory (any of its versions' ids names it); the current one ends."""
        done = mem.long_term.update(memory_id, body.text, kind=body.kind, metadata=body.metadata, valid_from=body.valid_from)
        return s.RememberedOut.model_validate(s.remembered_out(done))

    @api.get("/memories/{memory_id}/versions", tags=["memories"])
    def history(memory_id: str, mem: Mem) -> s.MemoriesOut:
        """Every version of a memory, oldest first, each with valid_from and valid_to."""
        return s.MemoriesOut.model_validate({"results": [s.memory_out(r) for r in mem.long_term.history(memory_id)]})

    @api.delete("/memories/{memory_id}", tags=["memories"])
    def forget(memory_id: str, mem: Mem) -> s.DeletedOut:
        """Erase one memory by id, with every version of it."""
        mem.long_term.forget(memory_id)
        return s.DeletedOut(deleted=memory_id)

    @api.delete("/scopes/{scope:path}", tags=["memories"])
    def forget_scope(scope: str, mem: Mem, caller: Who) -> s.ScopeCounts:
        """Erase one scope (a customer) from every store: memories, episodes, conversation."""
        _shared_needs_operator(caller, scope)
        return s.ScopeCounts.model_validate(mem.forget_scope(scope))

    # -- episodes --------------------------------------------------------------------------

    @api.post("/episodes", status_code=201, tags=["episodes"])
    def record_episode(body: s.EpisodeIn, mem: Mem) -> s.EpisodeOut:
        """Append one episode: goal, actions, outcome and success."""
        episode = mem.episodes.record(**body.model_dump())
        background.embed_episodes(mem)
        return s.EpisodeOut.model_validate(s.episode_out(episode))

    @api.post("/episodes/batch", status_code=201, tags=["episodes"])
    def record_episodes(body: s.EpisodesIn, mem: Mem) -> s.EpisodesOut:
        """Append several episodes in one write; all or none."""
        episodes = mem.episodes.record_many([item.model_dump() for item in body.items])
        background.embed_episodes(mem)
        return s.EpisodesOut.model_validate({"results": [s.episode_out(e) for e in episodes]})

    @api.post("/episodes/similar", tags=["episodes"])
    def similar_successes(body: s.SimilarIn, mem: Mem) -> s.EpisodesOut:
        """Successful episodes most like the situation, from the scope and your unscoped ones."""
        found = mem.episodes.similar_successes(body.situation, k=body.k, scope=body.scope,
                                              include_unscoped=body.include_unscoped, min_score=body.min_score)
        return s.EpisodesOut.model_validate({"results": [s.episode_out(e) for e in found]})

    @api.get("/episodes", tags=["episodes"])
    def list_episodes(mem: Mem, scope: Scope = None, success: bool | None = None) -> s.EpisodesOut:
        """Episodes oldest first; without a scope, every scope of your tenant."""
        found = mem.episodes.episodes(scope=scope, success=success)
        return s.EpisodesOut.model_validate({"results": [s.episode_out(e) for e in found]})

    @api.get("/episodes/{episode_id}", tags=["episodes"])
    def get_episode(episode_id: str, mem: Mem) -> s.EpisodeOut:
        return s.EpisodeOut.model_validate(s.episode_out(mem.episodes.get(episode_id)))

    @api.delete("/episodes/{episode_id}", tags=["episodes"])
    def forget_episode(episode_id: str, mem: Mem, caller: Who) -> s.DeletedOut:
        """Erase one episode, from disk too; a shared case takes an operator's key."""
        _shared_needs_operator(caller, mem.episodes.get(episode_id).scope)
        mem.episodes.forget(episode_id)
        return s.DeletedOut(deleted=episode_id)

    @api.delete("/episodes", tags=["episodes"])
    def forget_episodes(
        mem: Mem, caller: Who,
        scope: Annotated[str | None, Query(description="Erase this scope's episodes and the shared cases derived from it.")] = None,
        unscoped: Annotated[bool, Query(description="Erase the unscoped episodes instead.")] = False,
    ) -> s.DeletedCount:
        """Erase the episodes of one scope (and the cases derived from it), or the unscoped ones."""
        if unscoped == (scope is not None):
            raise InvalidInput("give either scope=<scope> or unscoped=true")
        _shared_needs_operator(caller, scope)
        return s.DeletedCount(deleted=mem.episodes.forget_unscoped() if unscoped else mem.episodes.forget_scope(scope or ""))

    # -- facts -----------------------------------------------------------------------------

    @api.get("/facts", tags=["facts"])
    def list_facts(mem: Mem) -> s.FactsOut:
        """Every fact, by key."""
        return s.FactsOut.model_validate({"facts": [s.fact_out(f) for f in mem.facts.list()]})

    @api.get("/facts/tool-schema", tags=["facts"])
    def tool_schema(
        mem: Mem, format: Literal["anthropic", "openai"] = "anthropic", name: str = "lookup_policy",
        description: Annotated[str | None, Query(description="This once, instead of the stored one.")] = None,
    ) -> dict[str, Any]:
        """The lookup_policy tool schema; its `key` enum lists your current facts."""
        from fourfold.semantic.tools import PolicyTool

        tool = PolicyTool(mem.facts, name=name, description=description)
        return tool.openai_schema() if format == "openai" else tool.schema()

    @api.get("/facts/tool-description", tags=["facts"])
    def tool_description(mem: Mem) -> s.ToolDescriptionOut:
        """What the lookup_policy tool tells the model it is for."""
        return s.ToolDescriptionOut(description=mem.facts.tool_description())

    @api.put("/facts/tool-description", tags=["facts"], openapi_extra=OPERATOR)
    def set_tool_description(body: s.ToolDescriptionIn, mem: Mem) -> s.ToolDescriptionOut:
        """Store what the lookup_policy tool is for, in your words (null: the default)."""
        return s.ToolDescriptionOut(description=mem.facts.set_tool_description(body.description))

    @api.post("/facts/search", tags=["facts"])
    def search_facts(body: s.FactSearchIn, mem: Mem) -> s.FactsOut:
        """The facts whose key name and description are nearest a question, best first."""
        found = mem.facts.search(body.query, k=body.k, min_score=body.min_score)
        return s.FactsOut.model_validate({"facts": [s.fact_out(f) for f in found]})

    @api.post("/facts/lookup", tags=["facts"])
    def lookup(body: s.LookupIn, mem: Mem) -> s.LookupOut:
        """A fact's value as text for a model, or exactly UNKNOWN (never an error)."""
        return s.LookupOut(text=mem.facts.lookup(body.key))

    @api.get("/facts/{key:path}/history", tags=["facts"])
    def fact_history(key: str, mem: Mem) -> s.HistoryOut:
        """Previous values, oldest first, with when each was replaced."""
        return s.HistoryOut.model_validate(
            {"history": [{"value": v, "replaced_at": t} for v, t in mem.facts.history(key)]}
        )

    @api.get("/facts/{key:path}", tags=["facts"])
    def get_fact(key: str, mem: Mem) -> s.FactOut:
        return s.FactOut.model_validate(s.fact_out(mem.facts.get(key)))

    @api.put("/facts/{key:path}", tags=["facts"], openapi_extra=OPERATOR)
    def set_fact(key: str, body: s.FactIn, mem: Mem) -> s.FactOut:
        """Set a fact, keeping the previous value in its history."""
        return s.FactOut.model_validate(s.fact_out(mem.facts.set(key, body.value, description=body.description)))

    @api.delete("/facts/{key:path}", tags=["facts"], openapi_extra=OPERATOR)
    def delete_fact(key: str, mem: Mem, purge: bool = False) -> s.DeletedOut:
        """Delete a fact (its history is kept); `purge=true` erases its whole history too."""
        mem.facts.delete(key, purge=purge)
        return s.DeletedOut(deleted=key)

    # -- documents -------------------------------------------------------------------------

    @api.post("/docs", status_code=201, tags=["docs"], openapi_extra=OPERATOR)
    def ingest_doc(body: s.DocIn, mem: Mem) -> s.IngestOut:
        """Chunk a document's text into the store (idempotent per source and content)."""
        ids = mem.docs.ingest_text(body.text, source=body.source, scope=body.scope)
        return s.IngestOut(ids=ids, chunks=len(ids))

    @api.post("/docs/search", tags=["docs"])
    def search_docs(body: s.DocSearchIn, mem: Mem) -> s.DocHitsOut:
        """The document chunks most relevant to the query."""
        hits = mem.docs.search(body.query, k=body.k, scope=body.scope, source=body.source, min_score=body.min_score)
        return s.DocHitsOut.model_validate({"results": [s.doc_hit_out(h) for h in hits]})

    @api.get("/docs/sources", tags=["docs"])
    def doc_sources(mem: Mem, scope: Scope = None) -> s.SourcesOut:
        return s.SourcesOut(sources=mem.docs.sources(scope=scope))

    @api.delete("/docs/sources/{source:path}", tags=["docs"], openapi_extra=OPERATOR)
    def delete_doc(source: str, mem: Mem, scope: Scope = None) -> s.DeletedCount:
        """Remove every chunk of one document."""
        return s.DeletedCount(deleted=mem.docs.delete_source(source, scope=scope))

    # -- the support agent -----------------------------------------------------------------

    @api.post("/agent/turn", tags=["agent"])
    def agent_turn(body: s.TurnIn, mem: Mem) -> s.TurnOut:
        """One customer message answered by the support agent, with what it used and spent."""
        reply = agents.agent(mem).turn(body.customer_id, body.message)
        r = reply.report
        return s.TurnOut.model_validate({"text": reply.text, "report": {
            "model": r.model,
            "memories": [s.memory_out(m) for m in r.memories],
            "episodes": [s.episode_out(e) for e in r.episodes],
            "cases": [s.episode_out(e) for e in r.cases],
            "docs": [s.doc_hit_out(d) for d in r.docs],
            "tool_uses": [{"name": t.name, "input": dict(t.input), "result": t.result} for t in r.tool_uses],
            "input_tokens": r.input_tokens, "output_tokens": r.output_tokens,
            "messages_sent": r.messages_sent, "model_calls": r.model_calls,
        }})

    @api.post("/agent/resolve", tags=["agent"])
    def agent_resolve(body: s.ResolveIn, mem: Mem) -> s.ResolveOut:
        """Close the customer's open ticket: record the episode, remember what was learned."""
        res = agents.agent(mem).resolve(body.customer_id, body.outcome, success=body.success)
        return s.ResolveOut.model_validate({"episode": s.episode_out(res.episode), "remembered": list(res.remembered),
                                            "case": s.episode_out(res.case) if res.case else None})

    # the shared case base, for agents on RemoteMemory: what they send waits for review
    install_case_routes(api, _caller, agents.cases, caller_id=_caller_id, review=review_cases)
    install_key_routes(api, _caller_of, keys)
    app.include_router(api)
    if fast_lane and not _traced(telemetry):  # added first: the body limit and the browser guard stay in front of it

        def memory_for(scope: MutableMapping[str, Any]) -> Memory:
            return tenants.get(check(auth.of_scope(scope), role_of(scope.get("route"))).tenant)

        app.add_middleware(FastLane, lanes=lanes_for(api.routes, Mem), memory_for=memory_for,
                           error_response=_library_error, executor=requests)
    install_inspector(app, _tenant_memory, agent_for=agents.agent, review_cases=review_cases,
                      allowed_hosts=allowed_hosts, caller_id=_caller_id)
    if mcp_server is not None:
        from starlette.routing import Route

        app.router.routes.append(Route("/mcp", _McpEndpoint(mcp_server, auth), methods=["GET", "POST", "DELETE"]))
    # the key before the body, the body's shape before any parser (inside the body limit)
    app.add_middleware(Admission, authenticate=auth.of_scope, executor=requests, respond=_library_error)
    app.add_middleware(_BodyLimit, limit=max_body_bytes)
    return app


def _telemetry() -> Any:  # a fastapi.telemetry.TelemetryConfig (FastAPI >= 0.16x)
    """FastAPI's OpenTelemetry settings: off when no provider is configured as the app is made.

    Otherwise FastAPI asks for the global providers on every request (reading os.environ each
    time, a visible share of the service's GIL-held time under load) only to find them unconfigured.
    A provider set before `create_app` (by `opentelemetry-instrument` or the embedding app),
    or FastAPI's own set-up from the environment (FASTAPI_OTEL_AUTO_CONFIGURE), keeps it on.
    """
    import os

    try:
        from opentelemetry import _logs, metrics, trace
    except ImportError:  # a FastAPI without native telemetry
        return {}
    if os.getenv("FASTAPI_OTEL_AUTO_CONFIGURE", "").lower() == "true":
        return {}
    deferred = {"ProxyTracerProvider", "_ProxyMeterProvider", "ProxyLoggerProvider"}  # the API's placeholders
    providers = (trace.get_tracer_provider(), metrics.get_meter_provider(), _logs.get_logger_provider())
    if any(type(p).__name__ not in deferred for p in providers):
        return {}
    return {"tracing": False, "metrics": False, "logs": False}


def _traced(telemetry: Any) -> bool:
    """Whether FastAPI's telemetry, set up as `_telemetry()` chose, records every request."""
    import importlib.util

    return not telemetry and importlib.util.find_spec("opentelemetry") is not None


class _Router(APIRouter):
    """An APIRouter whose plain (sync) routes each run in one hop to a request thread.

    FastAPI runs a sync route on anyio's thread pool and then, in a second hop, validates
    and serializes its answer there too; anyio's hand-off was about a fifth of the event
    loop's time under the service benchmark. Here the route is wrapped in a coroutine that
    runs it in `executor`, and its answer is serialized on the event loop (pydantic's Rust
    core: cheaper than a hop). The route's signature, name and docs are FastAPI's to read.
    """

    def __init__(self, executor: ThreadPoolExecutor, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._executor = executor

    def add_api_route(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if not inspect.iscoroutinefunction(endpoint):
            endpoint = _in_thread(endpoint, self._executor)
        super().add_api_route(path, endpoint, **kwargs)


def _in_thread(route: Callable[..., Any], executor: ThreadPoolExecutor) -> Callable[..., Awaitable[Any]]:
    def call(kwargs: dict[str, Any]) -> Any:
        return route(**{k: v.memory() if isinstance(v, _Caller) else v for k, v in kwargs.items()})

    @functools.wraps(route)
    async def endpoint(**kwargs: Any) -> Any:  # FastAPI passes every parameter by name
        return await asyncio.get_running_loop().run_in_executor(executor, call, kwargs)

    return endpoint


class _Writers:
    """One group-commit writer per tenant memory."""

    def __init__(self) -> None:
        self._by_memory: dict[int, GroupCommit] = {}
        self._lock = threading.Lock()

    def get(self, memory: Memory) -> GroupCommit:
        with self._lock:
            writer = self._by_memory.get(id(memory))
            if writer is None or writer.long_term is not memory.long_term:
                writer = self._by_memory[id(memory)] = GroupCommit(memory.long_term)
            return writer


class _EpisodeEmbedding:
    """Embeds newly recorded episodes on one background thread, after their request answered.

    A search for similar episodes then finds their vectors ready instead of embedding them
    while its caller waits. The embedding is bulk work (the store worker's, at its lower
    priority). A log already waiting for its turn is not queued twice.
    """

    def __init__(self) -> None:
        self._pending: dict[int, Memory] = {}
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def embed_episodes(self, memory: Memory) -> None:
        with self._cond:
            self._pending.setdefault(id(memory.episodes), memory)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="fourfold-episode-embedding", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._pending and not self._cond.wait_for(lambda: bool(self._pending), timeout=30):
                    self._thread = None
                    return
                _, memory = self._pending.popitem()
            try:
                memory.episodes.embed_pending()
            except Exception:  # a search embeds what is still missing; nothing is lost
                log.warning("embedding recorded episodes failed; searches will embed them", exc_info=True)


class _Agents:
    """One chat model for the service, made on first use (loading an SDK is not free)."""

    def __init__(self, model: ChatModel | None, *, review_cases: bool = False) -> None:
        self._model = model
        self._review = review_cases
        self._lock = threading.Lock()

    def model(self) -> ChatModel:
        with self._lock:
            if self._model is None:
                from fourfold.models import default_model

                self._model = default_model()
            return self._model

    def agent(self, memory: Memory) -> Any:
        from fourfold.agent import SupportAgent

        return SupportAgent(memory, self.model(), review_cases=self._review)

    def cases(self, memory: Memory) -> Any:
        """The tenant's shared case base, as the service's own agent writes it."""
        from fourfold.agent.cases import CaseBase

        return CaseBase(memory, model=self.model(), review=self._review)


# -- MCP over streamable HTTP ------------------------------------------------------------


def _mcp_server(tenants: Tenants, auth: Authenticator) -> Any:
    from fourfold.service.mcp import build_mcp_server

    def memory_for(request: Any) -> Memory:
        tenant = request.scope.get("fourfold.tenant") if request is not None else None
        if tenant is None:  # only _McpEndpoint calls in, and it always sets the tenant
            raise Unauthorized("no tenant on this MCP request")
        return tenants.get(tenant)

    def authorize(request: Any, role: Role) -> None:
        check(auth.of_scope(request.scope), role)

    return build_mcp_server(memory_for, authorize=authorize)


class _McpEndpoint:
    """Authenticates like the REST routes, then hands the request to the MCP transport."""

    def __init__(self, server: Any, auth: Authenticator) -> None:
        from mcp.server.transport_security import TransportSecuritySettings

        # Stateless JSON: every POST stands alone, so any worker and any request can carry
        # a tenant, and nothing lives in a session between calls.
        self._app = server.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self._auth = auth

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        try:
            tenant = self._auth.of_scope(scope).tenant
        except Unauthorized as exc:
            await _error_response(exc)(scope, receive, send)
            return
        scope["fourfold.tenant"] = tenant
        await self._app(scope, receive, send)


# -- errors and limits -------------------------------------------------------------------


def _error_response(exc: FourfoldError) -> JSONResponse:
    return _error(exc.code, str(exc))


def _library_error(exc: FourfoldError) -> JSONResponse:
    """A library error raised by a route, as its answer (a server-side one is logged too)."""
    if status_for(exc.code) >= 500:
        log.error("%s: %s", exc.code, exc)
    return _error_response(exc)


def _error(code: str, message: str, status: int | None = None) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if code == "unauthorized" else None
    return JSONResponse(
        {"error": {"code": code, "message": one_line(message)}},
        status_code=status or status_for(code),
        headers=headers,
    )


_HTTP_CODES = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(FourfoldError)
    async def library_error(_: Request, exc: FourfoldError) -> JSONResponse:
        return _library_error(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        if request.url.path.startswith(_API_PREFIX + "/"):  # the key first (see `_Caller`)
            try:
                auth: Authenticator = request.app.state.auth
                await asyncio.get_running_loop().run_in_executor(request.app.state.requests, auth.of_scope, request.scope)
            except Unauthorized as unauthorized:
                return _error_response(unauthorized)
        errors = exc.errors()
        first = errors[0] if errors else {}
        if first.get("type") == "json_invalid":  # loc is ("body", offset): say what it means
            reason = first.get("ctx", {}).get("error", "")
            offset = [p for p in first.get("loc", ()) if isinstance(p, int)]
            at = f" at character {offset[0]}" if offset else ""
            return _error("invalid_input", f"the request body is not valid JSON{at}" + (f": {reason}" if reason else ""))
        if tuple(first.get("loc", ())) == ("body",) and first.get("type") == "model_attributes_type":
            return _error("invalid_input", "the request body must be a JSON object (send Content-Type: application/json)")
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return _error("invalid_input", f"{where}: {first.get('msg', 'invalid')}{more}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "invalid_input" if exc.status_code < 500 else "internal")
        return _error(code, str(exc.detail), exc.status_code)

    @app.exception_handler(Exception)
    async def crash(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")  # the traceback stays in the server's log
        return _error("internal", "internal error: the service logged the details")


class _BodyLimit:
    """Refuses request bodies over `limit` bytes with 413, declared or streamed."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) <= self.limit:
            await self.app(scope, receive, send)  # uvicorn delivers exactly that many bytes, no more
            return
        too_large = _error("too_large", f"the request body is over the {self.limit:,}-byte limit")
        if declared is not None:
            await too_large(scope, receive, send)
            return
        seen = 0
        started = False

        async def limited_receive() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise StarletteHTTPException(413, "the request body is too large")
            return message

        async def tracking_send(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except StarletteHTTPException as exc:
            if exc.status_code != 413 or started:
                raise
            await too_large(scope, receive, send)
