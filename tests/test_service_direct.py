"""Direct routes (`fourfold.service.direct`): the same answers as the FastAPI routes they stand in for.

Two apps serve one data dir with one key table, one with direct routes and one without; every
route served directly gets the same requests, valid and invalid, through both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from fourfold.models import ScriptedModel
from fourfold.service.app import create_app
from fourfold.service.direct import DirectRoutes
from fourfold.service.keys import KeyStore
from fourfold.service.tenancy import Tenants
from test_service import EMBEDDER
from test_service_routes import operations, sample_body

#: Routes that change nothing: their answers must be equal byte for byte.
READS = {"/v1/memories/search", "/v1/episodes/similar", "/v1/facts/lookup", "/v1/docs/search", "/v1/cases/similar"}


class Pair:
    """The app with direct routes and the app without, on one data dir."""

    def __init__(self, data_dir: Path) -> None:
        self.keys = KeyStore(data_dir / "fourfold.sqlite3")
        self.key = self.keys.create("acme")[1]
        self.tenants = [Tenants(data_dir, embedder=EMBEDDER) for _ in range(2)]
        self.apps = [create_app(t, self.keys, model=ScriptedModel(["Noted."] * 100), direct_routes=direct)
                     for t, direct in zip(self.tenants, (True, False), strict=True)]
        self.clients = [TestClient(app, raise_server_exceptions=False) for app in self.apps]
        first = self.apps[0].router.routes[0]
        assert isinstance(first, DirectRoutes)
        self.direct = first
        assert not any(isinstance(r, DirectRoutes) for r in self.apps[1].router.routes)

    def both(self, method: str, path: str, *, body: Any = None, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> list[Any]:
        sent = {"Authorization": f"Bearer {self.key}", **(headers or {})}
        sent = {k: v for k, v in sent.items() if v}
        return [c.request(method, path, json=body if raw is None else None, content=raw, headers=sent)
                for c in self.clients]

    def close(self) -> None:
        for client in self.clients:
            client.close()
        for tenants in self.tenants:
            tenants.close()
        self.keys.close()


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    p = Pair(tmp_path)
    # Something to find: memories, an episode, a fact and a document.
    client, auth = p.clients[1], {"Authorization": f"Bearer {p.key}"}
    for text in ("prefers tea over coffee", "lives in Lisbon", "card ending 4242 was refunded"):
        assert client.post("/v1/memories", json={"text": text, "scope": "customer:1"}, headers=auth).status_code == 201
    assert client.post("/v1/episodes", json={"goal": "refund a damaged parcel", "actions": ["checked order"],
                                             "outcome": "refunded", "success": True, "scope": "customer:1"},
                       headers=auth).status_code == 201
    assert client.put("/v1/facts/refund_days", json={"value": 30}, headers=auth).status_code == 200
    assert client.post("/v1/docs", json={"text": "# Refunds\n\nWithin 30 days.", "source": "refunds.md"},
                       headers=auth).status_code == 201
    yield p
    p.close()


def shape(value: Any) -> Any:
    """The keys and value types of a JSON answer (for writes, whose ids and times differ)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    return type(value).__name__


def same(answers: list[Any], path: str) -> None:
    direct, fastapi = answers
    assert direct.status_code == fastapi.status_code, (path, direct.text, fastapi.text)
    assert direct.headers.get("content-type") == fastapi.headers.get("content-type"), path
    assert direct.headers.get("www-authenticate") == fastapi.headers.get("www-authenticate"), path
    if path in READS or direct.status_code >= 400:
        assert direct.content == fastapi.content, path
    else:
        assert shape(direct.json()) == shape(fastapi.json()), path


def test_the_hot_routes_are_served_directly(pair: Pair) -> None:
    served = pair.direct.routes()
    assert {("POST", "/v1/memories/search"), ("POST", "/v1/memories"), ("POST", "/v1/episodes"),
            ("POST", "/v1/episodes/similar"), ("POST", "/v1/facts/lookup")} <= served
    # Routes with path or query parameters, or that read the request, stay with FastAPI.
    assert not any("{" in path for _, path in served)
    assert not {("GET", "/v1/memories"), ("GET", "/v1/whoami"), ("PUT", "/v1/facts/{key}")} & served
    before = pair.direct.served
    pair.both("POST", "/v1/memories/search", body={"query": "tea", "scope": "customer:1"})
    assert pair.direct.served == before + 1
    pair.both("POST", "/v1/memories/search", body={"query": "tea", "scope": "customer:1", "extra": 1})
    assert pair.direct.served == before + 1  # invalid: FastAPI answered it


def test_every_direct_route_is_documented_with_its_models(pair: Pair) -> None:
    documented = {(method, path): op for method, path, op in operations(_Client(pair.clients[0]))}
    for key in pair.direct.routes():
        op = documented[key]
        assert "requestBody" in op and any(code.startswith("2") for code in op["responses"]), key
    assert documented == {(m, p): o for m, p, o in operations(_Client(pair.clients[1]))}


