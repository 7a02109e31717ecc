"""The fast lane: the service's busiest JSON routes answered without FastAPI's request pipeline.

FastAPI spends a good part of a small request on itself: matching the path against the
routes, solving the route's dependencies, building a `Request` and a `Response`, work that
a route whose whole input is one JSON body does not need.

The lane sits just inside the service's own middleware (body limit, browser guard) and takes
a request only when it is an exact `METHOD /path` of a route whose whole input is one JSON
body: the route's own function runs, with the same body model, the same key check, the same
response model and the same error answers. Anything else, and any body the model refuses,
goes on to FastAPI untouched (the body is replayed), so a 422, a 404 or a 405 is FastAPI's,
word for word. A route takes the lane when its function has exactly two parameters, a
pydantic model (the body) and the caller's memory, its path has no parameters, and no route
before it would take the same request. `tests/test_service_fastlane.py` holds every lane
route to FastAPI's answer.
"""

# No `from __future__ import annotations`: the routes' annotations are read at runtime.

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError

from fourfold.errors import FourfoldError
from fourfold.memory import Memory
from fourfold.service.admission import read_body, replay_body

__all__ = ["FastLane", "Lane", "lanes_for"]

ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]
#: The caller's memory from the request's ASGI scope (its headers); raises Unauthorized.
MemoryFor = Callable[[MutableMapping[str, Any]], Memory]
#: A FourfoldError as the response FastAPI's handler would send.
ErrorResponse = Callable[[FourfoldError], Any]


@dataclass(frozen=True)
class Lane:
    """One route in the lane: its function, body model, answer's type and status."""

    route: Callable[..., Any]
    #: FastAPI's route, which names the role it needs (`fourfold.service.auth.role_of`).
    api_route: APIRoute
    body: type[BaseModel]
    body_name: str
    memory_name: str
    answer: TypeAdapter[Any]
    status: int


def lanes_for(routes: list[Any], memory_type: Any) -> dict[tuple[str, str], Lane]:
    """The lane routes among `routes`: (method, path) -> Lane, for FastAPI routes whose function
    takes only a JSON body model and the caller's memory (`memory_type`, the annotation)."""
    table: dict[tuple[str, str], Lane] = {}
    for index, route in enumerate(routes):
        if not isinstance(route, APIRoute) or "{" in route.path or len(route.methods or ()) != 1:
            continue
        method = next(iter(route.methods or ()))
        if any(_takes(earlier, method, route.path) for earlier in routes[:index]):
            continue  # FastAPI would give the request to that earlier route
        function = getattr(route.endpoint, "__wrapped__", None)
        if function is None or route.response_model is None:
            continue
        params = inspect.signature(function, eval_str=True).parameters
        bodies = [n for n, p in params.items() if inspect.isclass(p.annotation) and issubclass(p.annotation, BaseModel)]
        memories = [n for n, p in params.items() if p.annotation == memory_type]
        if len(params) != 2 or len(bodies) != 1 or len(memories) != 1:
            continue
        table[(method, route.path)] = Lane(
            route=function, api_route=route, body=params[bodies[0]].annotation, body_name=bodies[0], memory_name=memories[0],
            answer=TypeAdapter(route.response_model), status=route.status_code or 200,
        )
    return table


def _takes(route: Any, method: str, path: str) -> bool:
    """Whether `route`, ahead in the list, would answer `method path`."""
    regex, allowed = getattr(route, "path_regex", None), getattr(route, "methods", None)
    return regex is not None and regex.match(path) is not None and (allowed is None or method in allowed)


class FastLane:
    """ASGI middleware: serves `lanes` itself, passes everything else to `app` (see module doc)."""

    def __init__(self, app: ASGIApp, *, lanes: dict[tuple[str, str], Lane], memory_for: MemoryFor,
                 error_response: ErrorResponse, executor: ThreadPoolExecutor) -> None:
        self.app = app
        self.lanes = lanes
        self.memory_for = memory_for
        self.error_response = error_response
        self.executor = executor

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        lane = self.lanes.get((scope.get("method", ""), scope.get("path", ""))) if scope["type"] == "http" else None
        if lane is None or scope.get("query_string") or scope.get("root_path"):
            await self.app(scope, receive, send)
            return
        content_type = next((value for key, value in scope["headers"] if key == b"content-type"), None)
        raw = await read_body(receive)
        if raw is None:  # the client went away
            return
        body = _parsed(lane, raw) if _is_json(content_type) else None
        if body is None:  # FastAPI answers it, from the same bytes
            await self.app(scope, replay_body(raw, receive), send)
            return
        try:
            answer = await asyncio.get_running_loop().run_in_executor(
                self.executor, self._run, lane, body, scope)
        except FourfoldError as exc:
            await self.error_response(exc)(scope, receive, send)
            return
        # Validated, then serialized by alias, as FastAPI does with a route's return value.
        payload = lane.answer.dump_json(lane.answer.validate_python(answer, from_attributes=True), by_alias=True)
        await send({"type": "http.response.start", "status": lane.status, "headers": [
            (b"content-length", str(len(payload)).encode("latin-1")), (b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload})

    def _run(self, lane: Lane, body: BaseModel, scope: MutableMapping[str, Any]) -> Any:
        scope["route"] = lane.api_route  # as FastAPI's routing sets it
        memory = self.memory_for(scope)
        return lane.route(**{lane.body_name: body, lane.memory_name: memory})


def _parsed(lane: Lane, raw: bytes) -> BaseModel | None:
    """The body as the route's model, as FastAPI parses it; None when it would not be accepted."""
    try:
        return lane.body.model_validate(json.loads(raw))
    except (ValueError, ValidationError):
        return None


def _is_json(content_type: bytes | None) -> bool:
    """`application/json`, with or without parameters (`; charset=utf-8`)."""
    return content_type is not None and content_type.split(b";", 1)[0].strip().lower() == b"application/json"
