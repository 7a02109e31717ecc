"""Keys have roles: an agent's key reads and writes its customers' memories and runs turns; an
operator's also sets facts and documents and reviews shared cases; an admin's also manages the
tenant's keys. The keys of before keep what they could do (operator)."""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fourfold.service.auth import ROLE_FIELD
from fourfold.service.keys import KeyStore
from fourfold.service.testing import cli_command
from test_service import Service, error

#: What only an operator's key (or an admin's) may do: what every customer's agent reads.
OPERATOR_ONLY = [
    ("PUT", "/v1/facts/refund_window_days", {"value": 30}),
    ("DELETE", "/v1/facts/refund_window_days", None),
    ("PUT", "/v1/facts/tool-description", {"description": "Look up policies."}),
    ("POST", "/v1/docs", {"text": "Refunds take five days.", "source": "refunds.md"}),
    ("DELETE", "/v1/docs/sources/refunds.md", None),
    ("GET", "/v1/cases", None),
]
#: An agent's day: its customers' memories, episodes, turns and the desk's reference data.
AGENT_MAY = [
    ("POST", "/v1/memories", {"text": "Prefers email", "scope": "customer:ann"}),
    ("POST", "/v1/memories/search", {"query": "contact", "scope": "customer:ann"}),
    ("POST", "/v1/episodes", {"goal": "parcel lost", "actions": [], "outcome": "resent", "success": True,
                              "scope": "customer:ann"}),
    ("GET", "/v1/facts", None),
    ("POST", "/v1/facts/lookup", {"key": "refund_window_days"}),
    ("POST", "/v1/docs/search", {"query": "refund"}),
    ("POST", "/v1/agent/turn", {"customer_id": "ann", "message": "My parcel never arrived."}),
    ("POST", "/v1/cases/similar", {"situation": "lost parcel"}),
    ("DELETE", "/v1/scopes/customer:ann", None),
]


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    from fourfold.models import OfflineModel

    service = Service(tmp_path, model=OfflineModel(), mount_mcp=False)
    yield service
    service.close()


def _as(svc: Service, key: str, method: str, path: str, body: object = None) -> Any:
    return svc.client.request(method, path, json=body, headers={"Authorization": f"Bearer {key}"})


def test_an_agent_key_runs_the_desk_but_does_not_change_what_every_agent_reads(svc: Service) -> None:
    agent = svc.keys.create("acme")[1]  # the default role
    for method, path, body in AGENT_MAY:
        r = _as(svc, agent, method, path, body)
        assert r.status_code < 300, (method, path, r.status_code, r.text[:200])
    for method, path, body in OPERATOR_ONLY:
        r = _as(svc, agent, method, path, body)
        assert error(r) == (403, "forbidden"), (method, path)
        assert "operator" in r.json()["error"]["message"]


def test_an_operator_key_sets_facts_and_documents_but_not_keys(svc: Service) -> None:
    operator = svc.keys.create("acme", role="operator")[1]
    for method, path, body in OPERATOR_ONLY[:5]:
        r = _as(svc, operator, method, path, body)
        assert r.status_code < 300, (method, path, r.status_code)
    assert error(_as(svc, operator, "GET", "/v1/keys")) == (403, "forbidden")
    assert error(_as(svc, operator, "POST", "/v1/keys", {"role": "admin"})) == (403, "forbidden")


def test_an_admin_key_manages_its_own_tenants_keys_only(svc: Service) -> None:
    admin = svc.keys.create("acme", role="admin")[1]
    other = svc.keys.create("globex")[0]
    made = _as(svc, admin, "POST", "/v1/keys", {"label": "desk 2", "role": "agent"}).json()
    assert made["key"]["tenant"] == "acme" and made["key"]["role"] == "agent"
    new = made["secret"]
    assert _as(svc, new, "GET", "/v1/whoami").json()["tenant"] == "acme"
    listed = _as(svc, admin, "GET", "/v1/keys").json()["keys"]
    assert {k["tenant"] for k in listed} == {"acme"} and len(listed) == 2
    assert error(_as(svc, admin, "DELETE", f"/v1/keys/{other.id}")) == (404, "not_found")
    assert svc.keys.list(tenant="globex")[0].active
    assert _as(svc, admin, "DELETE", f"/v1/keys/{made['key']['id']}").json()["revoked_at"]
    assert error(_as(svc, new, "GET", "/v1/whoami")) == (401, "unauthorized")
    assert error(_as(svc, admin, "POST", "/v1/keys", {"role": "root"}))[0] == 422


def test_the_api_description_names_the_role_each_route_needs(svc: Service) -> None:
    spec = svc.client.get("/openapi.json").json()["paths"]
    roles = {(m.upper(), p): op.get(ROLE_FIELD, "agent") for p, ops in spec.items() for m, op in ops.items()}
    assert roles[("PUT", "/v1/facts/{key}")] == roles[("POST", "/v1/docs")] == "operator"
    assert roles[("POST", "/v1/cases/{case_id}/review")] == "operator"
    assert roles[("POST", "/v1/keys")] == roles[("DELETE", "/v1/keys/{key_id}")] == "admin"
    assert roles[("POST", "/v1/memories")] == roles[("POST", "/v1/agent/turn")] == "agent"


def test_keys_made_before_roles_keep_what_they_could_do(tmp_path: Path) -> None:
    """A key table without roles (written by an earlier fourfold) reads as operators' keys."""
    path = tmp_path / "fourfold.sqlite3"
    keys = KeyStore(path)
    _, secret = keys.create("acme")
    keys.close()
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE keys DROP COLUMN role")
    keys = KeyStore(path)
    try:
        assert keys.identify(secret) == ("acme", "operator")
        assert keys.list()[0].role == "operator"
    finally:
        keys.close()


def test_the_cli_makes_keys_of_a_role(tmp_path: Path) -> None:
    where = ["--data-dir", str(tmp_path / "data")]
    made = subprocess.run(cli_command(*where, "keys", "create", "--tenant", "acme", "--role", "operator"),
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0
    listed = subprocess.run(cli_command(*where, "keys", "list"), capture_output=True, text=True, timeout=120)
    assert " operator " in listed.stdout
    bad = subprocess.run(cli_command(*where, "keys", "create", "--tenant", "acme", "--role", "root"),
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "role" in bad.stderr
