"""The web inspector: a page at /ui, the few read-only routes it needs beside the REST API, and
the browser guard that keeps a loopback service safe from other web pages.

The page is plain ES modules and CSS shipped in `ui_assets/` (package data): nothing is built
on the user's machine and nothing is fetched from elsewhere. Every action it takes (forget,
erase, edit, set a fact, approve a case) is a call to the same authenticated `/v1` API as any
client; the key a user types stays in the tab's sessionStorage and travels as the
`Authorization` header, never in a URL.

Why this CSRF defence. The API authenticates by a header, which a browser never attaches by
itself, so a key cannot be ridden by another site. The one ambient authority is the loopback
service without keys, which serves anonymous requests as the default tenant: there, any page
the user visits could send requests to 127.0.0.1. So every request a browser sends (it carries
`Origin` or `Sec-Fetch-Site`) must come from the service's own origin on an allowed host, and
a browser's write without a key must also prove it twice: by `Sec-Fetch-Site: same-origin`
(which only the browser sets), or, from a browser too old to send it, by `X-Fourfold-Request`
(a custom header, which a cross-origin page cannot send without a CORS preflight this service
never grants; the page always sends it). Tokens in
cookies or forms would add state for no gain: there is no cookie to protect. The Host check
(browser requests and /ui) defeats DNS rebinding, where a foreign name is pointed at 127.0.0.1
and the request is then same-origin.
"""

# No `from __future__ import annotations`: FastAPI reads these annotations at runtime.

from collections.abc import Callable, Iterable, MutableMapping
from importlib import resources
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, FastAPI, Query, Request, Security
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.security import HTTPBearer
from pydantic import Field, StrictBool, StrictInt, StrictStr

from fourfold.agent.cases import CaseBase
from fourfold.agent.support import OpenTicket
from fourfold.errors import NotFound
from fourfold.longterm.store import DOC_KIND
from fourfold.memory import Memory
from fourfold.serialize import to_json
from fourfold.service import explain as ex
from fourfold.service import schemas as s
from fourfold.service.auth import needs
from fourfold.shortterm import is_summary

__all__ = ["CSP", "CSRF_HEADER", "LOOPBACK_HOSTS", "BrowserGuard", "install_inspector"]

#: The header the page sends with every request; a browser's keyless write needs it (or
#: `Sec-Fetch-Site: same-origin`).
CSRF_HEADER = "x-fourfold-request"
#: The page's content security policy: its own scripts and styles only, no inline code.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
#: The REST route of a memory's versions (POST: a new version, GET: its history), which the
#: page's Edit and History use.
VERSIONS_ROUTE = "/v1/memories/{memory_id}/versions"
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}
_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
            "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"}
ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Any]
MemoryFor = Callable[[Request], Memory]
AgentFor = Callable[[Memory], Any]


def install_inspector(
    app: FastAPI, memory_for: MemoryFor, *, agent_for: AgentFor, caller_id: Callable[[Request], str],
    review_cases: bool = False, allowed_hosts: Iterable[str] | None = LOOPBACK_HOSTS,
) -> None:
    """Serve the inspector at /ui and its routes under /v1, behind `BrowserGuard`.

    `allowed_hosts` are the names a browser may reach the service by (None: any, for a service
    on a public interface, where keys are required anyway). `agent_for(memory)` makes the
    support agent that a dry-run replay runs; `caller_id(request)` names the caller's key (a
    case is approved by another key than the one that sent it).
    """
    app.include_router(_api(memory_for, agent_for, review_cases, caller_id))
    app.include_router(_pages())
    app.add_middleware(BrowserGuard, allowed_hosts=allowed_hosts)


# -- the page ----------------------------------------------------------------------------


