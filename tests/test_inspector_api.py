"""The web inspector's server side, in-process: the page's headers and assets, the browser guard
(Host, Origin, CSRF), the explain routes, the dry-run turn and the case review queue.

The page itself is tested in a real browser in test_inspector_browser.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from conftest import OpenMemory
from fourfold import Memory
from fourfold.agent import SupportAgent, customer_scope
from fourfold.agent.cases import CaseBase
from fourfold.agent.deidentify import Ticket
from fourfold.embeddings import HashEmbedder
from fourfold.episodic import PENDING_SCOPE, SHARED_SCOPE
from fourfold.errors import InvalidInput, NotFound
from fourfold.longterm.retrieval import ScopeIndex
from fourfold.models import OfflineModel, ScriptedModel
from fourfold.models.base import ChatResponse, ToolCall
from fourfold.service.app import create_app
from fourfold.service.explain import explain_docs, explain_recall, explain_similar
from fourfold.service.keys import KeyStore
from fourfold.service.tenancy import Tenants
from fourfold.service.ui import CSP
from fourfold.shortterm.compaction import summary_message
from fourfold.shortterm.threads import Thread
from fourfold.text import tokenize

EMBEDDER = HashEmbedder()
ORIGIN = "http://127.0.0.1:8765"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    tenants = Tenants(tmp_path, embedder=EMBEDDER)
    keys = KeyStore(tmp_path / "fourfold.sqlite3")
    app = create_app(tenants, keys, allow_anonymous=True, model=OfflineModel(), mount_mcp=False)
    with TestClient(app, base_url=ORIGIN, raise_server_exceptions=False) as c:
        c.keys = keys  # type: ignore[attr-defined]
        yield c
    tenants.close()
    keys.close()


# -- the page ------------------------------------------------------------------------------


def test_the_page_is_served_with_a_strict_content_security_policy(client: TestClient) -> None:
    page = client.get("/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"] == CSP
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP and "frame-ancestors 'none'" in CSP
    assert page.headers["x-content-type-options"] == "nosniff"
    script = client.get("/ui/js/main.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert client.get("/ui/js/../../app.py").status_code == 404
    assert client.get("/ui/nothing.js").status_code == 404


def _assets() -> dict[str, str]:
    root = resources.files("fourfold.service") / "ui_assets"
    out: dict[str, str] = {}

    def walk(folder, prefix: str) -> None:  # type: ignore[no-untyped-def]
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            else:
                out[prefix + entry.name] = entry.read_text()

    walk(root, "")
    return out


def test_no_asset_loads_anything_from_elsewhere_or_runs_inline_code() -> None:
    assets = _assets()
    assert {"index.html", "style.css", "js/main.js", "js/dom.js", "js/api.js"} <= set(assets)
    for name, text in assets.items():
        assert not re.search(r"https?://", text), name
        assert "innerHTML" not in text and "insertAdjacentHTML" not in text and "document.write" not in text, name
        assert "eval(" not in text and "new Function" not in text, name
    html = assets["index.html"]
    assert re.findall(r"<script[^>]*>", html) == ['<script type="module" src="/ui/js/main.js">']
    assert " style=" not in html and " on" not in re.sub(r"<noscript>.*?</noscript>", "", html, flags=re.S)


@pytest.mark.slow
def test_a_wheel_ships_every_asset(tmp_path: Path) -> None:
    """A wheel built from the project carries the page (package-data), so an install serves /ui,
    and the data files the library reads (the vendored secret rule file)."""
    tree = tmp_path / "project"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path / "out"), str(tree)], check=True, capture_output=True, timeout=240)
    (wheel,) = (tmp_path / "out").glob("fourfold-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.removeprefix("fourfold/service/ui_assets/") for n in names if n.startswith("fourfold/service/ui_assets/")}
    assert shipped == set(_assets())
    assert "fourfold/text/vendor/gitleaks.toml" in names


# -- the guard -----------------------------------------------------------------------------


def test_dns_rebinding_is_refused_by_host(client: TestClient) -> None:
    rebound = client.get("/ui", headers={"Host": "attacker.example:8765"})
    assert rebound.status_code == 403 and rebound.json()["error"]["code"] == "forbidden"
    # a browser's API request under a foreign name too, even when it is "same-origin" there
    same_origin_there = client.get("/v1/scopes", headers={"Host": "attacker.example:8765",
                                                          "Origin": "http://attacker.example:8765"})
    assert same_origin_there.status_code == 403
    assert client.get("/ui", headers={"Host": "localhost:8765"}).status_code == 200


@pytest.mark.parametrize(("allowed", "host", "status"), [
    (["127.0.0.1", "inspector.example"], "inspector.example:8765", 200),
    (["127.0.0.1", "inspector.example"], "other.example:8765", 403),
    (None, "any.example:8765", 200),  # a wildcard bind without --allow-host: keys guard it
])
def test_the_hosts_a_browser_may_use_are_configurable(tmp_path: Path, allowed: list[str] | None, host: str,
                                                      status: int) -> None:
    tenants = Tenants(tmp_path, embedder=EMBEDDER)
    keys = KeyStore(tmp_path / "fourfold.sqlite3")
    app = create_app(tenants, keys, mount_mcp=False, allowed_hosts=allowed)
    with TestClient(app, base_url=f"http://{host}") as c:
        assert c.get("/ui").status_code == status
        assert c.get("/v1/scopes", headers={"Origin": f"http://{host}"}).status_code == (401 if status == 200 else 403)
    tenants.close()
    keys.close()


@pytest.mark.parametrize("headers", [
    {"Origin": "http://attacker.example"},
    {"Origin": "http://localhost:8765"},  # another origin, though a loopback one
    {"Origin": "null"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
])
def test_cross_origin_writes_are_refused_and_write_nothing(client: TestClient, headers: dict[str, str]) -> None:
    body = {"text": "planted by another site", "scope": "customer:victim"}
    r = client.post("/v1/memories", json=body, headers={**headers, "X-Fourfold-Request": "ui"})
    assert r.status_code == 403
    assert client.get("/v1/scopes").json() == {"scopes": []}


def test_a_browsers_keyless_write_needs_the_custom_header_or_fetch_metadata(client: TestClient) -> None:
    body = {"text": "Prefers email", "scope": "customer:ann"}
    old_browser = {"Origin": ORIGIN}  # same origin, but no Sec-Fetch-Site to prove it twice
    refused = client.post("/v1/memories", json=body, headers=old_browser)
    assert refused.status_code == 403 and "x-fourfold-request" in refused.json()["error"]["message"]
    assert client.delete("/v1/scopes/customer:ann", headers=old_browser).status_code == 403
    assert client.post("/v1/memories", json=body, headers={**old_browser, "X-Fourfold-Request": "ui"}).status_code == 201
    # a modern browser's same-origin request (Swagger's "try it out") carries the proof itself
    same_origin = {"Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"}
    assert client.post("/v1/memories", json={**body, "text": "Likes mornings"}, headers=same_origin).status_code == 201
    # clients that are not browsers send no Origin: their requests are as before
    assert client.post("/v1/memories", json={**body, "text": "Ships to Lisbon"}).status_code == 201
    assert client.get("/v1/scopes").json()["scopes"][0]["memories"] == 3


def test_with_keys_the_page_sees_only_its_tenant(client: TestClient) -> None:
    keys: KeyStore = client.keys  # type: ignore[attr-defined]
    acme, globex = keys.create("acme", role="operator")[1], keys.create("globex")[1]
    ui = {"Origin": ORIGIN, "X-Fourfold-Request": "ui"}
    for key, scope in ((acme, "customer:acme-1"), (globex, "customer:globex-1")):
        client.post("/v1/memories", json={"text": "x", "scope": scope}, headers={**ui, "Authorization": f"Bearer {key}"})
    assert client.get("/v1/scopes", headers=ui).status_code == 401  # keys exist: anonymous is over
    seen = client.get("/v1/scopes", headers={**ui, "Authorization": f"Bearer {acme}"}).json()["scopes"]
    assert [s["scope"] for s in seen] == ["customer:acme-1"]
    other = client.get("/v1/memories", params={"scope": "customer:globex-1"}, headers={"Authorization": f"Bearer {acme}"})
    assert other.json() == {"results": []}


# -- the routes the page reads -------------------------------------------------------------


def test_scopes_count_memories_episodes_and_conversations(client: TestClient) -> None:
    client.post("/v1/memories", json={"text": "Prefers email", "scope": "customer:ann"})
    client.post("/v1/episodes", json={"goal": "refund", "actions": [], "outcome": "done", "success": True,
                                      "scope": "customer:ann"})
    client.post("/v1/agent/turn", json={"customer_id": "ann", "message": "Hello, my invoice fails"})
    assert client.get("/v1/scopes").json() == {"scopes": [
        {"scope": "customer:ann", "memories": 1, "old_versions": 0, "docs": 0, "episodes": 1, "conversations": 1}]}


def test_the_conversation_is_shown_as_last_sent_with_summaries_marked(client: TestClient) -> None:
    client.app.state.tenants.get("default").conversations.save(Thread("customer:ann", messages=(  # type: ignore[attr-defined]
        summary_message("The customer asked about refunds."),
        {"role": "assistant", "content": "Anything else?"},
        {"role": "user", "content": "Yes, <b>shipping</b>"},
    )))
    thread = client.get("/v1/conversations/customer:ann").json()
    assert [m["summary"] for m in thread["messages"]] == [True, False, False]
    assert thread["messages"][2]["content"] == "Yes, <b>shipping</b>"
    assert client.get("/v1/conversations/customer:nobody").json()["messages"] == []


def test_document_chunks_of_one_source_in_order(client: TestClient) -> None:
    text = "\n\n".join(f"Section {i}. " + "Refunds are accepted within thirty days. " * 12 for i in range(6))
    ingested = client.post("/v1/docs", json={"text": text, "source": "refunds.md"}).json()
    listed = client.get("/v1/docs/list").json()["sources"]
    assert [(d["source"], d["chunks"]) for d in listed] == [("refunds.md", ingested["chunks"])]
    chunks = client.get("/v1/docs/chunks", params={"source": "refunds.md"}).json()["results"]
    assert [c["metadata"]["position"] for c in chunks] == list(range(ingested["chunks"]))
    assert client.get("/v1/docs/chunks", params={"source": "missing.md"}).status_code == 404


# -- explain -------------------------------------------------------------------------------


def _seed(memory: Memory) -> None:
    lt = memory.long_term
    lt.remember("Prefers email in the morning", scope="customer:ann", kind="preference",
                metadata={"speaker": "Ann", "occurred_at": "2023-05-09", "thread": "t1"})
    lt.remember("Yes, every Sunday!", scope="customer:ann", metadata={"speaker": "Ann", "thread": "t1"})
    lt.remember("Ships to the Lisbon office", scope="customer:ann", kind="fact")
    lt.remember("Prefers phone calls", scope="customer:bob", kind="preference")


def test_explain_returns_recalls_results_and_parts_that_add_up_to_each_score(memory: Memory) -> None:
    _seed(memory)
    query = "does ann want email on sunday in may"
    recalled = memory.long_term.recall(query, scope="customer:ann", k=3)
    explained = explain_recall(memory.long_term, query, scope="customer:ann", k=3)
    assert [(e.id, e.score) for e in explained] == [(r.id, r.score) for r in recalled]
    for e in explained:
        assert e.recomputed == pytest.approx(e.score, abs=1e-6)
    boost = memory.long_term.weights.speaker  # the query names Ann: her memories are lifted, others not
    assert {e.text.split()[0]: e.speaker for e in explained} == {"Prefers": boost, "Yes,": boost, "Ships": 0.0}
    records, _ = memory.long_term.store.scan_versioned("customer:ann")
    best = ScopeIndex(records, EMBEDDER.dimension, weights=memory.long_term.weights).bm25.best_possible(tokenize(query))
    for e in explained:  # the words shown are the whole lexical part
        assert sum(w.points for w in e.words) / best == pytest.approx(e.lexical_share, abs=1e-9)
    email = next(e for e in explained if e.text.startswith("Prefers email"))
    sources = {w.word: w.source for w in email.words}
    assert sources["email"] == "text" and sources["may"] == "date"
    assert sources.get("sunday") == "context"  # its neighbour in thread t1 says "Sunday"
    assert email.date == "2023-05-09" and email.context != 0
    assert all(e.detail["scope"] == "customer:ann" for e in explained)  # never another scope's


def test_explain_of_documents_and_episodes(memory: Memory) -> None:
    memory.docs.ingest_text("Refunds are accepted within 30 days of purchase.", source="refunds.md")
    docs = explain_docs(memory, "refund within days", k=2)
    assert [e.id for e in docs] == [h.id for h in memory.docs.search("refund within days", k=2)]
    assert docs[0].recomputed == pytest.approx(docs[0].score, abs=1e-6) and docs[0].context == 0
    memory.episodes.record(goal="invoice PDF fails with 502", actions=["cleared cache"], outcome="fixed by clearing cache",
                           success=True, scope="customer:ann")
    memory.episodes.record(goal="login fails", actions=[], outcome="reset the password", success=True)
    situation = "invoice pdf 502"
    found = explain_similar(memory.episodes, situation, scope="customer:ann", k=3)
    assert [e.id for e in found] == [e.id for e in memory.episodes.similar_successes(situation, scope="customer:ann", k=3)]
    assert {w.word for w in found[0].words} >= {"pdf", "502"} and found[0].lexical > 0
    # the parts give the relevance the search returned (episodes' own calibration)
    assert all(e.recomputed == pytest.approx(e.score, abs=1e-6) for e in found)


def test_explain_routes_answer_in_the_callers_scope(client: TestClient) -> None:
    client.post("/v1/memories", json={"text": "Prefers email", "scope": "customer:ann"})
    out = client.post("/v1/memories/explain", json={"query": "email", "scope": "customer:ann"}).json()
    (only,) = out["results"]
    assert only["text"] == "Prefers email" and set(only) >= {"dense", "dense_own", "context", "lexical", "speaker", "words"}
    assert client.post("/v1/memories/explain", json={"query": "email", "scope": "customer:bob"}).json()["results"] == []
    assert client.post("/v1/episodes/explain", json={"query": "email"}).json() == {"results": []}
    assert client.post("/v1/docs/explain", json={"query": "email"}).json() == {"results": []}
    assert client.post("/v1/memories/explain", json={"query": 3}).status_code == 422


# -- the dry-run turn ----------------------------------------------------------------------


def _files(data_dir: Path) -> dict[str, bytes]:
    """Every stored byte of a data dir (the database and its log; not lock or shared-memory files)."""
    return {p.name: p.read_bytes() for p in sorted(data_dir.iterdir())
            if p.is_file() and not p.name.endswith(("-shm", ".lock"))}


def test_a_dry_run_turn_calls_the_model_and_tools_but_writes_nothing(memory: Memory) -> None:
    data = memory.data_dir
    memory.long_term.remember("Prefers email over phone", scope=customer_scope("ann"), kind="preference")
    memory.facts.set("refund_window_days", 30)
    memory.episodes.record(goal="refund asked", actions=[], outcome="refunded", success=True, scope="customer:ann")
    agent = SupportAgent(memory, ScriptedModel(["Hello!"] * 4))
    agent.turn("ann", "Hi there, about my refund by email")  # a real turn: the thread exists
    before, thread_before = _files(data), memory.conversations.load("customer:ann")
    model = ScriptedModel([
        ChatResponse("", (ToolCall("t1", "lookup_policy", {"key": "refund_window_days"}),), "tool_use"),
        "You have 30 days.",
    ])
    reply = SupportAgent(memory, model).turn("ann", "How long is the refund window? email me", dry_run=True)
    assert reply.text == "You have 30 days." and reply.report.dry_run
    assert [(t.name, t.result) for t in reply.report.tool_uses] == [("lookup_policy", "30")]
    assert "Prefers email over phone" in reply.report.system_prompt
    assert reply.report.sent == tuple(model.requests[0]["messages"])
    assert reply.report.sent[-1]["content"] == "How long is the refund window? email me"
    assert memory.conversations.load("customer:ann") == thread_before
    assert _files(data) == before  # not a byte of the database or its log changed


def test_the_replay_route_is_a_dry_run(client: TestClient) -> None:
    client.post("/v1/agent/turn", json={"customer_id": "ann", "message": "My invoice PDF fails"})
    thread = client.get("/v1/conversations/customer:ann").json()
    out = client.post("/v1/agent/replay", json={"customer_id": "ann", "message": "Still failing"}).json()
    assert out["dry_run"] is True and out["system_prompt"] and out["report"]["model_calls"] >= 1
    assert out["messages"][-1]["content"] == "Still failing"
    assert client.get("/v1/conversations/customer:ann").json() == thread
    assert client.post("/v1/agent/replay", json={"customer_id": "", "message": "x"}).status_code == 422


# -- the review queue of shared cases -------------------------------------------------------

TICKET = Ticket("The invoice PDF download fails with error 502", ("Downloading my invoice PDF fails with 502",),
                (), "The invoice PDF 502 error is fixed by clearing the browser cache")


def test_with_review_on_a_case_waits_and_no_customer_reads_it_until_approved(memory: Memory) -> None:
    agent = SupportAgent(memory, OfflineModel(), review_cases=True)
    agent.turn("alice", "Downloading my invoice PDF fails with error 502")
    case = agent.resolve("alice", "The invoice PDF 502 error is fixed by clearing the browser cache").case
    assert case is not None and case.scope == PENDING_SCOPE
    question = "The invoice PDF download gives me a 502 error"
    assert agent.turn("bob", question).report.cases == ()
    approved = agent.cases.approve(case.id)  # type: ignore[union-attr]
    assert approved.scope == SHARED_SCOPE and approved.id == case.id
    assert [c.id for c in agent.turn("carol", question).report.cases] == [case.id]
    assert agent.cases.pending() == []  # type: ignore[union-attr]
    agent.forget_customer("alice")  # the link to its customer survived the approval
    assert agent.cases.shared() == []  # type: ignore[union-attr]


def test_a_rejected_case_is_erased(memory: Memory) -> None:
    cases = CaseBase(memory, review=True)
    case = cases.add(TICKET, source_scope="customer:alice")
    assert case is not None and [c.id for c in cases.pending()] == [case.id]
    cases.reject(case.id)
    assert cases.pending() == [] and cases.shared() == []
    with pytest.raises(NotFound):
        cases.reject(case.id)
    with pytest.raises(NotFound):
        cases.approve(case.id)
    with pytest.raises(InvalidInput):
        memory.episodes.record(goal="planted", actions=[], outcome="x", success=True, scope=PENDING_SCOPE)


def test_the_review_routes(tmp_path: Path) -> None:
    tenants = Tenants(tmp_path, embedder=EMBEDDER)
    keys = KeyStore(tmp_path / "fourfold.sqlite3")
    app = create_app(tenants, keys, allow_anonymous=True, model=OfflineModel(), mount_mcp=False, review_cases=True)
    with TestClient(app, base_url=ORIGIN) as c:
        c.post("/v1/agent/turn", json={"customer_id": "alice", "message": "Downloading my invoice PDF fails with 502"})
        c.post("/v1/agent/resolve", json={"customer_id": "alice", "outcome": TICKET.outcome})
        listed = c.get("/v1/cases").json()
        assert listed["review"] is True and listed["shared"] == [] and len(listed["pending"]) == 1
        case_id = listed["pending"][0]["id"]
        assert c.post(f"/v1/cases/{case_id}/review", json={"approve": True}).json()["approved"]["id"] == case_id
        assert [x["id"] for x in c.get("/v1/cases").json()["shared"]] == [case_id]
        assert c.post(f"/v1/cases/{case_id}/review", json={"approve": False}).status_code == 404
    tenants.close()
    keys.close()


# -- `fourfold ui` -------------------------------------------------------------------------


def _cli(*args: str) -> list[str]:
    from fourfold.service.testing import cli_command

    return cli_command(*args)


def test_fourfold_ui_serves_on_loopback_and_opens_the_browser(open_memory: OpenMemory, tmp_path: Path) -> None:
    """`fourfold ui DATA_DIR` binds 127.0.0.1 and opens /ui with the user's browser ($BROWSER
    here: a script that records the address it was given)."""
    import time

    import httpx

    from fourfold.service.testing import free_port

    data = tmp_path / "data"
    with open_memory(data, embedder=EMBEDDER) as m:
        m.long_term.remember("Prefers email", scope="customer:ann")
    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.sh"
    recorder.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    recorder.chmod(0o755)
    port = free_port()
    env = {**os.environ, "BROWSER": str(recorder), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(_cli("--embedder", "hash", "--model", "offline", "ui", str(data), "--port", str(port)),
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not opened.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        address, _, secret = opened.read_text().strip().partition("#key=")
        assert address == f"http://127.0.0.1:{port}/ui" and len(secret) >= 20  # this run's secret
        page = httpx.get(f"http://127.0.0.1:{port}/ui")
        assert page.status_code == 200 and page.headers["content-security-policy"] == CSP
        assert httpx.get(f"http://127.0.0.1:{port}/v1/scopes").status_code == 401  # without it
        scopes = httpx.get(f"http://127.0.0.1:{port}/v1/scopes", headers={"Authorization": f"Bearer {secret}"})
        assert [s["scope"] for s in scopes.json()["scopes"]] == ["customer:ann"]
    finally:
        proc.terminate()
        proc.wait(15)
        if proc.stderr:
            proc.stderr.close()


def test_fourfold_ui_on_a_missing_data_dir_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "data"
    out = subprocess.run(_cli("--embedder", "hash", "ui", str(missing), "--no-browser"), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0 and "no fourfold data dir" in out.stderr
    assert not (tmp_path / "nope").exists()
