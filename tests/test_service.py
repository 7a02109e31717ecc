"""The HTTP service: keys, tenant isolation, every route's answers and errors (in-process)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import OpenMemory
from fourfold.embeddings import HashEmbedder
from fourfold.models import ScriptedModel
from fourfold.models.base import ChatResponse, ToolCall
from fourfold.semantic.facts import UNKNOWN
from fourfold.service.app import create_app
from fourfold.service.keys import KeyStore, Role
from fourfold.service.tenancy import Tenants
from fourfold.stores import InMemoryVectorStore

EMBEDDER = HashEmbedder()


def in_memory(_tenant: str) -> InMemoryVectorStore:
    return InMemoryVectorStore(embedder_identity=EMBEDDER.identity)


class Service:
    """An app over a temp data dir, with a helper to make keys and call as a tenant."""

    def __init__(self, data_dir: Path, *, chroma: bool = False, **app_kwargs: Any) -> None:
        self.tenants = Tenants(data_dir, embedder=EMBEDDER, vector_store=None if chroma else in_memory)
        self.keys = KeyStore(data_dir / "fourfold.sqlite3")
        self.app = create_app(self.tenants, self.keys, **app_kwargs)
        self.client = TestClient(self.app, raise_server_exceptions=False)
        self._by_tenant: dict[str, str] = {}

    def key(self, tenant: str, *, role: Role = "operator") -> str:
        """The key `call` uses for `tenant`, made on first use with `role` (by default an
        operator's: one that may do what every route but key management does)."""
        if tenant not in self._by_tenant:
            self._by_tenant[tenant] = self.keys.create(tenant, role=role)[1]
        return self._by_tenant[tenant]

    def as_(self, tenant: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key(tenant)}"}

    def call(self, tenant: str, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        return self.client.request(method, path, json=body, headers=self.as_(tenant), **kw)

    def close(self) -> None:
        self.client.close()
        self.tenants.close()
        self.keys.close()


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    service = Service(tmp_path)
    yield service
    service.close()


def error(response: Any) -> tuple[int, str]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert "\n" not in body["error"]["message"] and "Traceback" not in body["error"]["message"]
    return response.status_code, body["error"]["code"]


# -- authentication --------------------------------------------------------------------


def test_healthz_needs_no_key_and_openapi_is_served(svc: Service) -> None:
    assert svc.client.get("/healthz").json() == {"status": "ok"}
    paths = svc.client.get("/openapi.json").json()["paths"]
    assert {"/v1/memories", "/v1/memories/search", "/v1/episodes/similar", "/v1/facts/{key}",
            "/v1/docs/search", "/v1/agent/turn"} <= set(paths)


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer nonsense", "Basic dXNlcjpwYXNz",
                                    "Bearer ffk_000000000000_wrongsecret"])
def test_missing_or_unknown_key_is_401(svc: Service, header: str | None) -> None:
    svc.key("acme")
    headers = {"Authorization": header} if header is not None else {}
    r = svc.client.post("/v1/memories/search", json={"query": "x"}, headers=headers)
    assert error(r) == (401, "unauthorized")
    assert r.headers["www-authenticate"] == "Bearer"


def test_a_revoked_key_is_401_at_once_and_other_keys_keep_working(svc: Service) -> None:
    record, doomed = svc.keys.create("acme")
    kept = svc.key("acme")
    ok = {"query": "anything"}
    assert svc.client.post("/v1/memories/search", json=ok, headers={"Authorization": f"Bearer {doomed}"}).status_code == 200
    svc.keys.revoke(record.id)
    assert error(svc.client.post("/v1/memories/search", json=ok, headers={"Authorization": f"Bearer {doomed}"})) == (401, "unauthorized")
    assert svc.client.post("/v1/memories/search", json=ok, headers={"Authorization": f"Bearer {kept}"}).status_code == 200


def test_a_key_with_the_right_id_but_a_wrong_secret_is_401(svc: Service) -> None:
    key = svc.key("acme")
    forged = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    r = svc.client.get("/v1/whoami", headers={"Authorization": f"Bearer {forged}"})
    assert error(r) == (401, "unauthorized")


def test_keys_are_stored_hashed_never_in_clear(svc: Service, tmp_path: Path) -> None:
    key = svc.key("acme")
    svc.keys.close()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert key.split("_", 2)[2].encode() not in path.read_bytes(), path


def test_whoami_names_the_tenant_of_the_key(svc: Service) -> None:
    assert svc.call("acme", "GET", "/v1/whoami").json() == {"tenant": "acme", "auth": "key"}


