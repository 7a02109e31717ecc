"""The fast lane answers exactly as FastAPI does.

Two apps over one data dir: one with the lane, one without. Each request goes to both, as
two tenants with the same history, so that both see the same data; the answers must match
in status, content type and body (ids and clocks aside). Every lane route must have a case
here, so a route that joins the lane later cannot skip the comparison.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any

import pytest
from fastapi import APIRouter
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict, StrictStr

from fourfold.embeddings.hashing import HashEmbedder
from fourfold.models.offline import OfflineModel
from fourfold.service.app import create_app
from fourfold.service.errors import Unauthorized
from fourfold.service.fastlane import FastLane, lanes_for
from fourfold.service.keys import KeyStore
from fourfold.service.tenancy import Tenants

#: Valid requests, one or more per lane route, in an order where the reads find data.
CASES: list[tuple[str, str, Any]] = [
    ("POST", "/v1/memories", {"text": "Prefers email over phone calls.", "scope": "customer:1", "kind": "preference"}),
    ("POST", "/v1/memories", {"text": "Router reset fixed the VPN drop.", "scope": "customer:1",
                              "metadata": {"ticket": 7}, "valid_from": 1700000000}),
    ("POST", "/v1/memories", {"text": "token sk-ant-api03-" + "A" * 40 + " was pasted", "scope": "customer:2"}),
    ("POST", "/v1/memories/batch", {"items": [{"text": "Ships to Lyon.", "scope": "customer:1"},
                                              {"text": "Pays by card.", "scope": "customer:1", "kind": "fact"}]}),
    ("POST", "/v1/memories/add", {"messages": [{"role": "user", "content": "I prefer tea to coffee."}],
                                  "scope": "customer:3"}),
    ("POST", "/v1/memories/search", {"query": "how to contact", "scope": "customer:1", "k": 3}),
    ("POST", "/v1/memories/search", {"query": "vpn", "scope": "customer:1", "kinds": ["note"], "min_score": 0.0,
                                     "include_superseded": True}),
    ("POST", "/v1/memories/search", {"query": "vpn", "scope": "customer:1", "as_of": "2020-01-01T00:00:00Z"}),
    ("POST", "/v1/episodes", {"goal": "refund a parcel", "actions": ["checked order"], "outcome": "refunded",
                              "success": True, "scope": "customer:1", "tags": ["refund"]}),
    ("POST", "/v1/episodes/batch", {"items": [{"goal": "reset password", "actions": ["sent link"],
                                               "outcome": "reset", "success": True}]}),
    ("POST", "/v1/episodes/similar", {"situation": "parcel refund", "scope": "customer:1", "k": 2}),
    ("PUT", "/v1/facts/tool-description", {"description": "Policies of the desk."}),
    ("POST", "/v1/facts/lookup", {"key": "refund.window_days"}),
    ("POST", "/v1/facts/lookup", {"key": ["not", "a", "key"]}),
    ("POST", "/v1/facts/search", {"query": "money back on the annual plan", "k": 2}),
    ("POST", "/v1/docs", {"text": "Refunds are paid within 14 days of the return.", "source": "policy.md"}),
    ("POST", "/v1/docs/search", {"query": "refund days", "k": 2}),
    ("POST", "/v1/agent/turn", {"customer_id": "42", "message": "My parcel never arrived."}),
    ("POST", "/v1/agent/resolve", {"customer_id": "42", "outcome": "Resent the parcel.", "success": True}),
    ("POST", "/v1/cases/similar", {"situation": "lost parcel", "k": 2}),
]

#: Requests the lane must hand to FastAPI, and FastAPI's answers to them.
REFUSED: list[tuple[str, str, dict[str, str], bytes]] = [
    ("POST", "/v1/memories/search", {}, b'{"query": "x", "bogus": 1}'),  # a field the model does not declare
    ("POST", "/v1/memories/search", {}, b'{"query": "x", "k": "3"}'),  # a strict type
    ("POST", "/v1/memories/search", {}, b'{"query": '),  # not JSON
    ("POST", "/v1/memories/search", {}, b"[1, 2]"),  # not an object
    ("POST", "/v1/memories/search", {}, b""),  # no body
    ("POST", "/v1/memories/search", {}, b"\xff\xfe"),  # not UTF-8
    ("POST", "/v1/memories", {}, b'{"text": ""}'),  # refused by the library, not the model
    ("POST", "/v1/memories/search", {"content-type": "text/plain"}, b'{"query": "x"}'),
    ("POST", "/v1/memories/search", {"content-type": "application/json; charset=utf-8"}, b'{"query": "x"}'),
    ("POST", "/v1/memories/search", {"authorization": ""}, b'{"query": "x"}'),  # no key
    ("POST", "/v1/memories/search", {"authorization": "Bearer ffk_000000000000_nope"}, b'{"query": "x"}'),
    ("POST", "/v1/memories/search", {"authorization": "Basic abc"}, b'{"query": "x"}'),
    ("POST", "/v1/memories/search?k=1", {}, b'{"query": "x"}'),
    ("POST", "/v1/memories/search/", {}, b'{"query": "x"}'),
    ("GET", "/v1/memories/search", {}, b""),
    ("POST", "/v1/episodes", {}, b'{"goal": "g", "actions": [], "outcome": "o", "success": 1}'),
]

_VOLATILE = {"id", "ids", "created_at", "updated_at", "valid_from", "recorded_at", "ts", "replaced_at",
             "superseded_by", "supersedes", "remembered"}
_HEX_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")


def _normal(value: Any) -> Any:
    """The answer without what differs between two equal histories: ids, clocks, tenants."""
    if isinstance(value, dict):
        return {k: "<v>" if k in _VOLATILE else _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, str):
        return _HEX_ID.sub("<id>", value)
    return value


class Pair:
    """The same data dir served with and without the lane, one tenant each."""

    def __init__(self, root: Path) -> None:
        self.tenants = Tenants(root, embedder=HashEmbedder())
        self.keys = KeyStore(root / "fourfold.sqlite3")
        self.key = {t: self.keys.create(t, role="operator")[1] for t in ("laned", "plain")}
        common: dict[str, Any] = {"model": OfflineModel(), "mount_mcp": False}
        self.laned = create_app(self.tenants, self.keys, **common)
        self.plain = create_app(self.tenants, self.keys, fast_lane=False, **common)

    def send(self, app: str, method: str, path: str, headers: dict[str, str], content: bytes) -> Any:
        client = TestClient(getattr(self, app), raise_server_exceptions=False)
        sent = {"authorization": f"Bearer {self.key[app]}", "content-type": "application/json", **headers}
        return client.request(method, path, content=content, headers={k: v for k, v in sent.items() if v})

    def both(self, method: str, path: str, content: bytes, headers: dict[str, str] | None = None) -> tuple[Any, Any]:
        return (self.send("laned", method, path, headers or {}, content),
                self.send("plain", method, path, headers or {}, content))

    def close(self) -> None:
        self.tenants.close()
        self.keys.close()


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    p = Pair(tmp_path)
    yield p
    p.close()


def _lanes(app: Any) -> dict[tuple[str, str], Any]:
    found = [m.kwargs["lanes"] for m in app.user_middleware if m.cls is FastLane]
    return found[0] if found else {}


def test_the_busy_routes_take_the_lane_and_the_plain_app_has_none(pair: Pair) -> None:
    lanes = _lanes(pair.laned)
    for route in [("POST", "/v1/memories"), ("POST", "/v1/memories/search"), ("POST", "/v1/episodes"),
                  ("POST", "/v1/episodes/similar"), ("POST", "/v1/facts/lookup")]:
        assert route in lanes
    assert not any(("{" in path) for _, path in lanes)  # paths with parameters stay with FastAPI
    assert _lanes(pair.plain) == {}
    assert {(m, p) for m, p, _ in CASES} == set(lanes), "every lane route needs a case in CASES"


def test_every_lane_route_answers_as_fastapi_does(pair: Pair) -> None:
    set_fact = pair.both("PUT", "/v1/facts/refund.window_days", b'{"value": 14, "description": "Refund window."}')
    assert [r.status_code for r in set_fact] == [200, 200]
    for method, path, body in CASES:
        laned, plain = pair.both(method, path, json.dumps(body).encode())
        assert laned.status_code == plain.status_code, (path, laned.text, plain.text)
        assert laned.status_code < 300, (path, laned.text)
        assert laned.headers["content-type"] == plain.headers["content-type"] == "application/json"
        assert int(laned.headers["content-length"]) == len(laned.content)
        assert _normal(laned.json()) == _normal(plain.json()), path


def test_reads_of_the_same_data_are_the_same_bytes(pair: Pair) -> None:
    """Both apps read one tenant's memory: the answers are byte for byte FastAPI's."""
    pair.key["plain"] = pair.key["laned"]
    for method, path, body in CASES[:4]:
        pair.send("laned", method, path, {}, json.dumps(body).encode())
    for body in ({"query": "contact", "scope": "customer:1", "k": 5}, {"query": "sk-ant", "scope": "customer:2"}):
        laned, plain = pair.both("POST", "/v1/memories/search", json.dumps(body).encode())
        assert laned.status_code == plain.status_code == 200
        assert laned.content == plain.content
        assert laned.json()["results"]


def test_what_the_lane_refuses_fastapi_answers_word_for_word(pair: Pair) -> None:
    statuses = set()
    for method, path, headers, content in REFUSED:
        laned, plain = pair.both(method, path, content, headers)
        assert (laned.status_code, laned.content) == (plain.status_code, plain.content), (path, headers, content)
        assert laned.headers.get("www-authenticate") == plain.headers.get("www-authenticate")
        statuses.add(laned.status_code)
    assert {401, 422, 200}.issubset(statuses)  # the cases reach FastAPI's answers, good and bad


def test_a_route_that_fails_answers_with_the_library_error(pair: Pair) -> None:
    """A closed tenant store answers as FastAPI's error handler does."""
    body = json.dumps({"query": "x", "scope": "customer:1"}).encode()
    pair.tenants.get("laned").close()
    pair.tenants.get("plain").close()
    laned, plain = pair.both("POST", "/v1/memories/search", body)
    assert laned.status_code == plain.status_code >= 400
    assert laned.json()["error"]["code"] == plain.json()["error"]["code"]


