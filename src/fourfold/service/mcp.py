"""The MCP server: fourfold's memories as tools for Claude Desktop, Claude Code and other clients.

Each tool parses its arguments, makes one library call and returns the result. The same
server runs over stdio (`fourfold mcp`) and behind the HTTP service's keys at `/mcp`; which
`Memory` a call uses is decided by `memory_for`, given the HTTP request (None over stdio).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from fourfold.errors import FourfoldError, InvalidInput, NotFound
from fourfold.memory import Memory
from fourfold.semantic.tools import DEFAULT_DESCRIPTION, policy_tool_schema
from fourfold.service.errors import one_line
from fourfold.service.keys import Role
from fourfold.service.schemas import (
    Actions,
    DocName,
    DocText,
    Goal,
    Key,
    Kind,
    MemoryText,
    NewText,
    Outcome,
    Query,
    Situation,
    Success,
    Where,
    doc_hit_out,
    episode_out,
    fact_out,
    memory_out,
)
from fourfold.types import Remembered

__all__ = ["INSTRUCTIONS", "MemoryFor", "bounded_scope", "build_mcp_server"]

#: Picks the memory of a call from its HTTP request (None over stdio).
MemoryFor = Callable[[Any], Memory]
#: Refuses (Forbidden) a request whose caller may not do what `role` may; None over stdio.
Authorize = Callable[[Any, Role], None]

INSTRUCTIONS = (
    "fourfold is your long-term memory. Before answering, `recall` what you know about the "
    "user or topic (`list_memories` shows all of a scope); after learning a durable fact, "
    "preference or resolution, `remember` it in "
    "one self-contained sentence (with a `key` such as contact_channel when it replaces an "
    "earlier value), or `update` a memory that changed. Use `lookup_policy` for authoritative values (limits, "
    "windows, prices) instead of trusting memory, and `search_docs` for documentation. When a "
    "task ends, `record_episode` what you tried and how it went; at the start of a similar "
    "task, `similar_successes` shows what worked before."
)

_SCOPE_HELP = (
    "Whose memory this is, e.g. 'customer:42' or 'project:atlas'. Scopes are hard walls: a "
    "recall only sees memories of the same scope. Omit it for the default scope; a server "
    "started with a scope accepts only that scope or one inside it ('<scope>/...')."
)


def bounded_scope(requested: str | None, server_scope: str | None) -> str | None:
    """The scope of a tool call: anything without a server scope, else that scope or one
    inside it ('user:me/notes', 'user:me:notes'); a call cannot reach past the server's scope."""
    if server_scope is None or requested == server_scope:
        return requested
    if requested is not None and requested.startswith((f"{server_scope}/", f"{server_scope}:")):
        return requested
    raise InvalidInput(f"scope {requested!r} is outside this server's scope {server_scope!r}")