BODY_VARIANTS: list[tuple[str, Any]] = [
    ("valid", None),  # the route's sample body
    ("extra field", {"__extra__": 1}),
    ("array", ["not", "an", "object"]),
    ("string", "text"),
    ("number", 3),
    ("empty object", {}),
    ("null", None),
]


@pytest.mark.parametrize(("name", "variant"), BODY_VARIANTS, ids=[n for n, _ in BODY_VARIANTS])
def test_direct_and_fastapi_answer_every_body_alike(pair: Pair, name: str, variant: Any) -> None:
    ops = {(m, p): op for m, p, op in operations(_Client(pair.clients[1]))}
    before, checked, answered = pair.direct.served, 0, 0
    for method, path in sorted(pair.direct.routes()):
        sample = sample_body(_Client(pair.clients[1]), ops[(method, path)])
        body = sample if name == "valid" else {**sample, **variant} if name == "extra field" else variant
        raw = b"null" if name == "null" else None
        answers = pair.both(method, path, body=body, raw=raw, headers={"Content-Type": "application/json"})
        same(answers, path)
        checked += 1
        answered += answers[0].status_code < 300
    assert checked >= 10 and answered >= (10 if name == "valid" else 0)
    assert pair.direct.served - before == answered  # the refused ones went to FastAPI


@pytest.mark.parametrize(("raw", "content_type"), [
    (b'{"query": "tea"', "application/json"),  # invalid JSON
    (b'\xff\xfe{"query"', "application/json"),  # not UTF-8
    (b"", "application/json"),  # no body
    (b'{"query": "tea"}', None),  # no media type
    (b'{"query": "tea"}', "text/plain"),
    (b'{"query": "tea"}', "application/json; charset=utf-8"),
    (b'{"query": "tea"}', "Application/JSON"),
    (b'{"query": "tea"}', "application/problem+json"),
    (b'{"query": "tea", "k": "5"}', "application/json"),  # strict types
    (b'{"query": "tea", "k": 0}', "application/json"),
    (b'{"query": "tea", "where": {"$bogus": 1}}', "application/json"),  # refused by the library
    (b'{"query": "tea", "scope": "customer:1", "k": 2, "kinds": ["note"], "min_score": 0.0}', "application/json"),
    (b'{"query": "tea", "as_of": "2020-01-01T00:00:00Z"}', "application/json"),
    (b'{"query": NaN}', "application/json"),
])
def test_direct_and_fastapi_answer_every_encoding_alike(pair: Pair, raw: bytes, content_type: str | None) -> None:
    same(pair.both("POST", "/v1/memories/search", raw=raw, headers={"Content-Type": content_type or ""}),
         "/v1/memories/search")


@pytest.mark.parametrize("authorization", [None, "Bearer", "Bearer nonsense", "Basic dXNlcjpwYXNz",
                                           "Bearer ffk_000000000000_wrongsecret"])
@pytest.mark.parametrize("body", [{"query": "tea"}, {"query": 5}])
def test_direct_and_fastapi_refuse_the_same_keys(pair: Pair, authorization: str | None, body: Any) -> None:
    for client in pair.clients:
        client.headers.pop("Authorization", None)
    headers = {"Authorization": authorization} if authorization else {}
    answers = [c.post("/v1/memories/search", json=body, headers=headers) for c in pair.clients]
    assert answers[0].status_code == 401
    same(answers, "/v1/memories/search")


def test_a_write_through_either_app_is_read_by_the_other(pair: Pair) -> None:
    auth = {"Authorization": f"Bearer {pair.key}"}
    direct, fastapi = pair.clients
    made = direct.post("/v1/memories", json={"text": "allergic to peanuts", "scope": "customer:2"}, headers=auth)
    assert made.status_code == 201 and made.json()["created"] is True
    again = fastapi.post("/v1/memories", json={"text": "allergic to peanuts", "scope": "customer:2"}, headers=auth)
    assert again.json()["id"] == made.json()["id"] and again.json()["created"] is False
    found = [c.post("/v1/memories/search", json={"query": "peanuts", "scope": "customer:2"}, headers=auth).json()
             for c in pair.clients]
    assert found[0] == found[1] and found[0]["results"][0]["id"] == made.json()["id"]


def test_a_request_with_dependency_overrides_is_left_to_fastapi(pair: Pair) -> None:
    before = pair.direct.served
    pair.apps[0].dependency_overrides[object] = object  # any override: FastAPI must resolve them
    try:
        answer = pair.both("POST", "/v1/memories/search", body={"query": "tea", "scope": "customer:1"})
    finally:
        pair.apps[0].dependency_overrides.clear()
    same(answer, "/v1/memories/search")
    assert pair.direct.served == before
    assert json.loads(answer[0].content)["results"]


class _Client:
    """What `operations` and `sample_body` need of a `Service`."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
