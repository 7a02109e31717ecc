"""The support agent on `RemoteMemory`: the same turns and resolve, every store behind the service."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import test_remote
from fourfold import InvalidInput
from fourfold.agent import OpenTicket, SupportAgent, customer_scope
from fourfold.episodic import PENDING_SCOPE, SHARED_SCOPE
from fourfold.models import ScriptedModel
from fourfold.models.base import ChatResponse, ToolCall
from fourfold.remote import RemoteMemory
from fourfold.shortterm.threads import ConversationStore
from fourfold.stores.sqlite import SQLiteDatabase
from test_remote import Served

served = test_remote.served  # the in-process service of test_remote


@pytest.fixture
def threads(tmp_path: Path) -> Iterator[ConversationStore]:
    db = SQLiteDatabase(tmp_path / "client" / "threads.sqlite3")
    yield ConversationStore(db)
    db.close()


def _lookup_then(answer: str) -> list[ChatResponse | str]:
    return [ChatResponse("", (ToolCall("t1", "lookup_policy", {"key": "refund_window_days"}),), "tool_use"), answer]


def test_the_agent_runs_turns_and_a_resolve_against_the_service(served: Served, threads: ConversationStore) -> None:
    remote = served.memory("acme")
    remote.facts.set("refund_window_days", 30)
    remote.long_term.remember("Prefers email over phone", scope=customer_scope("ann"), kind="preference")
    distilled = ('{"memories": [{"text": "Asked about the refund window; a refund was issued to the card on file.",'
                 ' "kind": "resolution"}]}')
    model = ScriptedModel([*_lookup_then("You have 30 days; I will email you."), distilled, "Still 30 days."])
    agent = SupportAgent(remote, model, conversations=threads, share_cases=False)

    reply = agent.turn("ann", "How long is the refund window? Email me please.")
    assert reply.text == "You have 30 days; I will email you."
    assert [(t.name, t.result) for t in reply.report.tool_uses] == [("lookup_policy", "30")]
    assert [m.text for m in reply.report.memories] == ["Prefers email over phone"]
    assert model.requests[0]["tools"][0]["input_schema"]["properties"]["key"]["enum"] == ["refund_window_days"]
    assert agent.open_ticket("ann") == OpenTicket("How long is the refund window? Email me please.",
                                                  ('lookup_policy(refund_window_days) -> 30',),
                                                  ("How long is the refund window? Email me please.",))

    res = agent.resolve("ann", "Refund issued to the card on file.")
    assert agent.open_ticket("ann") == OpenTicket()
    other = served.memory("acme")  # a second client sees what the resolve wrote in the service
    [episode] = other.episodes.episodes(scope=customer_scope("ann"))
    assert episode == res.episode
    assert (episode.goal, episode.actions, episode.outcome, episode.success, episode.tags) == (
        "How long is the refund window? Email me please.", ("lookup_policy(refund_window_days) -> 30",),
        "Refund issued to the card on file.", True, ("support",))
    assert [(other.long_term.get(i).text, other.long_term.get(i).scope) for i in res.remembered] == [
        ("Asked about the refund window; a refund was issued to the card on file.", customer_scope("ann"))]
    assert res.case is None

    # The next ticket reads the resolved one back through the service.
    again = agent.turn("ann", "How long is the refund window again?")
    assert again.text == "Still 30 days."
    assert [e.id for e in again.report.episodes] == [episode.id]


def test_the_agent_forgets_a_customer_in_the_service_and_in_its_own_threads(
    served: Served, threads: ConversationStore
) -> None:
    remote = served.memory("acme")
    agent = SupportAgent(remote, ScriptedModel(["Noted."], is_llm=False), conversations=threads, share_cases=False)
    agent.turn("ann", "My invoice PDF fails with a 502 error")
    agent.resolve("ann", "Cleared the cache, the PDF opens.")
    counts = agent.forget_customer("ann")
    assert counts["episodes"] == 1 and counts["conversations"] == 1
    assert remote.episodes.episodes(scope=customer_scope("ann")) == []
    assert remote.long_term.all(scope=customer_scope("ann")) == []
    assert agent.history("ann") == []


def test_a_remote_memory_needs_the_agent_s_own_threads_and_the_service_s_review(
    served: Served, threads: ConversationStore
) -> None:
    remote: RemoteMemory = served.memory("acme")
    with pytest.raises(InvalidInput, match="conversations="):
        SupportAgent(remote, ScriptedModel([]), share_cases=False)
    with pytest.raises(InvalidInput, match="review-cases"):
        SupportAgent(remote, ScriptedModel([]), conversations=threads, review_cases=True)
    assert SupportAgent(remote, ScriptedModel([]), conversations=threads).cases is remote.cases
    from fourfold.longterm.consolidate import SimilarityConsolidator

    with pytest.raises(InvalidInput, match="consolidat"):
        SupportAgent(remote, ScriptedModel([]), conversations=threads, share_cases=False,
                     consolidator=SimilarityConsolidator())


ALICE = ("Hi, I'm Alice Okonkwo, order ORD-88412. Downloading my invoice as PDF fails with error 502. "
         "Please always contact me by email at alice.okonkwo@example.com. I live at 12 Oak St.")
ALICE_DETAILS = ("Okonkwo", "ORD-88412", "88412", "alice.okonkwo", "example.com", "12 Oak St")
OUTCOME = "Called Alice back on +1 415 555 0142: the invoice PDF 502 error is fixed by clearing the browser cache"
BOB = "The invoice PDF download gives me a 502 error, what can I do?"


def _offline() -> ScriptedModel:
    return ScriptedModel(lambda *_: ChatResponse("Let me look into that."), is_llm=False)


@pytest.fixture
def reviewing(tmp_path: Path) -> Iterator[Served]:
    """The in-process service run with --review-cases."""
    s = Served(tmp_path / "reviewing", review_cases=True)
    yield s
    s.close()


def _approve(served: Served, case_id: str, key: str) -> Any:
    return served.client.post(f"/v1/cases/{case_id}/review", json={"approve": True},
                              headers={"Authorization": f"Bearer {key}"})


def test_agents_on_remote_memory_share_reviewed_de_identified_cases_within_their_tenant(
    reviewing: Served, tmp_path: Path
) -> None:
    """alice's agent and bob's agent are two clients of the service: alice's case waits until
    an operator's key (not hers) approves it; then bob gets her fix and nothing of hers;
    another tenant gets nothing; forgetting alice erases her case."""
    def agent(tenant: str, name: str, key: str | None = None) -> SupportAgent:
        db = SQLiteDatabase(tmp_path / f"{name}.sqlite3")
        return SupportAgent(reviewing.memory(tenant, key), _offline(), conversations=ConversationStore(db))

    alice_key = reviewing.keys.create("acme", label="alice's desk", role="operator")[1]
    alices, bobs, others = agent("acme", "a", alice_key), agent("acme", "b"), agent("globex", "c")
    alices.turn("alice", ALICE)
    case = alices.resolve("alice", OUTCOME).case
    assert case is not None and case.scope == PENDING_SCOPE and "clearing the browser cache" in case.outcome
    shared = f"{case.goal} {case.outcome} {' '.join(case.actions)}"
    assert [d for d in ALICE_DETAILS if d in shared] == []  # the service de-identified it
    assert bobs.turn("bob", BOB).report.cases == ()  # not before an operator approves it

    refused = _approve(reviewing, case.id, alice_key)  # the key that sent it cannot approve it
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert bobs.turn("bob", BOB).report.cases == ()
    operator = reviewing.keys.create("acme", label="operator", role="operator")[1]
    assert _approve(reviewing, case.id, operator).json()["approved"]["id"] == case.id

    reply = bobs.turn("bob", BOB)
    assert [c.id for c in reply.report.cases] == [case.id]
    assert "clearing the browser cache" in reply.report.system_prompt
    assert [d for d in ALICE_DETAILS if d in reply.report.system_prompt] == []
    assert alices.turn("alice", BOB).report.cases == ()  # her own ticket is her episode, not a case
    assert others.turn("carol", BOB).report.cases == ()  # cases never cross tenants

    alices.turn("alice", "Now the export to CSV hangs.")
    assert alices.resolve("alice", "Rebooted the export worker", success=False).case is None  # failures stay private
    counts = alices.forget_customer("alice")
    assert counts["episodes"] >= 2  # her episodes and the case made from her ticket
    assert bobs.turn("bob", BOB).report.cases == ()


def test_a_service_without_review_takes_no_case_and_the_resolve_still_completes(
    served: Served, tmp_path: Path
) -> None:
    """Without --review-cases the route refuses (403) and nothing reaches the shared scope; the
    remote agent's resolve writes its episode and memories, closes the ticket and warns."""
    agent = SupportAgent(served.memory("acme"), _offline(),
                         conversations=ConversationStore(SQLiteDatabase(tmp_path / "a.sqlite3")))
    agent.turn("alice", ALICE)
    with pytest.warns(RuntimeWarning, match="review-cases"):
        res = agent.resolve("alice", OUTCOME)
    assert res.case is None and agent.open_ticket("alice") == OpenTicket()
    assert [e.id for e in served.memory("acme").episodes.episodes(scope=customer_scope("alice"))] == [res.episode.id]
    memory = served.tenants.get("acme")
    assert memory.episodes.episodes(scope=SHARED_SCOPE) == memory.episodes.episodes(scope=PENDING_SCOPE) == []