def _assets() -> dict[str, bytes]:
    """Every shipped asset by its path under /ui/ (read once: the set is small and fixed)."""
    root = resources.files("fourfold.service") / "ui_assets"
    found: dict[str, bytes] = {}

    def walk(folder: Any, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            elif any(entry.name.endswith(suffix) for suffix in _TYPES):
                found[prefix + entry.name] = entry.read_bytes()

    walk(root, "")
    return found


def _pages() -> APIRouter:
    pages = APIRouter(include_in_schema=False)
    assets = _assets()

    def asset(name: str) -> Response:
        body = assets.get(name)
        if body is None:
            raise NotFound(f"no page asset {name!r}")
        suffix = name[name.rfind("."):]
        return Response(body, media_type=_TYPES[suffix], headers=_HEADERS)

    @pages.get("/ui")
    def index() -> Response:
        return asset("index.html")

    @pages.get("/ui/")
    def slash() -> Response:
        return RedirectResponse("/ui", status_code=308)

    @pages.get("/ui/{name:path}")
    def file(name: str) -> Response:
        return asset(name)

    return pages


# -- the guard ---------------------------------------------------------------------------


class BrowserGuard:
    """Refuses what a foreign web page could make a browser send (see the module doc).

    - /ui, and any request a browser marks (`Origin`, `Sec-Fetch-Site`), must name an allowed
      `Host` (DNS rebinding);
    - a browser's request must come from this service's own origin (`Origin` naming the
      `Host`, `Sec-Fetch-Site: same-origin`);
    - a browser's write without an `Authorization` header must carry `Sec-Fetch-Site:
      same-origin` or `X-Fourfold-Request` (Swagger's "try it out" sends the first).

    Clients that are not browsers (curl, the Python client, MCP) send none of these headers
    and are unaffected: their key is their protection.
    """

    def __init__(self, app: ASGIApp, *, allowed_hosts: Iterable[str] | None) -> None:
        self.app = app
        self.allowed = None if allowed_hosts is None else {_host_name(h) for h in allowed_hosts}

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(scope)
            if refusal is not None:
                response = JSONResponse({"error": {"code": "forbidden", "message": refusal}}, status_code=403)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: MutableMapping[str, Any]) -> str | None:
        """Why this request is refused, or None."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        origin, site = headers.get("origin"), headers.get("sec-fetch-site")
        browser = origin is not None or site is not None
        path = str(scope.get("path", ""))
        if (browser or path == "/ui" or path.startswith("/ui/")) and not self._host_ok(host):
            return f"host {host[:80]!r} is not one this service answers browsers on (start it with --allow-host)"
        # Host and port must match; the scheme may differ behind a proxy that ends TLS.
        if origin is not None and (urlsplit(origin).netloc.lower() != host.lower() or not host):
            return "cross-origin requests are refused"
        if site is not None and site not in ("same-origin", "none"):
            return f"cross-site requests are refused (Sec-Fetch-Site: {site[:20]})"
        unsafe = str(scope.get("method", "GET")).upper() in _UNSAFE
        proven = site == "same-origin" or CSRF_HEADER in headers
        if browser and unsafe and "authorization" not in headers and not proven:
            return f"a browser's write needs the {CSRF_HEADER} header"
        return None

    def _host_ok(self, host: str) -> bool:
        return self.allowed is None or (bool(host) and _host_name(host) in self.allowed)


def _host_name(host: str) -> str:
    """The name of a Host header value, without its port and brackets, lowercase."""
    name = urlsplit(f"//{host.strip()}").hostname
    return (name or host).lower()


# -- the routes the page needs beside the REST API ------------------------------------------


class ExplainIn(s.RequestBody):
    query: StrictStr = Field(description="The query (or, for episodes, the situation).")
    scope: StrictStr | None = None
    k: StrictInt = Field(5, ge=1, le=50)
    source: StrictStr | None = Field(None, description="Documents only: one source.")


class ReplayIn(s.RequestBody):
    customer_id: StrictStr
    message: StrictStr


class CaseReviewIn(s.RequestBody):
    approve: StrictBool = Field(description="True shares the case with every customer; false erases it.")


def _explained_out(e: ex.Explained) -> dict[str, Any]:
    out: dict[str, Any] = to_json(e)
    out["context"] = e.context
    return out


def _api(memory_for: MemoryFor, agent_for: AgentFor, review_cases: bool,
         caller_id: Callable[[Request], str]) -> APIRouter:
    bearer = HTTPBearer(auto_error=False, description="An API key from `fourfold keys create`.")
    api = APIRouter(prefix="/v1", dependencies=[Security(bearer)])
    Mem = Annotated[Memory, Depends(memory_for)]
    Who = Annotated[str, Depends(caller_id)]
    Scope = Annotated[str | None, Query(description="The scope; omit it for your unscoped space.")]

    @api.get("/inspector/features", tags=["inspector"])
    def features(request: Request, mem: Mem) -> dict[str, bool]:
        """What this service offers the inspector: memory versions (edit, history), the case review queue."""
        paths = request.app.openapi()["paths"]  # built once, then cached by FastAPI
        return {"versions": VERSIONS_ROUTE in paths, "review_cases": review_cases}

    @api.get("/scopes", tags=["inspector"])
    def scopes(mem: Mem) -> dict[str, Any]:
        """Every scope holding anything, with its counts of memories, documents, episodes, conversations."""
        return {"scopes": [{"scope": name, **counts} for name, counts in mem.scopes().items()]}

    @api.get("/conversations/{scope:path}", tags=["inspector"])
    def conversation(scope: str, mem: Mem) -> dict[str, Any]:
        """A scope's conversation thread as the agent last sent it; summary messages are marked."""
        thread = mem.conversations.load(scope)
        ticket = OpenTicket.of(thread)
        return {
            "scope": thread.scope, "ticket_goal": ticket.goal, "ticket_actions": list(ticket.actions),
            "messages": [{**dict(m), "summary": is_summary(m)} for m in thread.messages],
        }

    @api.post("/memories/explain", tags=["inspector"])
    def explain_memories(body: ExplainIn, mem: Mem) -> dict[str, Any]:
        """Recall, with the parts each result's score came from (dense, lexical, context, date, speaker)."""
        found = ex.explain_recall(mem.long_term, body.query, scope=body.scope, k=body.k)
        return {"weights": to_json(mem.long_term.weights), "results": [_explained_out(e) for e in found]}

    @api.post("/episodes/explain", tags=["inspector"])
    def explain_episodes(body: ExplainIn, mem: Mem) -> dict[str, Any]:
        """similar_successes, with the parts each episode's relevance came from."""
        found = ex.explain_similar(mem.episodes, body.query, scope=body.scope, k=body.k)
        return {"results": [_explained_out(e) for e in found]}

    @api.post("/docs/explain", tags=["inspector"])
    def explain_docs(body: ExplainIn, mem: Mem) -> dict[str, Any]:
        """Document search, with the parts each chunk's score came from."""
        found = ex.explain_docs(mem, body.query, scope=body.scope, k=body.k, source=body.source)
        return {"results": [_explained_out(e) for e in found]}

    @api.get("/docs/list", tags=["inspector"])
    def doc_list(mem: Mem, scope: Scope = None) -> dict[str, Any]:
        """Every document of a scope with its chunk count."""
        return {"sources": to_json(mem.docs.list(scope=scope))}

    @api.get("/docs/chunks", tags=["inspector"])
    def doc_chunks(mem: Mem, source: Annotated[str, Query()], scope: Scope = None) -> s.MemoriesOut:
        """One document's chunks, in order."""
        chunks = [r for r in mem.long_term.all(scope=scope, kinds=(DOC_KIND,)) if r.metadata.get("source") == source]
        if not chunks:
            raise NotFound(f"no document with source {source!r}")
        chunks.sort(key=lambda r: int(r.metadata.get("position", 0) or 0))
        return s.MemoriesOut.model_validate({"results": [s.memory_out(r) for r in chunks]})

    @api.post("/agent/replay", tags=["inspector"])
    def replay(body: ReplayIn, mem: Mem) -> dict[str, Any]:
        """Run one support turn as a dry run: the model is called, nothing is saved anywhere."""
        reply = agent_for(mem).turn(body.customer_id, body.message, dry_run=True)
        r = reply.report
        return {"text": reply.text, "dry_run": r.dry_run, "system_prompt": r.system_prompt,
                "messages": [dict(m) for m in r.sent], "report": {
                    "model": r.model, "memories": [s.memory_out(m) for m in r.memories],
                    "episodes": [s.episode_out(e) for e in r.episodes], "cases": [s.episode_out(e) for e in r.cases],
                    "docs": [s.doc_hit_out(d) for d in r.docs],
                    "tool_uses": [{"name": t.name, "input": dict(t.input), "result": t.result} for t in r.tool_uses],
                    "input_tokens": r.input_tokens, "output_tokens": r.output_tokens,
                    "messages_sent": r.messages_sent, "model_calls": r.model_calls}}

    @api.get("/cases", tags=["inspector"], openapi_extra=needs("operator"))
    def cases(mem: Mem) -> dict[str, Any]:
        """The de-identified cases every customer may see, and those waiting for review."""
        base = CaseBase(mem)
        return {"review": review_cases, "shared": [s.episode_out(e) for e in base.shared()],
                "pending": [s.episode_out(e) for e in base.pending()]}

    @api.post("/cases/{case_id}/review", tags=["inspector"], openapi_extra=needs("operator"))
    def review(case_id: str, body: CaseReviewIn, mem: Mem, who: Who) -> dict[str, Any]:
        """Approve (share) or reject (erase) a case waiting for review; a case sent through the API
        is approved by another key than the one that sent it (403 otherwise)."""
        base = CaseBase(mem)
        if body.approve:
            return {"approved": s.episode_out(base.approve(case_id, reviewer=who))}
        base.reject(case_id)
        return {"rejected": case_id}

    return api

