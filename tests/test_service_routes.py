"""Every route of the service, found in the app itself: a key is required, and one tenant's ids
are not found (404, never 403) for another. A route added later is checked without a new test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Mount

from test_service import Service, error

#: Routes that answer without a key: the health check and the API's own description.
PUBLIC = {"/healthz", "/openapi.json", "/docs", "/docs/assets"}
#: Routes that take a name in the caller's own namespace (a fact key, a scope), not an id:
#: another tenant's name is simply one the caller has nothing under. They answer (an empty
#: history, nothing deleted), but never touch or show the owner's data.
OWN_NAMESPACE = {("PUT", "/v1/facts/{key}"), ("DELETE", "/v1/facts/{key}"), ("GET", "/v1/facts/{key}/history"),
                 ("DELETE", "/v1/scopes/{scope}"), ("GET", "/v1/conversations/{scope}")}
SECRET = "Alpha keeps the vault code beside the kettle"


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    service = Service(tmp_path)
    yield service
    service.close()


def operations(svc: Service) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path template, OpenAPI operation) of every documented route."""
    spec = svc.client.get("/openapi.json").json()
    return [(method.upper(), path, op) for path, ops in spec["paths"].items() for method, op in ops.items()]


def sample_body(svc: Service, op: dict[str, Any]) -> Any:
    """A valid request body: each required field with a value of its type."""
    content = op.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        return None
    schemas = svc.client.get("/openapi.json").json()["components"]["schemas"]
    schema = schemas[content["schema"]["$ref"].rsplit("/", 1)[1]]
    body: dict[str, Any] = {}
    for name in schema.get("required", []):
        prop = schema["properties"][name]
        kind = prop.get("type") or next((o.get("type") for o in prop.get("anyOf", ()) if o.get("type") != "null"), "")
        body[name] = {"string": "probe text", "integer": 1, "number": 1.0, "boolean": True, "array": [],
                      "object": {}}.get(kind, "probe text")
    return body


def test_every_route_is_found_by_the_check(svc: Service) -> None:
    documented = {path for _, path, _ in operations(svc)}
    assert len(documented) >= 20 and "/v1/memories/{memory_id}/versions" in documented
    for route in svc.app.routes:  # what the schema does not describe must be public or checked below
        path = getattr(route, "path", None)
        assert path is None or path in PUBLIC or path in documented or path == "/mcp" or isinstance(route, Mount), path


def test_every_route_but_the_public_ones_needs_a_key(svc: Service) -> None:
    svc.key("acme")
    checked = 0
    for method, path, op in operations(svc):
        if path in PUBLIC:
            continue
        url = path.format(**{p["name"]: "x" for p in op.get("parameters", []) if p["in"] == "path"})
        for headers in ({}, {"Authorization": "Bearer ffk_000000000000_wrongsecret"}):
            # The key is checked before the input: an invalid body gets 401 too, never 422.
            for body in (sample_body(svc, op), ["not", "an", "object"]):
                r = svc.client.request(method, url, json=body, headers=headers)
                assert error(r) == (401, "unauthorized"), (method, path, body, r.status_code)
        checked += 1
    for method in ("GET", "POST", "DELETE"):
        assert svc.client.request(method, "/mcp").status_code == 401
    assert checked == len([o for o in operations(svc) if o[1] not in PUBLIC]) >= 30


def _owned(svc: Service) -> dict[str, str]:
    """What tenant alpha stores, by the path parameter that names it."""
    memory = svc.call("alpha", "POST", "/v1/memories", {"text": SECRET, "scope": "customer:a"}).json()
    episode = svc.call("alpha", "POST", "/v1/episodes", {"goal": SECRET, "actions": [], "outcome": "done",
                                                          "success": True, "scope": "customer:a"}).json()
    assert svc.call("alpha", "PUT", "/v1/facts/vault_code", {"value": SECRET}).status_code == 200
    assert svc.call("alpha", "POST", "/v1/docs", {"text": f"# Vault\n\n{SECRET}.", "source": "vault.md"}).status_code == 201
    return {"memory_id": memory["id"], "episode_id": episode["id"], "key": "vault_code", "source": "vault.md",
            "scope": "customer:a", "case_id": episode["id"]}


def _alpha_view(svc: Service, ids: dict[str, str]) -> list[Any]:
    return [svc.call("alpha", "GET", f"/v1/memories/{ids['memory_id']}").json(),
            svc.call("alpha", "GET", f"/v1/episodes/{ids['episode_id']}").json(),
            svc.call("alpha", "GET", "/v1/facts/vault_code").json(),
            svc.call("alpha", "GET", "/v1/docs/sources").json()]


def test_another_tenant_s_ids_are_not_found_on_every_route_that_takes_one(svc: Service) -> None:
    ids = _owned(svc)
    before = _alpha_view(svc, ids)
    svc.key("beta")
    checked = []
    for method, path, op in operations(svc):
        names = [p["name"] for p in op.get("parameters", []) if p["in"] == "path"]
        if not names:
            continue
        missing = set(names) - set(ids)
        assert not missing, f"{method} {path} takes {missing}: say here what of alpha's it names"
        r = svc.call("beta", method, path.format(**{n: ids[n] for n in names}), sample_body(svc, op))
        if (method, path) in OWN_NAMESPACE:
            assert r.status_code < 300, (method, path, r.status_code)
        else:
            assert error(r) == (404, "not_found"), (method, path, r.status_code)
        assert "vault code" not in r.text.lower(), (method, path)
        checked.append((method, path))
    assert len(checked) >= 10 and OWN_NAMESPACE <= set(checked)
    assert _alpha_view(svc, ids) == before
