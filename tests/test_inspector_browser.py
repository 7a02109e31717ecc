"""The web inspector in a real browser: headless Chromium (Debian's) driven by Playwright against a
real `fourfold serve`. Each test clicks through a view, acts, and checks the store itself.

Screenshots go to $FOURFOLD_SCREENSHOTS when it is set (docs/img/ holds the README's), else to
a temp dir.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import OpenMemory
from fourfold import Memory
from fourfold.agent.cases import CaseBase
from fourfold.agent.deidentify import Ticket
from fourfold.embeddings import HashEmbedder
from fourfold.service.testing import LiveService
from fourfold.shortterm.compaction import summary_message
from fourfold.shortterm.threads import Thread

pytestmark = pytest.mark.slow

EMBEDDER = HashEmbedder()
ANN = "customer:ann-42"
HOSTILE_SCOPE = "customer:<img src=x onerror=\"document.title='pwned-scope'\">"
HOSTILE_TEXT = "Prefers email <script>document.title='pwned-memory'</script> in the morning"
TITLE = "fourfold inspector"


def _seed(data: Path) -> None:
    """The module's data dir, written once before its service starts (a module-scoped fixture
    cannot take the per-test `open_memory`)."""
    with Memory.open(data, embedder=EMBEDDER) as mem:
        lt = mem.long_term
        lt.remember("Prefers phone calls", scope=ANN, kind="preference", key="contact_channel",
                    metadata={"speaker": "Ann", "occurred_at": "2023-04-02"})
        lt.remember(HOSTILE_TEXT, scope=ANN, kind="preference", key="contact_channel",
                    metadata={"speaker": "Ann", "occurred_at": "2023-05-09", "thread": "t1", "note": "<b>bold</b>"})
        lt.remember("Yes, every Sunday works for a call", scope=ANN, metadata={"speaker": "Ann", "thread": "t1"})
        lt.remember("Ships to the Lisbon office, floor 3", scope=ANN, kind="fact")
        lt.remember("Has a premium plan since 2021", scope=ANN, kind="fact")
        lt.remember("Wants invoices in Portuguese", scope="customer:forget-me", kind="preference")
        lt.remember("Keeps nothing important", scope="customer:erase-me", kind="note")
        lt.remember("Prefers email", scope="customer:edit-me", kind="preference", key="contact_channel")
        lt.remember("Hostile scope's memory", scope=HOSTILE_SCOPE)
        lt.remember_many([{"text": f"Order {1000 + i} arrived", "scope": "customer:big"} for i in range(450)])
        mem.episodes.record(goal="Invoice PDF download fails with 502", actions=["lookup_policy(invoices)"],
                            outcome="Fixed by clearing the browser cache", success=True, scope=ANN)
        mem.episodes.record(goal="A ticket to delete", actions=[], outcome="closed", success=True,
                            scope="customer:episode-gone")
        mem.episodes.record(goal="Refund for a damaged parcel", actions=[], outcome="Refund refused: too late",
                            success=False, scope=ANN)
        mem.conversations.save(Thread(ANN, messages=(
            summary_message("Ann asked about invoices <i>twice</i>; the PDF failed."),
            {"role": "assistant", "content": "Shall I send it by email?"},
            {"role": "user", "content": "Yes please, email it <script>alert(1)</script>"},
        )))
        mem.facts.set("refund_window_days", 14, description="Days a customer has to ask for a refund")
        mem.facts.set("refund_window_days", 30, description="Days a customer has to ask for a refund")
        text = "\n\n".join(f"## Part {i}\n" + "Refunds are accepted within thirty days of purchase. " * 10
                           for i in range(4))
        mem.docs.ingest_text(text, source="policies/refunds.md")
        CaseBase(mem, review=True).add(Ticket(
            "The invoice PDF download fails with error 502", ("My invoice PDF fails with 502",), (),
            "The invoice PDF 502 error is fixed by clearing the browser cache"), source_scope=ANN)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("inspector") / "data"
    _seed(data)
    return data


@pytest.fixture(scope="module")
def live(data_dir: Path) -> Iterator[LiveService]:
    with LiveService(data_dir, serve_args=["--model", "offline", "--review-cases"]) as service:
        yield service


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("FOURFOLD_SCREENSHOTS")
    folder = Path(where) if where else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Page:
    """A page on the inspector that records script errors and CSP violations (tests assert none)."""

    def __init__(self, browser: Any, base: str) -> None:
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        self.page = self.context.new_page()
        self.base = base
        self.problems: list[str] = []
        self.page.on("pageerror", lambda e: self.problems.append(f"error: {e}"))
        self.page.on("console", lambda m: self.problems.append(m.text) if "Content Security Policy" in m.text else None)

    def open(self, route: str = "") -> Any:
        self.page.goto(f"{self.base}/ui{route}")
        self.ready()
        return self.page

    def ready(self) -> None:
        self.page.wait_for_selector("main[data-ready='1']")

    def go(self, route: str) -> None:
        """Navigate inside the page (a hash change) and wait until the view has rendered."""
        self.page.evaluate("document.querySelector('main').dataset.ready = '0'")
        self.page.evaluate(f"location.hash = {route!r}")
        self.ready()


@pytest.fixture
def ui(browser: Any, live: LiveService) -> Iterator[Page]:
    page = Page(browser, live.url)
    yield page
    page.context.close()
    assert page.problems == []


def _store(data_dir: Path) -> Memory:
    """A reader's own handle on the module's data dir while its service runs, opened and closed
    around each check: what the page wrote, read back as another process would."""
    return Memory.open(data_dir, embedder=EMBEDDER, create=False)


def _memories(data_dir: Path, scope: str) -> list[str]:
    with _store(data_dir) as mem:
        return [m.text for m in mem.long_term.all(scope=scope)]


# -- the views ----------------------------------------------------------------------------


def test_scopes_lists_every_scope_with_its_counts_and_filters_by_name(ui: Page) -> None:
    page = ui.open()
    rows = page.locator("li.scope")
    names = rows.locator(".name").all_inner_texts()
    assert ANN in names and HOSTILE_SCOPE in names  # the hostile name, as text
    ann = rows.filter(has_text=ANN)
    assert ann.locator(".num").all_inner_texts() == ["4", "0", "2", "1"]  # current memories (the old version apart)
    page.fill("#scope-filter", "ann-")
    assert page.locator("li.scope:visible .name").all_inner_texts() == [ANN]
    assert page.locator("main p[aria-live]").inner_text().startswith("1 of ")
    assert page.title() == TITLE


def test_a_scope_shows_memories_episodes_and_the_thread_with_stored_text_inert(ui: Page, shots: Path) -> None:
    page = ui.open()
    page.fill("#scope-filter", "ann-42")
    page.keyboard.press("Tab")  # from the filter to the one link left, then open it by keyboard
    assert page.evaluate("document.activeElement.textContent") == ANN
    page.evaluate("document.querySelector('main').dataset.ready = '0'")
    page.keyboard.press("Enter")
    ui.ready()
    assert page.evaluate("document.activeElement.tagName") == "H1"  # focus follows the view
    texts = page.locator("li.memory .text").all_inner_texts()
    assert HOSTILE_TEXT in texts and "Ships to the Lisbon office, floor 3" in texts
    row = page.locator("li.memory", has_text="Prefers email")
    assert row.locator(".kind").inner_text() == "preference"
    assert '"occurred_at":"2023-05-09"' in row.inner_text() and "<b>bold</b>" in row.inner_text()
    episodes = page.locator("li.episode")
    assert episodes.count() == 2 and "failed" in episodes.nth(1).inner_text()
    assert "Fixed by clearing the browser cache" in episodes.nth(0).inner_text()
    messages = page.locator("ol.thread > li")
    assert messages.count() == 3
    assert "summary" in messages.nth(0).get_attribute("class")  # the summary is marked
    assert "<i>twice</i>" in messages.nth(0).inner_text()
    assert "<script>alert(1)</script>" in messages.nth(2).inner_text()
    assert page.locator("main script, main img, main i, main b").count() == 0  # stored markup is text
    assert page.title() == TITLE
    assert row.locator(".key").inner_text() == "contact_channel"
    row.get_by_role("button", name=re.compile("^History: Prefers email")).click()
    versions = row.locator("ol.versions > li")
    versions.nth(1).wait_for()
    assert "Prefers phone calls" in versions.nth(0).inner_text() and "superseded" in versions.nth(0).inner_text()
    page.screenshot(path=str(shots / "inspector-scope.png"), full_page=True)


def test_a_large_scope_shows_at_once_and_fills_in_every_memory(ui: Page) -> None:
    page = ui.open("#/scope?name=customer%3Abig")
    assert page.locator("main h2", has_text="Memories (450)").count() == 1  # after the profile's heading
    page.wait_for_selector("ul.memories[data-complete='1']")
    # textContent: rows off screen are not laid out (content-visibility), so they have no innerText
    texts = page.locator("li.memory .text").evaluate_all("els => els.map((e) => e.textContent)")
    assert texts == [f"Order {1000 + i} arrived" for i in range(450)]  # all of them, oldest first


def test_why_was_this_recalled_shows_each_score_and_its_parts(ui: Page, shots: Path) -> None:
    page = ui.open("#/why")
    page.fill("#why-scope", ANN)
    page.fill("#why-query", "does Ann want email on sunday in may")
    page.evaluate("document.querySelector('main').dataset.ready = '0'")
    page.press("#why-query", "Enter")
    ui.ready()
    results = page.locator("ol.results > li")
    assert results.count() >= 3
    first = results.nth(0)
    assert HOSTILE_TEXT in first.inner_text()
    parts = first.locator("table.parts th").all_inner_texts()
    assert parts[:4] == ["dense similarity", "neighbouring context", "lexical match", "speaker"]
    # where the ranker weighs the query's null, and the result's typicality in its scope
    assert [p for p in parts[4:] if p != "typical of its scope (subtracted)"] in ([], ["background (subtracted)"])
    assert "typical of its scope (subtracted)" in parts[4:]  # three memories in Ann's scope: never exactly 0
    words = dict(zip(first.locator(".word").evaluate_all("els => els.map(e => e.firstChild.textContent)"),
                     first.locator(".word small").all_inner_texts(), strict=True))
    assert words["email"].split()[0] == "text" and words["may"].split()[0] == "date"
    assert words["sunday"].split()[0] == "context"  # lent by the next memory of thread t1
    assert "2023-05-09" in first.inner_text() and "(as returned)" in first.inner_text()
    assert page.locator("main script").count() == 0 and page.title() == TITLE
    scores = [float(s) for s in results.locator(".score").all_inner_texts()]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    page.screenshot(path=str(shots / "inspector-why.png"), full_page=True)
    # the same for similar successes and for the documents
    ui.go("#/why?kind=episodes&scope=customer%3Aann-42&q=invoice+pdf+502")
    assert "Invoice PDF download fails with 502" in page.locator("ol.results > li").nth(0).inner_text()
    assert "Refund refused" not in page.locator("main").inner_text()  # a failure is no success
    ui.go("#/why?kind=docs&q=refunds+thirty+days")
    assert "Refunds are accepted" in page.locator("ol.results > li").nth(0).inner_text()


def test_facts_show_history_and_the_tool_schema_and_a_fact_can_be_set(ui: Page, data_dir: Path) -> None:
    page = ui.open("#/facts")
    row = page.locator("main tbody tr", has_text="refund_window_days")
    assert "30" in row.inner_text()
    row.get_by_role("button", name="History").click()
    history = page.locator("tr.history")
    history.wait_for()
    assert history.locator("li").all_inner_texts()[0].startswith("14")
    schema = page.locator("main pre").inner_text()
    assert '"name": "lookup_policy"' in schema and "refund_window_days" in schema
    page.fill("#fact-key", "shipping_days")
    page.fill("#fact-value", '{"eu": 3, "us": 7}')
    page.fill("#fact-description", "Delivery days by region")
    page.evaluate("document.querySelector('main').dataset.ready = '0'")
    page.get_by_role("button", name="Set fact").click()
    ui.ready()
    assert "shipping_days" in page.locator("main tbody").inner_text()
    with _store(data_dir) as mem:
        fact = mem.facts.get("shipping_days")
    assert fact.value == {"eu": 3, "us": 7} and fact.description == "Delivery days by region"
    page.fill("#fact-key", "broken")
    page.fill("#fact-value", '{"a": 1')
    page.get_by_role("button", name="Set fact").click()
    assert "not valid JSON" in page.locator("#status").inner_text()


def test_documents_list_sources_with_chunk_counts_and_open_one(ui: Page) -> None:
    page = ui.open("#/docs")
    row = page.locator("main tbody tr", has_text="policies/refunds.md")
    chunks = int(row.locator("td").nth(1).inner_text())
    assert chunks >= 2
    page.evaluate("document.querySelector('main').dataset.ready = '0'")
    row.get_by_role("link").click()
    ui.ready()
    assert page.locator("ol.chunks > li").count() == chunks
    assert "Refunds are accepted" in page.locator("ol.chunks > li").nth(0).inner_text()


# -- acting --------------------------------------------------------------------------------


def test_forgetting_a_memory_from_the_page_removes_it_from_the_store(ui: Page, data_dir: Path) -> None:
    assert _memories(data_dir, "customer:forget-me") == ["Wants invoices in Portuguese"]
    page = ui.open("#/scope?name=customer%3Aforget-me")
    forget = page.get_by_role("button", name="Forget: Wants invoices in Portuguese")
    forget.click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    assert _memories(data_dir, "customer:forget-me") == ["Wants invoices in Portuguese"]
    forget.focus()  # by keyboard this time
    page.keyboard.press("Enter")
    page.evaluate("document.querySelector('main').dataset.ready = '0'")
    page.get_by_role("dialog").get_by_role("button", name="Forget").click()
    ui.ready()
    assert page.locator("li.memory").count() == 0
    assert _memories(data_dir, "customer:forget-me") == []


def test_editing_a_memory_makes_a_new_version_shown_in_its_history(ui: Page, live: LiveService, data_dir: Path) -> None:
    if not httpx.get(f"{live.url}/v1/inspector/features").json()["versions"]:
        pytest.skip("the service has no memory versions route (POST/GET /v1/memories/{id}/versions) yet")
    page = ui.open("#/scope?name=customer%3Aedit-me")
    page.get_by_role("button", name="Edit: Prefers email").click()
    page.fill("li.memory textarea", "Prefers text messages now")
    page.evaluate("document.querySelector('main').dataset.ready = '0'")
    page.get_by_role("button", name="Save as a new version").click()
    ui.ready()
    assert page.locator("li.memory .text").all_inner_texts() == ["Prefers text messages now"]
    with _store(data_dir) as mem:
        (current,) = mem.long_term.all(scope="customer:edit-me")
        old, new = mem.long_term.history(current.id)
    assert (old.text, new.text) == ("Prefers email", "Prefers text messages now")
    assert old.valid_to is not None and new.valid_to is None and new.key == "contact_channel"
    page.get_by_role("button", name="History: Prefers text messages now").click()
    versions = page.locator("ol.versions > li")
    versions.nth(1).wait_for()
    assert "superseded" in versions.nth(0).inner_text() and "current" in versions.nth(1).inner_text()
    assert "Prefers email" in versions.nth(0).inner_text()


def test_deleting_an_episode_from_the_page_erases_it(ui: Page, data_dir: Path) -> None:
    page = ui.open("#/scope?name=customer%3Aepisode-gone")
    page.locator("li.episode").get_by_role("button", name="Delete episode").click()
    page.evaluate("document.querySelector('main').dataset.ready = '0'")
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    ui.ready()
    assert page.locator("li.episode").count() == 0
    with _store(data_dir) as mem:
        assert mem.episodes.episodes(scope="customer:episode-gone") == []


def test_erasing_a_scope_asks_for_its_name_first(ui: Page, data_dir: Path) -> None:
    page = ui.open("#/scope?name=customer%3Aerase-me")
    page.click("#erase-scope")
    dialog = page.get_by_role("dialog")
    confirm = dialog.get_by_role("button", name="Erase scope")
    assert confirm.is_disabled()
    dialog.locator("input").fill("customer:erase-m")
    assert confirm.is_disabled()
    dialog.locator("input").fill("customer:erase-me")
    page.evaluate("document.querySelector('main').dataset.ready = '0'")
    dialog.locator("input").press("Enter")
    ui.ready()
    assert "Erased customer:erase-me: 1 memories" in page.locator("#status").inner_text()
    assert page.evaluate("location.hash") == "#/"
    with _store(data_dir) as mem:
        assert "customer:erase-me" not in mem.scopes()


def test_a_dry_run_replay_shows_the_prompt_and_report_and_writes_nothing(ui: Page, live: LiveService) -> None:
    thread = httpx.get(f"{live.url}/v1/conversations/{ANN}").json()
    page = ui.open("#/replay?customer=ann-42")
    page.fill("#replay-message", "My invoice PDF still fails with 502, what now?")
    page.get_by_role("button", name="Run a dry turn").click()
    out = page.locator("#replay-out")
    out.locator("pre.prompt").wait_for()
    assert "dry run" in out.inner_text()
    prompt = out.locator("pre.prompt").inner_text()
    assert "Invoice PDF download fails with 502" in prompt  # the customer's own episode was retrieved
    assert out.locator("table").nth(0).locator("td").nth(0).inner_text().startswith("fourfold-offline")
    assert httpx.get(f"{live.url}/v1/conversations/{ANN}").json() == thread


def test_a_case_waits_for_review_and_approving_it_shares_it(ui: Page, live: LiveService) -> None:
    page = ui.open("#/cases")
    assert "Review is on" in page.locator("main").inner_text()
    pending = page.locator("section", has_text="Waiting for review").locator("li.case")
    assert pending.count() == 1 and "clearing the browser cache" in pending.inner_text()
    page.evaluate("document.querySelector('main').dataset.ready = '0'")
    pending.get_by_role("button", name="Approve").click()
    ui.ready()
    cases = httpx.get(f"{live.url}/v1/cases").json()
    assert cases["pending"] == [] and len(cases["shared"]) == 1
    assert page.locator("section", has_text="Shared with every customer").locator("li.case").count() == 1


# -- the boundaries ------------------------------------------------------------------------


def test_another_origin_cannot_act_through_the_browser(ui: Page, live: LiveService, data_dir: Path) -> None:
    """A page of another origin (localhost is not 127.0.0.1 to a browser) sends a keyless write
    the browser does not preflight; the guard refuses it and nothing is stored."""
    port = live.url.rsplit(":", 1)[1]
    page = ui.page
    page.goto(f"http://localhost:{port}/healthz")
    status = page.evaluate("""async (target) => {
        const r = await fetch(target + '/v1/memories', {method: 'POST', mode: 'no-cors',
            headers: {'Content-Type': 'text/plain'}, body: JSON.stringify({text: 'planted', scope: 'customer:csrf'})});
        const f = await fetch(target + '/v1/scopes/customer%3Aann-42', {method: 'DELETE'}).catch(e => 'blocked');
        return [r.type, typeof f === 'string' ? f : f.status];
    }""", live.url)
    assert status == ["opaque", "blocked"]  # the DELETE never passed its preflight
    assert _memories(data_dir, "customer:csrf") == [] and _memories(data_dir, ANN)


def test_with_keys_the_page_asks_for_one_and_sees_only_its_tenant(
    open_memory: OpenMemory, browser: Any, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    for tenant, scope in (("acme", "customer:acme-1"), ("globex", "customer:globex-1")):
        with open_memory(data / "tenants" / tenant, embedder=EMBEDDER) as mem:
            mem.long_term.remember(f"{tenant}'s secret plan", scope=scope)
    with LiveService(data, keys={"acme": 1, "globex": 1}, serve_args=["--model", "offline"]) as service:
        ui = Page(browser, service.url)
        page = ui.page
        page.goto(f"{service.url}/ui")
        page.wait_for_selector("#api-key")
        page.fill("#api-key", "ffk_000000000000_notakey")
        page.press("#api-key", "Enter")
        page.wait_for_selector("p.error[role=alert]")
        assert "unknown or revoked" in page.locator("p.error").inner_text()
        key = service.keys["acme"][0]
        page.fill("#api-key", key)
        page.press("#api-key", "Enter")
        ui.ready()
        assert page.locator("li.scope .name").all_inner_texts() == ["customer:acme-1"]
        assert "acme" in page.locator("#who").inner_text()
        ui.go("#/scope?name=customer%3Aglobex-1")  # another tenant's scope, named by hand
        assert page.locator("li.memory").count() == 0 and "Memories (0)" in page.locator("main").inner_text()
        assert "globex's secret plan" not in page.content()
        assert key not in page.url and page.evaluate("sessionStorage.getItem('fourfold.apiKey')") == key
        page.get_by_role("button", name="Forget key").click()
        page.wait_for_selector("#api-key")
        assert page.evaluate("sessionStorage.getItem('fourfold.apiKey')") is None
        assert re.search(r"ffk_", page.content()) is None
        ui.context.close()
        assert ui.problems == []
