"""Admission: a request's key is checked before its body is read, and its shape before it is parsed.

Every request to the API (`/v1/...`) or to MCP (`/mcp`) that carries a body is admitted here
first. The key is checked (in a request thread: it reads the key table) before a byte of the
body is received, so a caller without a valid key costs the service a header read, whatever it
sends. The body is then received (the body limit, in front, still applies) and its JSON nesting
is measured on the raw bytes: past `MAX_JSON_DEPTH` the answer is 422 before any parser, which
would recurse once per level, sees it. The caller found here travels in the ASGI scope
(`CALLER`), so the route does not check the key a second time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import Executor
from typing import Any

import numpy as np

from fourfold.errors import FourfoldError, InvalidInput

__all__ = ["CALLER", "MAX_JSON_DEPTH", "Admission", "guarded", "json_depth", "read_body", "replay_body"]

#: Where the admitted caller, (tenant, who), is kept in the ASGI scope.
CALLER = "fourfold.caller"
#: The deepest JSON nesting a request may send: fourfold's own bodies nest a handful of levels
#: (metadata and `where` filters included); a parser recurses once per level.
MAX_JSON_DEPTH = 64

ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]
#: Finds the request's caller from its scope's headers and keeps it there (CALLER); raises
#: Unauthorized, or the key table's own error.
Authenticate = Callable[[MutableMapping[str, Any]], object]
#: An error as the ASGI response the service sends for it.
Respond = Callable[[FourfoldError], Any]

_OPEN, _CLOSE = np.frombuffer(b"[{", np.uint8), np.frombuffer(b"]}", np.uint8)
_STRUCTURE = bytes(range(256)).translate(None, b'[]{}"')  # every byte but these, to delete


def json_depth(body: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest, in time linear in its length.

    Strings are skipped (a bracket inside one does not count), escapes included. Malformed JSON
    gets some number; the parser refuses it afterwards.
    """
    # Backslashes pair up from the left inside a string, so removing pairs, then escaped quotes,
    # leaves exactly the quotes that open and close strings.
    plain = body.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _STRUCTURE)
    outside = b"".join(plain.split(b'"')[0::2])
    if not outside:
        return 0
    marks = np.frombuffer(outside, np.uint8)
    steps = np.isin(marks, _OPEN).astype(np.int32) - np.isin(marks, _CLOSE).astype(np.int32)
    return int(np.cumsum(steps).max(initial=0))


def guarded(path: str) -> bool:
    """The paths whose requests need a key: the API and MCP."""
    return path.startswith("/v1/") or path == "/mcp" or path.startswith("/mcp/")


class Admission:
    """ASGI middleware: a body-carrying request to a guarded path is admitted (see module doc)."""

    def __init__(self, app: ASGIApp, *, authenticate: Authenticate, executor: Executor, respond: Respond,
                 max_depth: int = MAX_JSON_DEPTH) -> None:
        self.app = app
        self.authenticate = authenticate
        self.executor = executor
        self.respond = respond
        self.max_depth = max_depth

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not guarded(scope["path"]) or not _has_body(scope):
            await self.app(scope, receive, send)
            return
        try:  # the caller is kept in the scope (CALLER), so the route does not check again
            await asyncio.get_running_loop().run_in_executor(self.executor, self.authenticate, scope)
        except FourfoldError as exc:  # Unauthorized, or the key table's store unavailable (503)
            await self.respond(exc)(scope, receive, send)  # the body is never read
            return
        body = await read_body(receive)
        if body is None:
            return
        # Only a body with that many brackets can nest that deep (counting them is cheap).
        if body.count(b"[") + body.count(b"{") > self.max_depth and json_depth(body) > self.max_depth:
            refusal = InvalidInput(f"the request body nests deeper than {self.max_depth} levels of JSON")
            await self.respond(refusal)(scope, receive, send)
            return
        await self.app(scope, replay_body(body, receive), send)


def _has_body(scope: MutableMapping[str, Any]) -> bool:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            return value.strip() not in (b"", b"0")
        if key == b"transfer-encoding":
            return True
    return False


async def read_body(receive: Any) -> bytes | None:
    """A request's whole body; None when the client went away before sending it all."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay_body(body: bytes, receive: Any) -> Any:
    """A receive that gives `body` once, then what the client sends next (its disconnect)."""
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