# -- the lane alone, around a fake app ------------------------------------------------------


class _EchoIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    word: StrictStr


class _EchoOut(BaseModel):
    said: str
    by: str


_Who = Annotated[str, "the caller"]


def _lane_around(inner_calls: list[bytes]) -> FastLane:
    router = APIRouter()

    @functools.wraps(_echo)
    async def endpoint(**kwargs: Any) -> Any:  # as the service's router wraps a plain route
        return _echo(**kwargs)

    router.add_api_route("/echo", endpoint, methods=["POST"], status_code=201)
    router.add_api_route("/echo/{n}", endpoint, methods=["POST"])  # a path parameter: never in the lane

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        inner_calls.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b"fastapi"})

    def memory_for(scope: Any) -> Any:
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        if headers.get("authorization") != "Bearer good":
            raise Unauthorized("send an API key")
        return f"tenant@{headers.get('host')}"

    return FastLane(inner, lanes=lanes_for(router.routes, _Who), memory_for=memory_for,
                    error_response=lambda exc: JSONResponse({"error": exc.code}, status_code=401),
                    executor=ThreadPoolExecutor(2))


def _echo(body: _EchoIn, who: _Who) -> _EchoOut:
    return _EchoOut(said=body.word, by=who)


def _drive(app: Any, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    client = TestClient(app, raise_server_exceptions=True)
    response = client.post(path, content=body, headers=headers)
    return response.status_code, response.content


def test_the_lane_answers_its_routes_itself_and_hands_on_everything_else() -> None:
    calls: list[bytes] = []
    lane = _lane_around(calls)
    assert set(lane.lanes) == {("POST", "/echo")}
    good = {"authorization": "Bearer good", "content-type": "application/json", "host": "h"}
    assert _drive(lane, "/echo", b'{"word": "hi"}', good) == (201, b'{"said":"hi","by":"tenant@h"}')
    assert calls == []
    assert _drive(lane, "/echo", b'{"word": "hi"}', {**good, "authorization": "Bearer bad"}) == (
        401, b'{"error":"unauthorized"}')
    assert calls == []
    for path, body, headers in [("/echo", b'{"word": 1}', good), ("/echo", b'{"word": "hi", "x": 0}', good),
                                ("/echo", b"{", good), ("/echo", b'{"word": "hi"}', {**good, "content-type": "text/plain"}),
                                ("/echo?q=1", b'{"word": "hi"}', good), ("/echo/3", b'{"word": "hi"}', good)]:
        calls.clear()
        assert _drive(lane, path, body, headers) == (418, b"fastapi")
        assert calls == [body]  # the same bytes, replayed


def test_a_route_shadowed_by_an_earlier_one_stays_with_fastapi() -> None:
    router = APIRouter()

    @functools.wraps(_echo)
    async def endpoint(**kwargs: Any) -> Any:
        return _echo(**kwargs)

    router.add_api_route("/things/{name}", endpoint, methods=["POST"])  # FastAPI takes /things/echo here
    router.add_api_route("/things/echo", endpoint, methods=["POST"])
    router.add_api_route("/other/echo", endpoint, methods=["POST"])
    router.add_api_route("/other/{name}", endpoint, methods=["GET"])  # later, and another method
    assert set(lanes_for(router.routes, _Who)) == {("POST", "/other/echo")}
