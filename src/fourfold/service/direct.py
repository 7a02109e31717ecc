"""Direct routes: the /v1 routes that take one JSON body, answered without FastAPI's per-request steps.

Under `benchmarks/service.py` about 40% of the service's GIL-held time was the web stack, and
most of that was FastAPI's work around each call: matching the request against every route
of the included router, a `Request`, the body's media type parsed with `email.message`,
dependency solving, the answer validated again and wrapped in a `Response`. For a route
whose only inputs are its JSON body and the caller's memory, `DirectRoutes` (the first route
of the app) does the same with FastAPI's own objects: the route's `body_field` validates the
body, its `response_field` validates and serializes the answer, and errors are raised to the
app's exception handlers as the route would raise them.

Only a request it can serve exactly that way takes the direct path: a JSON `Content-Type` and
a body that validates. Anything else (no body, another media type, invalid JSON or fields) is
handed on, its body replayed, to the FastAPI route, which answers it (its 401 before 422
included). The FastAPI routes stay registered for the OpenAPI document and for every request
that is not direct. `tests/test_service_direct.py` checks both paths give the same answers.
"""

# No `from __future__ import annotations`: FastAPI's objects are read at runtime.

import asyncio
import json
from collections.abc import Callable, Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi.datastructures import DefaultPlaceholder
from fastapi.exceptions import ResponseValidationError
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer
from starlette.requests import ClientDisconnect
from starlette.routing import BaseRoute, Match

from fourfold.memory import Memory

__all__ = ["DirectRoutes"]

#: Resolves the caller's memory from its `Authorization` and `Host` headers (raises `Unauthorized`).
MemoryFor = Callable[[str | None, str | None], Memory]
ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Any]
#: Set on a request handed on to FastAPI, so this route does not match it again.
_HANDED_ON = "fourfold.direct.handed_on"


class _Direct:
    """One route served directly: its FastAPI route (for the fields) and its function."""

    __slots__ = ("body", "body_field", "function", "memory", "route", "status")

    def __init__(self, route: APIRoute, function: Callable[..., Any], memory: str) -> None:
        self.route, self.function, self.memory = route, function, memory
        self.body_field = route.dependant.body_params[0]  # what FastAPI validates a lone body with
        self.body = self.body_field.name
        self.status = route.status_code or 200

    def answer(self, item: Any, memory: Memory) -> bytes:
        """Run the route and serialize its answer as FastAPI would (validated, then dumped)."""
        result = self.function(**{self.body: item, self.memory: memory})
        field = self.route.response_field
        assert field is not None  # direct routes have a response model (see `DirectRoutes.add`)
        value, errors = field.validate(result, {}, loc=("response",))
        if errors:
            raise ResponseValidationError(errors=errors, body=result)
        route = self.route
        return field.serialize_json(
            value, include=route.response_model_include, exclude=route.response_model_exclude,
            by_alias=route.response_model_by_alias, exclude_unset=route.response_model_exclude_unset,
            exclude_defaults=route.response_model_exclude_defaults, exclude_none=route.response_model_exclude_none,
        )


class DirectRoutes(BaseRoute):
    """The direct path of the routes `add` accepts; must be the app's first route."""

    def __init__(self, executor: ThreadPoolExecutor, memory_for: MemoryFor) -> None:
        self._executor = executor
        self._memory_for = memory_for
        self._routes: dict[tuple[str, str], _Direct] = {}
        self._fallback: ASGIApp | None = None
        self._overrides: Mapping[Any, Any] = {}
        #: Requests answered directly (the others were handed on).
        self.served = 0

    def hand_on_to(self, router: ASGIApp, overrides: Mapping[Any, Any]) -> None:
        """The app's router, which answers what the direct path does not, and the app's
        `dependency_overrides` (while there are any, FastAPI answers every request)."""
        self._fallback = router
        self._overrides = overrides

    def routes(self) -> set[tuple[str, str]]:
        """(method, path) of every route served directly."""
        return set(self._routes)

    def add(self, route: APIRoute, function: Callable[..., Any], caller: Callable[..., Any]) -> bool:
        """Serve `route` directly if its inputs are one JSON body and `caller`'s memory; whether it is."""
        dependant = route.dependant
        if (dependant.path_params or dependant.query_params or dependant.header_params or dependant.cookie_params
                or len(dependant.body_params) != 1 or getattr(dependant.body_params[0].field_info, "embed", None)
                or route.response_field is None or not isinstance(route.response_class, DefaultPlaceholder)):
            return False
        callers = [d.name for d in dependant.dependencies if d.call is caller]
        # The router's `Security(HTTPBearer(auto_error=False))` only documents the key: it never refuses.
        others = [d for d in dependant.dependencies
                  if d.call is not caller and not (isinstance(d.call, HTTPBearer) and not d.call.auto_error)]
        if len(callers) != 1 or others or callers[0] is None:
            return False
        for method in route.methods or ():
            if method in ("POST", "PUT", "PATCH"):
                self._routes[(method, route.path)] = _Direct(route, function, callers[0])
        return True

    def matches(self, scope: MutableMapping[str, Any]) -> tuple[Match, dict[str, Any]]:
        if (scope["type"] == "http" and not scope.get("root_path") and _HANDED_ON not in scope
                and (scope["method"], scope["path"]) in self._routes):
            return Match.FULL, {}
        return Match.NONE, {}

    async def handle(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        direct = self._routes[(scope["method"], scope["path"])]
        authorization = host = content_type = None
        for name, value in scope["headers"]:
            if name == b"authorization" and authorization is None:
                authorization = value.decode("latin-1")
            elif name == b"host" and host is None:
                host = value.decode("latin-1")
            elif name == b"content-type" and content_type is None:
                content_type = value
        body = await _read_body(receive)
        item = None if self._overrides else _validated(direct, content_type, body)
        if item is None:
            await self._hand_on(scope, body, receive, send)
            return

        def call() -> bytes:
            return direct.answer(item, self._memory_for(authorization, host))

        content = await asyncio.get_running_loop().run_in_executor(self._executor, call)
        self.served += 1
        await send({"type": "http.response.start", "status": direct.status, "headers": [
            (b"content-length", str(len(content)).encode()), (b"content-type", b"application/json"),
        ]})
        await send({"type": "http.response.body", "body": content})

    async def _hand_on(self, scope: MutableMapping[str, Any], body: bytes, receive: Any, send: Any) -> None:
        """Let the FastAPI route answer, with the body this route already read."""
        assert self._fallback is not None, "DirectRoutes.hand_on_to was not called"
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        scope[_HANDED_ON] = True
        await self._fallback(scope, replay, send)


async def _read_body(receive: Any) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _validated(direct: _Direct, content_type: bytes | None, body: bytes) -> Any:
    """The body as the route's model, or None when FastAPI must answer (it gives the error)."""
    if not body or content_type is None or content_type.partition(b";")[0].strip().lower() != b"application/json":
        return None
    try:
        data = json.loads(body)
    except ValueError:  # JSONDecodeError, and bytes that are not UTF-8/16/32
        return None
    value, errors = direct.body_field.validate(data, {}, loc=("body",))
    return None if errors else value
