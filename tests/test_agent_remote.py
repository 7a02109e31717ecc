"""The support agent on `RemoteMemory`: the same turns and resolve, every store behind the service."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import test_remote
from fourfold import InvalidInput
from fourfold.agent import OpenTicket, SupportAgent, customer_scope
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
                                                  ('lookup_policy(refund_window_days) -> 30',))

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


def test_a_remote_memory_needs_the_agent_s_own_threads_and_no_shared_cases(
    served: Served, threads: ConversationStore
) -> None:
    remote: RemoteMemory = served.memory("acme")
    with pytest.raises(InvalidInput, match="conversations="):
        SupportAgent(remote, ScriptedModel([]), share_cases=False)
    with pytest.raises(InvalidInput, match="share_cases=False"):
        SupportAgent(remote, ScriptedModel([]), conversations=threads)
    from fourfold.longterm.consolidate import SimilarityConsolidator

    with pytest.raises(InvalidInput, match="consolidat"):
        SupportAgent(remote, ScriptedModel([]), conversations=threads, share_cases=False,
                     consolidator=SimilarityConsolidator())