def test_anonymous_access_only_on_loopback_and_only_until_a_key_exists(tmp_path: Path) -> None:
    service = Service(tmp_path, allow_anonymous=True)
    try:
        local = TestClient(service.app, base_url="http://127.0.0.1:8765")
        assert local.get("/v1/whoami").json() == {"tenant": "default", "auth": "anonymous"}
        # a DNS-rebinding page reaches 127.0.0.1 with its own host name: refused
        assert error(service.client.get("/v1/whoami", headers={"Host": "evil.example"})) == (401, "unauthorized")
        record, _ = service.keys.create("acme")
        service.keys.revoke(record.id)  # even with every key revoked, auth stays on
        assert error(local.get("/v1/whoami")) == (401, "unauthorized")
    finally:
        service.close()


def test_without_allow_anonymous_no_key_is_always_401(svc: Service) -> None:
    local = TestClient(svc.app, base_url="http://127.0.0.1:8765")
    assert error(local.get("/v1/whoami")) == (401, "unauthorized")


# -- tenant isolation ------------------------------------------------------------------

TENANTS = st.sampled_from(["acme", "beta", "c-3", "default"])
SCOPES = st.one_of(st.none(), st.sampled_from(["customer:1", "customer:2", "shared", "t:acme/x"]))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    writes=st.lists(st.tuples(TENANTS, SCOPES, st.integers(0, 5)), min_size=1, max_size=8),
    reader=TENANTS,
    scope=SCOPES,
)
def test_isolation_property(tmp_path_factory: pytest.TempPathFactory, writes: list[tuple[str, str | None, int]],
                            reader: str, scope: str | None) -> None:
    """Whatever any tenants write, a reader sees exactly its own tenant's writes of that scope."""
    service = Service(tmp_path_factory.mktemp("iso"))
    try:
        ids: dict[str, set[str]] = {}
        for tenant, wscope, n in writes:
            text = f"ticket number {n} about invoices for {wscope}"
            r = service.call(tenant, "POST", "/v1/memories", {"text": text, "scope": wscope})
            assert r.status_code == 201
            ids.setdefault(tenant, set()).add(r.json()["id"])
            service.call(tenant, "POST", "/v1/episodes", {"goal": f"invoice {n}", "actions": ["a"],
                                                          "outcome": "fixed invoice", "success": True, "scope": wscope})
            service.call(tenant, "PUT", f"/v1/facts/limit.{n}", {"value": n})
        expected = {
            f"ticket number {n} about invoices for {wscope}"
            for tenant, wscope, n in writes if tenant == reader and wscope == scope
        }
        got = service.call(reader, "POST", "/v1/memories/search",
                           {"query": "ticket invoices", "scope": scope, "k": 50}).json()["results"]
        assert {h["text"] for h in got} == expected
        assert all(h["scope"] == scope for h in got)
        episodes = service.call(reader, "GET", "/v1/episodes").json()["results"]
        assert len(episodes) == sum(1 for t, _, _ in writes if t == reader)
        facts = {f["key"] for f in service.call(reader, "GET", "/v1/facts").json()["facts"]}
        assert facts == {f"limit.{n}" for t, _, n in writes if t == reader}
        schema = service.call(reader, "GET", "/v1/facts/tool-schema").json()
        assert set(schema["input_schema"]["properties"]["key"].get("enum", [])) == facts
        for other, other_ids in ids.items():
            if other == reader:
                continue
            for mid in other_ids - ids.get(reader, set()):
                assert error(service.call(reader, "GET", f"/v1/memories/{mid}")) == (404, "not_found")
                assert error(service.call(reader, "DELETE", f"/v1/memories/{mid}")) == (404, "not_found")
    finally:
        service.close()


def test_another_tenants_data_is_404_never_403_and_stays_intact(svc: Service) -> None:
    mid = svc.call("acme", "POST", "/v1/memories", {"text": "Acme ships to Lyon", "scope": "c"}).json()["id"]
    ep = svc.call("acme", "POST", "/v1/episodes", {"goal": "g", "actions": [], "outcome": "o", "success": True}).json()["id"]
    svc.call("acme", "PUT", "/v1/facts/refund.days", {"value": 30})
    svc.call("acme", "POST", "/v1/docs", {"text": "# Refunds\nThirty days.", "source": "refunds.md"})
    for method, path in [("GET", f"/v1/memories/{mid}"), ("DELETE", f"/v1/memories/{mid}"),
                         ("GET", f"/v1/episodes/{ep}"), ("GET", "/v1/facts/refund.days"),
                         ("DELETE", "/v1/facts/refund.days"), ("DELETE", "/v1/docs/sources/refunds.md")]:
        assert error(svc.call("beta", method, path)) == (404, "not_found"), path
    assert svc.call("beta", "POST", "/v1/facts/lookup", {"key": "refund.days"}).json() == {"text": UNKNOWN}
    assert svc.call("beta", "DELETE", "/v1/scopes/c").json() == {"memories": 0, "episodes": 0, "cases": 0, "conversations": 0}
    assert svc.call("beta", "POST", "/v1/docs/search", {"query": "refunds"}).json() == {"results": []}
    # acme's data is untouched by everything beta tried
    assert svc.call("acme", "GET", f"/v1/memories/{mid}").json()["text"] == "Acme ships to Lyon"
    assert svc.call("acme", "GET", "/v1/facts/refund.days").json()["value"] == 30
    assert svc.call("acme", "GET", "/v1/docs/sources").json() == {"sources": ["refunds.md"]}