@pytest.mark.slow  # a real `fourfold serve` process
def test_an_agent_shares_cases_through_a_real_service(tmp_path: Path) -> None:
    """`fourfold serve` in its own process: two agents' clients, one tenant, the case crosses
    between them over HTTP; a key of another tenant sees none of it."""
    from fourfold.remote import connect
    from fourfold.service.testing import LiveService

    with LiveService(tmp_path / "data", keys={"acme": 2, "globex": 1}, serve_args=["--review-cases"]) as live:
        def agent(key: str, name: str) -> SupportAgent:
            db = SQLiteDatabase(tmp_path / f"{name}.sqlite3")
            return SupportAgent(connect(live.url, api_key=key), _offline(), conversations=ConversationStore(db))

        alices, bobs = agent(live.keys["acme"][0], "a"), agent(live.keys["acme"][1], "b")
        others = agent(live.keys["globex"][0], "c")
        alices.turn("alice", ALICE)
        case = alices.resolve("alice", OUTCOME).case
        assert case is not None
        # bob's key approves the case alice's key sent
        approved = httpx.post(f"{live.url}/v1/cases/{case.id}/review", json={"approve": True},
                              headers={"Authorization": f"Bearer {live.keys['acme'][1]}"}, timeout=30)
        assert approved.json()["approved"]["id"] == case.id
        reply = bobs.turn("bob", BOB)
        assert [c.id for c in reply.report.cases] == [case.id]
        assert [d for d in ALICE_DETAILS if d in reply.report.system_prompt] == []
        assert others.turn("carol", BOB).report.cases == ()
