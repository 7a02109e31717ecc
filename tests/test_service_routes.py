"""Every route of the service, found in the app itself: a key is required, and one tenant's ids
are not found (404, never 403) for another. A route added later is checked without a new test,
whether or not the API's schema describes it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from starlette.routing import BaseRoute, Mount

from test_service import Service, error

#: Routes that answer without a key: the health check, the API's own description, and the
#: inspector's page and its static files (the page asks for a key before it reads anything).
PUBLIC = {"/healthz", "/openapi.json", "/docs", "/docs/assets", "/ui", "/ui/", "/ui/{name}"}
#: The MCP endpoint: one path for every method, outside the schema; checked on its own below.
MCP = "/mcp"
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


def app_routes(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path template) of every route the app serves, in the app's order, inside
    included routers and mounts too (a mount that is one app, such as static files, is one
    route of method "*")."""
    found: dict[tuple[str, str], None] = {}

    def walk(routes: Iterable[BaseRoute], prefix: str) -> None:
        for route in routes:
            included = getattr(route, "original_router", None)  # FastAPI >= 0.16x keeps routers whole
            if included is not None:
                walk(included.routes, prefix + getattr(getattr(route, "include_context", None), "prefix", ""))
            elif isinstance(route, Mount) and route.routes:
                walk(route.routes, prefix + route.path)
            else:
                path = prefix + re.sub(r"\{(\w+):\w+\}", r"{\1}", getattr(route, "path", ""))
                for method in sorted(getattr(route, "methods", None) or {"*"}):
                    if method != "HEAD":  # Starlette adds it to every GET
                        found[method, path] = None

    walk(app.routes, "")
    return list(found)


def operations(svc: Service) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path template, its OpenAPI operation or {}) of every route the app serves but
    the public ones and MCP: what the schema does not describe is checked all the same."""
    spec = svc.client.get("/openapi.json").json()["paths"]
    return [(method, path, spec.get(path, {}).get(method.lower(), {}))
            for method, path in app_routes(svc.app) if path not in PUBLIC and path != MCP]


def path_names(path: str) -> list[str]:
    return re.findall(r"\{(\w+)\}", path)


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


def test_the_walk_finds_every_route_the_schema_describes_and_names_every_other(svc: Service) -> None:
    """The walk cannot silently miss the routers (what it sees includes the whole schema), and
    what the schema does not describe is public by name, MCP, or checked like the rest."""
    spec = svc.client.get("/openapi.json").json()["paths"]
    documented = {(method.upper(), path) for path, ops in spec.items() for method in ops}
    served = set(app_routes(svc.app))
    assert len(documented) >= 40 and ("GET", "/v1/memories/{memory_id}/versions") in documented
    assert documented <= served
    assert {path for _, path in served - documented} == PUBLIC - {"/healthz"} | {MCP}


def test_every_route_but_the_public_ones_needs_a_key(svc: Service) -> None:
    svc.key("acme")
    checked = []
    for method, path, op in operations(svc):
        url = path.format(**{name: "x" for name in path_names(path)})
        for headers in ({}, {"Authorization": "Bearer ffk_000000000000_wrongsecret"}):
            # The key is checked before the input: an invalid body gets 401 too, never 422.
            for body in (sample_body(svc, op), ["not", "an", "object"]):
                r = svc.client.request(method, url, json=body, headers=headers)
                assert error(r) == (401, "unauthorized"), (method, path, body, r.status_code)
        checked.append((method, path))
    for method in ("GET", "POST", "DELETE"):
        assert svc.client.request(method, MCP).status_code == 401
    assert len(checked) >= 45 and ("POST", "/v1/cases/{case_id}/review") in checked


def _owned(svc: Service) -> dict[str, str]:
    """What tenant alpha stores, by the path parameter that names it."""
    memory = svc.call("alpha", "POST", "/v1/memories", {"text": SECRET, "scope": "customer:a"}).json()
    episode = svc.call("alpha", "POST", "/v1/episodes", {"goal": SECRET, "actions": [], "outcome": "done",
                                                          "success": True, "scope": "customer:a"}).json()
    assert svc.call("alpha", "PUT", "/v1/facts/vault_code", {"value": SECRET}).status_code == 200
    assert svc.call("alpha", "POST", "/v1/docs", {"text": f"# Vault\n\n{SECRET}.", "source": "vault.md"}).status_code == 201
    return {"memory_id": memory["id"], "episode_id": episode["id"], "key": "vault_code", "source": "vault.md",
            "scope": "customer:a", "case_id": episode["id"], "key_id": svc.keys.list(tenant="alpha")[0].id}


def _alpha_view(svc: Service, ids: dict[str, str]) -> list[Any]:
    return [svc.call("alpha", "GET", f"/v1/memories/{ids['memory_id']}").json(),
            svc.call("alpha", "GET", f"/v1/episodes/{ids['episode_id']}").json(),
            svc.call("alpha", "GET", "/v1/facts/vault_code").json(),
            svc.call("alpha", "GET", "/v1/docs/sources").json()]


def test_another_tenant_s_ids_are_not_found_on_every_route_that_takes_one(svc: Service) -> None:
    ids = _owned(svc)
    before = _alpha_view(svc, ids)
    svc.key("beta", role="admin")  # every route open to it: what answers is the tenant's bound
    checked = []
    for method, path, op in operations(svc):
        names = path_names(path)
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