def test_same_scope_name_in_two_tenants_is_two_scopes_on_disk_too(tmp_path: Path) -> None:
    service = Service(tmp_path, chroma=True)
    try:
        for tenant in ("acme", "beta"):
            r = service.call(tenant, "POST", "/v1/memories", {"text": f"{tenant} prefers email", "scope": "customer:1"})
            assert r.json()["created"] is True
        same_text = [service.call(t, "POST", "/v1/memories", {"text": "prefers email", "scope": "customer:1"}).json()
                     for t in ("acme", "beta")]
        assert all(r["created"] for r in same_text)  # beta's write is not "already there" because of acme's
        for tenant in ("acme", "beta"):
            hits = service.call(tenant, "POST", "/v1/memories/search",
                                {"query": "prefers email", "scope": "customer:1", "k": 10}).json()["results"]
            assert sorted(h["text"] for h in hits) == sorted([f"{tenant} prefers email", "prefers email"])
        assert service.call("acme", "DELETE", "/v1/scopes/customer:1").json()["memories"] == 2
        assert len(service.call("beta", "GET", "/v1/memories", params={"scope": "customer:1"}).json()["results"]) == 2
    finally:
        service.close()


# -- routes ----------------------------------------------------------------------------


def test_memories_round_trip_with_redaction(svc: Service) -> None:
    r = svc.call("acme", "POST", "/v1/memories", {"text": "Staging password: hunter22 for the VPN", "scope": "ops",
                                                  "kind": "fact", "metadata": {"src": "t1"}})
    assert r.status_code == 201
    body = r.json()
    assert [x["kind"] for x in body["redacted"]] == ["password"] and "hunter22" not in body["text"]
    (hit,) = svc.call("acme", "POST", "/v1/memories/search", {"query": "VPN password", "scope": "ops"}).json()["results"]
    assert set(hit) == {"id", "text", "kind", "scope", "score", "metadata", "created_at", "key", "valid_from", "valid_to"}
    assert (hit["id"], hit["kind"], hit["scope"], hit["metadata"]) == (body["id"], "fact", "ops", {"src": "t1"})
    assert svc.call("acme", "DELETE", f"/v1/memories/{body['id']}").json() == {"deleted": body["id"]}
    assert error(svc.call("acme", "DELETE", f"/v1/memories/{body['id']}")) == (404, "not_found")


def test_batch_is_all_or_nothing(svc: Service) -> None:
    r = svc.call("acme", "POST", "/v1/memories/batch", {"items": [{"text": "a valid memory about invoices"}, {"text": ""}]})
    assert error(r) == (422, "invalid_input")
    assert svc.call("acme", "GET", "/v1/memories").json() == {"results": []}


def test_episodes_routes(svc: Service) -> None:
    ep = {"goal": "customer cannot log in", "actions": ["reset password"], "outcome": "logged in", "success": True,
          "scope": "c1", "tags": ["support"]}
    made = svc.call("acme", "POST", "/v1/episodes", ep)
    assert made.status_code == 201 and made.json()["scope"] == "c1"
    similar = svc.call("acme", "POST", "/v1/episodes/similar", {"situation": "cannot log in", "scope": "c1"}).json()
    assert [e["id"] for e in similar["results"]] == [made.json()["id"]]
    assert svc.call("acme", "POST", "/v1/episodes/similar", {"situation": "cannot log in", "scope": "c2"}).json() == {"results": []}
    assert svc.call("acme", "GET", f"/v1/episodes/{made.json()['id']}").json() == made.json()


def test_episodes_are_erased_one_by_one_by_scope_and_unscoped(svc: Service) -> None:
    def record(scope: str | None, goal: str) -> str:
        body = {"goal": goal, "actions": [], "outcome": "ok", "success": True, "scope": scope}
        return str(svc.call("acme", "POST", "/v1/episodes", body).json()["id"])

    one, _, _, kept = record("c1", "printer jam"), record("c1", "scanner jam"), record(None, "planted"), record("c2", "fax")
    assert svc.call("acme", "DELETE", f"/v1/episodes/{one}").json() == {"deleted": one}
    assert error(svc.call("acme", "DELETE", f"/v1/episodes/{one}")) == (404, "not_found")
    assert svc.call("acme", "DELETE", "/v1/episodes", params={"scope": "c1"}).json() == {"deleted": 1}
    assert svc.call("acme", "DELETE", "/v1/episodes", params={"unscoped": "true"}).json() == {"deleted": 1}
    assert [e["id"] for e in svc.call("acme", "GET", "/v1/episodes").json()["results"]] == [kept]
    assert error(svc.call("acme", "DELETE", "/v1/episodes")) == (422, "invalid_input")
    shared = {"goal": "g", "actions": [], "outcome": "o", "success": True, "scope": "shared:cases"}
    assert error(svc.call("acme", "POST", "/v1/episodes", shared)) == (422, "invalid_input")