class _FourfoldMCP(MCPServer[Any]):
    """MCPServer whose `lookup_policy` schema lists the caller's current fact keys."""

    def __init__(self, memory_for: MemoryFor, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._memory_for = memory_for

    async def _handle_list_tools(self, ctx: Any, params: Any) -> Any:
        result = await super()._handle_list_tools(ctx, params)
        memory = self._memory_for(getattr(ctx, "request", None))
        described = memory.facts.tool_description() + _POLICY_PROTOCOL
        schema = policy_tool_schema(memory.facts.descriptions(), description=described)
        for tool in result.tools:
            if tool.name == "lookup_policy":
                tool.input_schema = schema["input_schema"]
                tool.description = schema["description"]
        return result


#: The tools' own parameter types (their descriptions are what a model reads); the fields
#: they share with the HTTP API are declared in `fourfold.service.schemas`.
ScopeArg = Annotated[str | None, Field(description=_SCOPE_HELP)]
MemoryIdArg = Annotated[str, Field(description="The id of the memory (any of its versions).")]
Ctx = Context[Any, Any]
_Tool = TypeVar("_Tool", bound=Callable[..., Any])

# Appended to the operator's description: how the answers of this tool are to be used.
_POLICY_PROTOCOL = (
    " The key must be one of the listed keys; the answer is the value as "
    "text, or UNKNOWN (then say you do not know and escalate; never guess a policy)."
)
_POLICY_DESCRIPTION = DEFAULT_DESCRIPTION + _POLICY_PROTOCOL


def build_mcp_server(
    memory_for: MemoryFor, *, scope: str | None = None, authorize: Authorize | None = None
) -> MCPServer[Any]:
    """The fourfold MCP server; `scope` is the default scope of every tool call and bounds it.
    `authorize` checks the caller's role where a tool needs more than an agent's (the service's
    keys; over stdio the user is the machine's own)."""
    server = _FourfoldMCP(memory_for, name="fourfold", instructions=INSTRUCTIONS, log_level="WARNING")
    server_scope = scope

    def mem(ctx: Ctx) -> Memory:
        return memory_for(ctx.request_context.request)

    def owning(ctx: Ctx, memory_id: str) -> Memory:
        """The call's memory, once the memory named by id is known to lie within the server's
        scope (one outside it is not found: ids do not reach past the scope either)."""
        memory = mem(ctx)
        if server_scope is not None:
            try:
                bounded_scope(memory.long_term.get(memory_id).scope, server_scope)
            except InvalidInput:
                raise NotFound(f"no memory with id {memory_id!r}") from None
        return memory

    def tool(fn: _Tool) -> _Tool:
        """Register `fn` as a tool; its docstring, on one line, is the description a model reads."""
        return server.tool(description=" ".join((fn.__doc__ or "").split()))(fn)

    @tool
    def remember(
        text: MemoryText, ctx: Ctx, scope: ScopeArg = scope, kind: Kind = "note", key: Key = None
    ) -> dict[str, Any]:
        """Store one durable memory: a preference, fact, resolution or lesson worth knowing in a
        later conversation. Write it as one self-contained sentence ('Prefers email over
        phone'), not chit-chat. Secrets are redacted before storage. Returns the memory id."""
        with _tool_errors():
            mid = mem(ctx).long_term.remember(text, scope=bounded_scope(scope, server_scope), kind=kind, key=key)
        return _written(mid)

    @tool
    def remember_conversation(
        messages: Annotated[list[str], Field(description="The user's messages, oldest first.")],
        ctx: Ctx,
        scope: ScopeArg = scope,
    ) -> list[dict[str, Any]]:
        """Keep what a conversation says that is worth remembering about the user: their stated
        preferences (a changed one replaces the old) and lasting facts about them. Pass the
        user's messages; questions, requests and small talk are not kept. Returns what was kept."""
        with _tool_errors():
            done = mem(ctx).add(messages, scope=bounded_scope(scope, server_scope))
        return [{"id": r.id, "text": r.text, "created": r.created, "supersedes": list(r.supersedes)} for r in done]

    @tool
    def update(memory_id: MemoryIdArg, text: NewText, ctx: Ctx) -> dict[str, Any]:
        """Correct a memory: store a new version of it with another text. The version current until
        now stays in its history (see `history`) but is no longer recalled. Use it when the user
        says something known about them has changed."""
        with _tool_errors():
            return _written(owning(ctx, memory_id).long_term.update(memory_id, text))

    @tool
    def history(memory_id: MemoryIdArg, ctx: Ctx) -> list[dict[str, Any]]:
        """Every version of a memory, oldest first, each with when it became true (valid_from) and
        when a newer one replaced it (valid_to, null for the current one)."""
        with _tool_errors():
            return [memory_out(r) for r in owning(ctx, memory_id).long_term.history(memory_id)]

    @tool
    def recall(
        query: Query,
        ctx: Ctx,
        scope: ScopeArg = scope,
        k: Annotated[int, Field(description="How many memories to return (1-50).", ge=1, le=50)] = 5,
        where: Where = None,
    ) -> list[dict[str, Any]]:
        """Recall the memories most relevant to a query, best first, from one scope. Use it
        before answering to bring back what is known about the user or topic. Each result has
        an id (for `forget`), the text, its kind and a relevance score."""
        with _tool_errors():
            hits = mem(ctx).long_term.recall(query, scope=bounded_scope(scope, server_scope), k=k, where=where)
        return [memory_out(h) for h in hits]

    @tool
    def profile(ctx: Ctx, scope: ScopeArg = scope) -> list[dict[str, Any]]:
        """The profile of one scope: its current keyed memories (contact channel, language, plan,
        any key set), one per key, each with when it was set (valid_from). Read it at the start
        of a conversation: it holds whatever the question is."""
        with _tool_errors():
            if (bounded := bounded_scope(scope, server_scope)) is None:
                raise InvalidInput("profile needs a scope")
            return [memory_out(r) for r in mem(ctx).long_term.profile(bounded)]

    @tool
    def list_memories(
        ctx: Ctx,
        scope: ScopeArg = scope,
        where: Where = None,
        limit: Annotated[int, Field(description="At most this many, the most recent (1-500).", ge=1, le=500)] = 100,
    ) -> list[dict[str, Any]]:
        """List the memories of one scope, oldest first, without a query: to review or audit what
        is known about a user, or find one to `forget`. Returns the most recent `limit` of them;
        `where` narrows them down by metadata or date."""
        with _tool_errors():
            found = mem(ctx).long_term.all(scope=bounded_scope(scope, server_scope), where=where)
        return [memory_out(r) for r in found[-limit:]]

    @tool
    def forget(
        memory_id: Annotated[str, Field(description="The id of the memory, e.g. mem_3f2a...")], ctx: Ctx
    ) -> str:
        """Delete one memory by the id that `remember` or `recall` gave. Use it when the user asks
        you to forget something or a memory turned out to be wrong."""
        with _tool_errors():
            owning(ctx, memory_id).long_term.forget(memory_id)
        return f"forgot {memory_id}"

    @tool
    def record_episode(
        goal: Goal, actions: Actions, outcome: Outcome, success: Success, ctx: Ctx, scope: ScopeArg = scope
    ) -> dict[str, Any]:
        """Record how a task went, once it is finished: the goal, the steps taken, the outcome,
        and whether it succeeded. Successful episodes come back from `similar_successes` the
        next time a similar task starts."""
        with _tool_errors():
            ep = mem(ctx).episodes.record(
                goal=goal, actions=actions, outcome=outcome, success=success,
                scope=bounded_scope(scope, server_scope),
            )
        return episode_out(ep)

    @tool
    def similar_successes(
        situation: Situation,
        ctx: Ctx,
        k: Annotated[int, Field(description="How many episodes (1-20).", ge=1, le=20)] = 3,
        scope: ScopeArg = scope,
    ) -> list[dict[str, Any]]:
        """Past successful episodes of one scope most similar to the current situation, best
        first: worked examples of what was done before and how it ended. Call it at the start
        of a task."""
        # Only the scope's own episodes: unscoped ones are written unvetted by any client.
        with _tool_errors():
            episodes = mem(ctx).episodes.similar_successes(
                situation, k=k, scope=bounded_scope(scope, server_scope), include_unscoped=False
            )
        return [episode_out(ep) for ep in episodes]

    @server.tool(description=_POLICY_DESCRIPTION)
    def lookup_policy(key: Annotated[str, Field(description="Which policy value to return.")], ctx: Ctx) -> str:
        with _tool_errors():
            return mem(ctx).facts.lookup(key)

    @tool
    def search_policy(query: Query, ctx: Ctx) -> list[dict[str, Any]]:
        """Find the authoritative policy values that answer a question, by what they are about:
        pass the question in plain words ('money back on the annual plan'). Returns the nearest
        facts (key, value, description), best first; none when no recorded policy is about it."""
        with _tool_errors():
            return [fact_out(f) for f in mem(ctx).facts.search(query)]

    @tool
    def ingest_doc(text: DocText, source: DocName, ctx: Ctx) -> dict[str, Any]:
        """Add a document (a manual page, a policy, a wiki article) to the searchable
        documentation. It is split into chunks; ingesting the same text again changes nothing."""
        with _tool_errors():
            if authorize is not None:  # documents are read by every customer's agent
                authorize(ctx.request_context.request, "operator")
            ids = mem(ctx).docs.ingest_text(text, source=source, scope=scope)
        return {"chunks": len(ids), "ids": ids}

    @tool
    def search_docs(
        query: Query,
        ctx: Ctx,
        k: Annotated[int, Field(description="How many passages (1-20).", ge=1, le=20)] = 5,
    ) -> list[dict[str, Any]]:
        """Search the documentation for passages relevant to a question, best first. Each hit
        names its source and heading; quote or summarise it rather than guessing."""
        with _tool_errors():
            hits = mem(ctx).docs.search(query, k=k, scope=scope)
        return [doc_hit_out(h) for h in hits]

    return server


def _written(mid: Remembered) -> dict[str, Any]:
    return {"id": str(mid), "created": mid.created, "redacted": [r.kind for r in mid.redactions],
            "supersedes": list(mid.supersedes)}


@contextmanager
def _tool_errors() -> Iterator[None]:
    """A library error becomes a tool error the model can read: `code: message`."""
    try:
        yield
    except FourfoldError as exc:
        raise ToolError(f"{exc.code}: {one_line(str(exc))}") from None
