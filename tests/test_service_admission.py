"""Admission: the key before the body, the body's shape before any parser, and no hostile
request answered with a 500 or a reset, on every route the app serves."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from fourfold.errors import StoreUnavailable
from fourfold.service.admission import MAX_JSON_DEPTH, json_depth
from fourfold.service.app import create_app
from fourfold.service.keys import KeyStore
from test_service import Service, error
from test_service_routes import operations, path_names, sample_body

DEEP = b"[" * 100_000 + b"]" * 100_000  # a parser recursing once per level gives up long before
#: Bodies no client of the API sends, each refused with a typed 4xx.
HOSTILE: dict[str, bytes] = {
    "100k-deep array": DEEP,
    "deep object": b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
    "just past the cap": b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1),
    "deep metadata": b'{"text": "x", "metadata": ' + b'{"k":' * 200 + b"1" + b"}" * 200 + b"}",
    "not UTF-8": b'{"text": "\xff\xfe\xfa"}',
    "lone surrogate": b'{"text": "\\ud800", "query": "\\udfff"}',
    "NUL bytes": b'{"text": "a\\u0000b", "source": "x\\u0000.md", "query": "\\u0000"}',
    "huge number": b'{"k": 1e999999, "text": "x", "query": "x"}',
    "long digits": b'{"k": ' + b"9" * 5_000 + b', "query": "x"}',
    "not JSON": b"{'text': 'x'",
    "a string": b'"just a string"',
    "null": b"null",
    "empty": b"",
}


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    service = Service(tmp_path)
    yield service
    service.close()


def _urls(svc: Service) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path.format(**{name: "x" for name in path_names(path)}), op)
            for method, path, op in operations(svc)]


def _appender(into: list[dict[str, Any]]) -> Any:
    async def send(message: dict[str, Any]) -> None:
        into.append(message)

    return send


def test_a_body_without_a_valid_key_is_never_read(svc: Service) -> None:
    """An unknown key (or none) is answered 401 from the headers alone: the app never asks
    the client for a byte of the body."""
    svc.key("acme")
    for headers in ([], [(b"authorization", b"Bearer ffk_000000000000_wrongsecret")]):
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            raise AssertionError("the body was read before the key was checked")

        scope = {"type": "http", "method": "POST", "path": "/v1/memories", "raw_path": b"/v1/memories",
                 "query_string": b"", "root_path": "", "scheme": "http", "server": ("127.0.0.1", 80),
                 "client": ("127.0.0.1", 5), "http_version": "1.1", "asgi": {"version": "3.0"},
                 "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                             (b"content-length", str(len(DEEP)).encode()), *headers]}
        asyncio.run(svc.app(scope, receive, _appender(sent)))
        assert sent[0]["status"] == 401


def test_hostile_bodies_get_a_typed_answer_on_every_route(svc: Service) -> None:
    """Each hostile body to every route: 401 without a key; with one, a typed 4xx or the route's
    own answer, never a 500 (a reset would raise here)."""
    svc.key("acme")
    for method, url, op in _urls(svc):
        for name, body in HOSTILE.items():
            headers = {"Content-Type": "application/json"}
            r = svc.client.request(method, url, content=body, headers=headers)
            assert error(r) == (401, "unauthorized"), (method, url, name, r.status_code)
            r = svc.client.request(method, url, content=body, headers={**headers, **svc.as_("acme")})
            assert r.status_code < 500, (method, url, name, r.status_code, r.text[:200])
            if r.status_code >= 400:
                error(r)  # {"error": {code, message}}, one line, no traceback
            if name in ("100k-deep array", "deep object", "just past the cap", "deep metadata"):
                assert error(r) == (422, "invalid_input"), (method, url, name)
        assert svc.client.request(method, url, json=sample_body(svc, op), headers=svc.as_("acme")).status_code < 500


def test_mcp_gets_the_same_admission(svc: Service) -> None:
    svc.key("acme")
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    assert error(svc.client.post("/mcp", content=DEEP, headers=headers)) == (401, "unauthorized")
    assert error(svc.client.post("/mcp", content=DEEP, headers={**headers, **svc.as_("acme")})) == (
        422, "invalid_input")


def test_nesting_at_the_cap_is_accepted(svc: Service) -> None:
    """A where filter nested within the cap reaches the library, which answers for itself."""
    where: Any = {"kind": "preference"}
    for _ in range(MAX_JSON_DEPTH // 2 - 4):
        where = {"$and": [where]}
    r = svc.call("acme", "POST", "/v1/memories/search", {"query": "contact", "where": where})
    assert r.status_code < 500
    if r.status_code != 200:
        assert error(r)[0] == 422


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=st.sampled_from('ab[]{}"\\ \n\u00e9')),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='k[]{}"\\'), inner, max_size=3),
    max_leaves=30,
)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_json_depth_is_the_nesting_of_the_value_whatever_its_strings_hold(value: Any) -> None:
    assert json_depth(json.dumps(value).encode()) == _depth(value)
    assert json_depth(json.dumps(value, ensure_ascii=False).encode()) == _depth(value)


class _KeysDown(KeyStore):
    """A key table whose database stopped answering (PostgreSQL down, say)."""

    def __init__(self) -> None:  # no database at all
        pass

    def identify(self, key: str) -> None:
        raise StoreUnavailable("the key table's database is down")

    def has_keys(self) -> bool:
        raise StoreUnavailable("the key table's database is down")


def test_a_key_table_that_is_down_is_a_503_not_a_reset(tmp_path: Path) -> None:
    """Admission reads the key table before the body: when that store is down the answer is the
    typed 503 a route would give, for a keyed and a keyless caller alike."""
    service = Service(tmp_path, allow_anonymous=True)
    try:
        app = create_app(service.tenants, _KeysDown(), allow_anonymous=True, mount_mcp=False)
        client = TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1")
        for headers in ({}, {"Authorization": "Bearer ffk_000000000000_secret"}):
            r = client.post("/v1/memories/search", json={"query": "q"}, headers=headers)
            assert error(r) == (503, "store_unavailable")
    finally:
        service.close()