def test_shared_cases_stay_in_their_tenant(tmp_path: Path) -> None:
    from fourfold.models import OfflineModel

    service = Service(tmp_path, model=OfflineModel())
    try:
        service.call("acme", "POST", "/v1/agent/turn", {"customer_id": "alice", "message": "Invoice PDF fails with error 502"})
        res = service.call("acme", "POST", "/v1/agent/resolve",
                           {"customer_id": "alice", "outcome": "Cleared the browser cache"}).json()  # a short outcome
        assert res["case"]["scope"] == "shared:cases"
        ask = {"customer_id": "bob", "message": "invoice PDF error 502"}
        same = service.call("acme", "POST", "/v1/agent/turn", ask).json()
        assert [c["id"] for c in same["report"]["cases"]] == [res["case"]["id"]] and "browser cache" in same["text"]
        other = service.call("beta", "POST", "/v1/agent/turn", ask).json()
        assert other["report"]["cases"] == [] and "browser cache" not in other["text"]
        counts = service.call("acme", "DELETE", "/v1/scopes/customer:alice").json()
        assert counts["cases"] == 1 and counts["episodes"] == 1
    finally:
        service.close()


def test_facts_routes(svc: Service) -> None:
    put = svc.call("acme", "PUT", "/v1/facts/refund.window_days", {"value": 30, "description": "days"})
    assert put.json()["value"] == 30
    svc.call("acme", "PUT", "/v1/facts/refund.window_days", {"value": 45})
    assert svc.call("acme", "GET", "/v1/facts/refund.window_days").json()["description"] == "days"
    assert [h["value"] for h in svc.call("acme", "GET", "/v1/facts/refund.window_days/history").json()["history"]] == [30]
    assert [f["key"] for f in svc.call("acme", "GET", "/v1/facts").json()["facts"]] == ["refund.window_days"]
    assert svc.call("acme", "POST", "/v1/facts/lookup", {"key": "refund.window_days"}).json() == {"text": "45"}
    for bad in ["nope", "bad key", 42, None, {"x": 1}]:
        assert svc.call("acme", "POST", "/v1/facts/lookup", {"key": bad}).json() == {"text": UNKNOWN}
    openai = svc.call("acme", "GET", "/v1/facts/tool-schema", params={"format": "openai"}).json()
    assert openai["function"]["parameters"]["properties"]["key"]["enum"] == ["refund.window_days"]
    told = {"description": "Values of the Acme returns desk."}
    assert svc.call("acme", "PUT", "/v1/facts/tool-description", told).json() == told
    assert svc.call("acme", "GET", "/v1/facts/tool-description").json() == told
    assert svc.call("acme", "GET", "/v1/facts/tool-schema").json()["description"] == told["description"]
    assert svc.call("beta", "GET", "/v1/facts/tool-description").json() != told  # per tenant
    assert [f["key"] for f in svc.call("acme", "GET", "/v1/facts").json()["facts"]] == ["refund.window_days"]
    assert svc.call("acme", "DELETE", "/v1/facts/refund.window_days").json() == {"deleted": "refund.window_days"}
    assert error(svc.call("acme", "GET", "/v1/facts/refund.window_days")) == (404, "not_found")


def test_memories_list_takes_a_where_filter(svc: Service) -> None:
    for n in range(4):
        svc.call("acme", "POST", "/v1/memories", {"text": f"Order {n} shipped", "scope": "c", "metadata": {"n": n}})
    where = json.dumps({"$or": [{"n": {"$lt": 1}}, {"n": {"$gte": 3}}]})
    found = svc.call("acme", "GET", "/v1/memories", params={"scope": "c", "where": where}).json()["results"]
    assert [r["metadata"]["n"] for r in found] == [0, 3]
    hits = svc.call("acme", "POST", "/v1/memories/search",
                    {"query": "order shipped", "scope": "c", "k": 5, "where": {"n": {"$in": [2]}}}).json()["results"]
    assert [h["metadata"]["n"] for h in hits] == [2]
    for bad in ['{"n": {"$regex": 1}}', "not json", "[1]"]:
        assert error(svc.call("acme", "GET", "/v1/memories", params={"scope": "c", "where": bad})) == (422, "invalid_input")
    assert error(svc.call("acme", "POST", "/v1/memories/search", {"query": "q", "where": {"$or": []}})) == (
        422, "invalid_input")


def test_docs_routes_never_read_server_files(svc: Service, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the launch code is 0000 and it is a secret")
    r = svc.call("acme", "POST", "/v1/docs", {"text": str(secret), "source": "s"})
    assert r.status_code == 201
    hits = svc.call("acme", "POST", "/v1/docs/search", {"query": "launch code secret", "k": 5}).json()["results"]
    assert all("launch code" not in h["text"] for h in hits)
    text = "# Refunds\n\nRefunds are accepted within thirty days of delivery, with the receipt."
    ids = svc.call("acme", "POST", "/v1/docs", {"text": text, "source": "refunds.md"}).json()["ids"]
    again = svc.call("acme", "POST", "/v1/docs", {"text": text, "source": "refunds.md"}).json()["ids"]
    assert ids == again
    (hit, *_) = svc.call("acme", "POST", "/v1/docs/search", {"query": "refund within days", "source": "refunds.md"}).json()["results"]
    assert hit["source"] == "refunds.md" and hit["heading"] == "Refunds"
    # documents never show up in memory recall
    assert svc.call("acme", "POST", "/v1/memories/search", {"query": "refunds thirty days"}).json() == {"results": []}


def test_agent_turn_and_resolve(tmp_path: Path) -> None:
    def respond(messages: Any, system: str, tools: Any) -> ChatResponse:
        last = messages[-1]["content"]
        if isinstance(last, str):
            return ChatResponse(text="", tool_calls=(ToolCall("t1", "lookup_policy", {"key": "refund.days"}),),
                                stop_reason="tool_use")
        return ChatResponse(text=f"The refund window is {last[0]['content']} days.")

    service = Service(tmp_path, model=ScriptedModel(respond, is_llm=False))
    try:
        service.call("acme", "PUT", "/v1/facts/refund.days", {"value": 30})
        turn = service.call("acme", "POST", "/v1/agent/turn", {"customer_id": "42", "message": "How long do I have to return my order?"})
        body = turn.json()
        assert body["text"] == "The refund window is 30 days."
        assert body["report"]["tool_uses"] == [{"name": "lookup_policy", "input": {"key": "refund.days"}, "result": "30"}]
        res = service.call("acme", "POST", "/v1/agent/resolve", {"customer_id": "42", "outcome": "explained the 30-day window"})
        assert res.json()["episode"]["scope"] == "customer:42"
        assert error(service.call("acme", "POST", "/v1/agent/resolve", {"customer_id": "42", "outcome": "again"})) == (422, "invalid_input")
        # beta has no conversation with customer 42
        assert error(service.call("beta", "POST", "/v1/agent/resolve", {"customer_id": "42", "outcome": "x"})) == (422, "invalid_input")
    finally:
        service.close()


# -- errors ----------------------------------------------------------------------------

BAD_REQUESTS: list[tuple[str, str, Any, int, str]] = [
    ("POST", "/v1/memories", {"text": ""}, 422, "invalid_input"),
    ("POST", "/v1/memories", {"text": 42}, 422, "invalid_input"),
    ("POST", "/v1/memories", {"text": "thanks!"}, 422, "invalid_input"),
    ("POST", "/v1/memories", {"text": "a fine memory", "kind": "Bad Kind"}, 422, "invalid_input"),
    ("POST", "/v1/memories", {"text": "a fine memory", "kind": "doc"}, 422, "invalid_input"),
    ("POST", "/v1/memories", {"text": "a fine memory", "scope": ""}, 422, "invalid_input"),
    ("POST", "/v1/memories", {"text": "a fine memory", "extra": 1}, 422, "invalid_input"),
    ("POST", "/v1/memories", {"text": "x" * 20_001}, 422, "invalid_input"),
    ("POST", "/v1/memories/batch", {"items": "no"}, 422, "invalid_input"),
    ("POST", "/v1/memories/search", {"query": "q", "k": 0}, 422, "invalid_input"),
    ("POST", "/v1/memories/search", {"query": "q", "k": "3"}, 422, "invalid_input"),
    ("POST", "/v1/memories/search", {"query": "q", "kinds": ["Bad Kind"]}, 422, "invalid_input"),
    ("POST", "/v1/memories/search", {}, 422, "invalid_input"),
    ("GET", "/v1/memories/mem_nope", None, 404, "not_found"),
    ("DELETE", "/v1/memories/mem_nope", None, 404, "not_found"),
    ("GET", "/v1/memories?scope=", None, 422, "invalid_input"),
    ("DELETE", "/v1/memories", None, 422, "invalid_input"),
    ("DELETE", "/v1/scopes/%20", None, 422, "invalid_input"),
    ("POST", "/v1/episodes", {"goal": "g", "actions": "not a list", "outcome": "o", "success": True}, 422, "invalid_input"),
    ("POST", "/v1/episodes", {"goal": "g", "actions": [], "outcome": "o", "success": "yes"}, 422, "invalid_input"),
    ("POST", "/v1/episodes", {"goal": " ", "actions": [], "outcome": "o", "success": True}, 422, "invalid_input"),
    ("POST", "/v1/episodes/batch", {"items": [{"goal": "g", "actions": [], "outcome": "", "success": True}]}, 422, "invalid_input"),
    ("POST", "/v1/episodes/similar", {"situation": "s", "k": 1001}, 422, "invalid_input"),
    ("GET", "/v1/episodes/nope", None, 404, "not_found"),
    ("GET", "/v1/facts/nope", None, 404, "not_found"),
    ("GET", "/v1/facts/bad key", None, 422, "invalid_input"),
    ("GET", "/v1/facts/a/b", None, 422, "invalid_input"),
    ("PUT", "/v1/facts/bad key", {"value": 1}, 422, "invalid_input"),
    ("PUT", "/v1/facts/k", {"value": 1, "description": 5}, 422, "invalid_input"),
    ("PUT", "/v1/facts/k", {}, 422, "invalid_input"),
    ("DELETE", "/v1/facts/nope", None, 404, "not_found"),
    ("GET", "/v1/facts/nope/history", None, 200, ""),
    ("GET", "/v1/facts/tool-schema?format=xml", None, 422, "invalid_input"),
    ("PUT", "/v1/facts/tool-description", {"description": " "}, 422, "invalid_input"),
    ("PUT", "/v1/facts/tool-description", {}, 422, "invalid_input"),
    ("POST", "/v1/docs", {"text": "some text"}, 422, "invalid_input"),
    ("POST", "/v1/docs", {"text": " ", "source": "s"}, 422, "invalid_input"),
    ("POST", "/v1/docs/search", {"query": "q", "k": -1}, 422, "invalid_input"),
    ("DELETE", "/v1/docs/sources/nope.md", None, 404, "not_found"),
    ("POST", "/v1/agent/turn", {"customer_id": "", "message": "hi"}, 422, "invalid_input"),
    ("POST", "/v1/agent/turn", {"customer_id": "1", "message": " "}, 422, "invalid_input"),
    ("POST", "/v1/agent/resolve", {"customer_id": "1", "outcome": "o"}, 422, "invalid_input"),
    ("GET", "/v1/nope", None, 404, "not_found"),
    ("PATCH", "/v1/memories", None, 405, "method_not_allowed"),
]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One service for the read-only error table (its requests change nothing)."""
    service = Service(tmp_path_factory.mktemp("errors"))
    yield service
    service.close()


@pytest.mark.parametrize(("method", "path", "body", "status", "code"), BAD_REQUESTS, ids=[f"{m} {p}" for m, p, *_ in BAD_REQUESTS])
def test_every_route_refuses_bad_input_with_a_stable_code(shared: Service, method: str, path: str, body: Any,
                                                           status: int, code: str) -> None:
    r = shared.call("acme", method, path, body)
    if status == 200:
        assert r.status_code == 200
        return
    assert error(r) == (status, code)


def test_metadata_and_facts_refuse_non_json_numbers_and_lone_surrogates(svc: Service) -> None:
    raw = '{"text": "a fine memory", "metadata": {"x": NaN}}'
    r = svc.client.post("/v1/memories", content=raw, headers={**svc.as_("acme"), "Content-Type": "application/json"})
    assert error(r) == (422, "invalid_input")
    raw = json.dumps({"text": "bad \ud800 surrogate in text"})
    r = svc.client.post("/v1/memories", content=raw, headers={**svc.as_("acme"), "Content-Type": "application/json"})
    assert error(r) == (422, "invalid_input")
    r = svc.client.put("/v1/facts/k", content='{"value": Infinity}', headers={**svc.as_("acme"), "Content-Type": "application/json"})
    assert error(r) == (422, "invalid_input")


def test_malformed_json_is_invalid_input(svc: Service) -> None:
    r = svc.client.post("/v1/memories", content=b"{not json", headers={**svc.as_("acme"), "Content-Type": "application/json"})
    assert error(r) == (422, "invalid_input")


def test_bodies_over_the_limit_are_413(tmp_path: Path) -> None:
    service = Service(tmp_path, max_body_bytes=1000)
    try:
        big = {"text": "word " * 400}
        assert error(service.call("acme", "POST", "/v1/memories", big)) == (413, "too_large")

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
            yield b'{"text": "'
            for _ in range(50):
                yield b"x" * 100
            yield b'"}'

        r = service.client.post("/v1/memories", content=chunks(), headers={**service.as_("acme"), "Content-Type": "application/json"})
        assert error(r) == (413, "too_large")
        assert service.call("acme", "POST", "/v1/memories", {"text": "small enough memory"}).status_code == 201
    finally:
        service.close()


def test_an_unexpected_crash_is_a_json_500_without_a_traceback(svc: Service) -> None:
    memory = svc.tenants.get("acme")

    def boom(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("secret internals /etc/shadow")

    memory.long_term.recall = boom  # type: ignore[method-assign]
    r = svc.call("acme", "POST", "/v1/memories/search", {"query": "q"})
    assert error(r) == (500, "internal")
    assert "secret internals" not in r.text


def test_concurrent_requests_lose_no_writes(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    service = Service(tmp_path, chroma=True)
    try:
        headers = service.as_("acme")

        def write(i: int) -> str:
            r = service.client.post("/v1/memories", json={"text": f"order {i} shipped to warehouse {i % 7}", "scope": f"c{i % 5}"},
                                    headers=headers)
            assert r.status_code == 201, r.text
            return str(r.json()["id"])

        with ThreadPoolExecutor(16) as pool:
            ids = list(pool.map(write, range(80)))
        for mid in ids:
            assert service.client.get(f"/v1/memories/{mid}", headers=headers).status_code == 200
        total = sum(len(service.client.get("/v1/memories", params={"scope": f"c{s}"}, headers=headers).json()["results"])
                    for s in range(5))
        assert total == 80
    finally:
        service.close()


def test_a_second_service_on_an_embedded_chroma_data_dir_is_refused(open_memory: OpenMemory, tmp_path: Path) -> None:
    from fourfold.errors import StoreUnavailable

    open_memory(tmp_path, embedder=EMBEDDER, store="chroma").close()
    first = Tenants(tmp_path, embedder=EMBEDDER)
    try:
        with pytest.raises(StoreUnavailable, match="already serving"):
            Tenants(tmp_path, embedder=EMBEDDER)
    finally:
        first.close()
    Tenants(tmp_path, embedder=EMBEDDER).close()  # released on close


def test_services_on_one_sqlite_data_dir_see_each_others_writes_and_forgets(tmp_path: Path) -> None:
    first, second = Tenants(tmp_path, embedder=EMBEDDER), Tenants(tmp_path, embedder=EMBEDDER)
    try:
        mine, theirs = first.get("acme"), second.get("acme")
        kept = mine.long_term.remember("Ships to the Lyon warehouse", scope="c1")
        gone = mine.long_term.remember("Invoices go to the Porto office", scope="c1")
        assert {r.id for r in theirs.long_term.recall("warehouse office", scope="c1", k=5)} == {kept, gone}
        theirs.long_term.forget(gone)
        theirs.facts.set("refund_window_days", 30)
        assert [r.id for r in mine.long_term.recall("warehouse office", scope="c1", k=5)] == [kept]
        assert mine.facts.lookup("refund_window_days") == "30"
    finally:
        first.close()
        second.close()


# -- the key store ---------------------------------------------------------------------


def test_key_store_create_list_revoke(database_target: Path | str) -> None:
    from fourfold.errors import InvalidInput, NotFound

    keys = KeyStore(database_target)
    assert not keys.has_keys()
    record, secret = keys.create("acme", label="ci")
    assert secret.startswith("ffk_") and keys.authenticate(secret) == "acme"
    assert [(k.id, k.tenant, k.label, k.active) for k in keys.list()] == [(record.id, "acme", "ci", True)]
    assert keys.revoke(secret).revoked_at is not None  # by the key itself works too
    assert keys.authenticate(secret) is None and keys.has_keys()
    with pytest.raises(NotFound):
        keys.revoke("000000000000")
    for bad in ["", "Acme", "a b", "-x", "x" * 49, "t:acme"]:
        with pytest.raises(InvalidInput):
            keys.create(bad)
    # another process (the CLI) sees the same keys
    assert KeyStore(database_target).authenticate(keys.create("beta")[1]) == "beta"


def test_group_commit_answers_each_request_as_remember_would(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from fourfold.errors import InvalidInput
    from fourfold.service.batching import GroupCommit

    memory = Tenants(tmp_path, embedder=EMBEDDER, vector_store=in_memory).get("acme")
    writer = GroupCommit(memory.long_term)
    items = [{"text": f"order {i} shipped to the warehouse", "scope": "c"} for i in range(30)]
    items += [{"text": "order 3 shipped to the warehouse", "scope": "c"}, {"text": ""}, {"text": "ok"}]

    def one(item: dict[str, Any]) -> Any:
        try:
            return writer.remember(item)
        except InvalidInput as exc:
            return exc

    with ThreadPoolExecutor(12) as pool:
        results = list(pool.map(one, items))
    assert [type(r).__name__ for r in results[-2:]] == ["InvalidInput", "InvalidInput"]
    made = [r for r in results if not isinstance(r, Exception)]
    assert len({r.id for r in made}) == 30 and sum(r.created for r in made) == 30  # the repeat is not new
    assert len(memory.long_term.all(scope="c")) == 30


def _one_batch_behind_a_first_write(tmp_path: Path, fail: Any, n: int) -> tuple[list[Any], Any, Any]:
    """Write one note, and `n` more that queue behind it into one batch, through a `GroupCommit`
    whose long-term memory's k-th `remember_many` call is `fail(k, items)` (None: the real write).
    Returns each request's result or exception, the writer and the real long-term memory. The
    requests run on daemon threads joined with a timeout: a writer that never answers fails the
    test instead of hanging it."""
    import threading

    from fourfold.service.batching import GroupCommit

    real = Tenants(tmp_path, embedder=EMBEDDER, vector_store=in_memory).get("acme").long_term
    started, release = threading.Event(), threading.Event()
    calls = [0]

    class Failing:
        def remember_many(self, items: list[Any]) -> Any:
            calls[0] += 1
            if calls[0] == 1:  # the first write waits until the others queued
                started.set()
                release.wait(10)
            fail(calls[0], items)
            return real.remember_many(items)

        def warm(self, scopes: Any) -> None:
            real.warm(scopes)

    writer = GroupCommit(Failing())  # type: ignore[arg-type]
    results: list[Any] = [None] * (n + 1)

    def one(i: int) -> None:
        try:
            results[i] = writer.remember({"text": f"note {i} about the parcel", "scope": "c"})
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n + 1)]
    threads[0].start()
    assert started.wait(10)
    for t in threads[1:]:
        t.start()
    deadline = time.monotonic() + 10
    while len(writer._queue) < n and time.monotonic() < deadline:  # they queue behind the first write
        time.sleep(0.01)
    release.set()
    for t in threads:
        t.join(20)
    assert not any(t.is_alive() for t in threads), "a request of the batch was never answered"
    return results, writer, real


def test_group_commit_gives_an_unexpected_failure_to_its_whole_batch_and_goes_on(tmp_path: Path) -> None:
    def fail(call: int, items: list[Any]) -> None:
        if call == 2:  # the batch of the five queued requests fails as a bug would
            raise RuntimeError(f"a bug in the write of {len(items)}")

    results, writer, real = _one_batch_behind_a_first_write(tmp_path, fail, 5)
    assert not isinstance(results[0], Exception)
    assert [str(r) for r in results[1:]] == ["a bug in the write of 5"] * 5  # each request of the batch got it
    assert writer.remember({"text": "after the failure", "scope": "c"}).created  # and the writer goes on
    assert len(real.all(scope="c")) == 2


def test_group_commit_keeps_the_answers_written_before_an_unexpected_failure(tmp_path: Path) -> None:
    """The batch's write is refused (a library error), so its requests are written one by one;
    a bug in the second leaves the first request's write answered as written."""
    from fourfold.errors import InvalidInput

    def fail(call: int, items: list[Any]) -> None:
        if call == 2:
            raise InvalidInput("refused as a batch")
        if call == 4:
            raise RuntimeError("a bug in the second write")

    results, _, real = _one_batch_behind_a_first_write(tmp_path, fail, 3)
    assert type(results[0]).__name__ == "Remembered"
    # the queued three were written in queue order: the first one is written, the others get the bug
    assert sorted(type(r).__name__ for r in results[1:]) == ["Remembered", "RuntimeError", "RuntimeError"]
    stored = {m.text for m in real.all(scope="c")}
    assert stored == {r.text for r in results if not isinstance(r, Exception)} and len(stored) == 2


def test_recorded_episodes_are_embedded_in_the_background(svc: Service) -> None:
    r = svc.call("acme", "POST", "/v1/episodes", {"goal": "refund a damaged parcel", "actions": ["checked photos"],
                                                 "outcome": "refunded", "success": True, "scope": "customer:1"})
    assert r.status_code == 201
    log = svc.tenants.get("acme").episodes
    deadline = time.monotonic() + 10
    while log.pending() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log.pending() == 0  # embedded by the service after it answered, not by this test
    r = svc.call("acme", "POST", "/v1/episodes/similar", {"situation": "damaged parcel", "scope": "customer:1"})
    assert [e["goal"] for e in r.json()["results"]] == ["refund a damaged parcel"]


def test_every_error_code_comes_back_as_its_own_class() -> None:
    """A client rebuilds the library's (and the service's) error class from its code; an
    unknown code, or the base class's, is a ServiceError."""
    import fourfold.errors as errors
    from fourfold.service.errors import STATUS, ServiceError, Unauthorized, error_for

    classes = [getattr(errors, name) for name in errors.__all__ if name != "FourfoldError"] + [Unauthorized, ServiceError]
    for cls in classes:
        rebuilt = error_for(cls.code, "why")
        assert (type(rebuilt), str(rebuilt)) == (cls, "why")
        assert cls.code in STATUS, cls
    assert type(error_for("error", "x")) is ServiceError
    assert type(error_for("no_such_code", "x")) is ServiceError


def test_fastapis_telemetry_is_off_unless_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no OpenTelemetry provider set up, FastAPI's per-request telemetry checks are off;
    FastAPI's own set-up from the environment keeps them as FastAPI decides."""
    pytest.importorskip("opentelemetry")
    from fourfold.service.app import _telemetry

    monkeypatch.delenv("FASTAPI_OTEL_AUTO_CONFIGURE", raising=False)
    assert _telemetry() == {"tracing": False, "metrics": False, "logs": False}
    monkeypatch.setenv("FASTAPI_OTEL_AUTO_CONFIGURE", "true")
    assert _telemetry() == {}
