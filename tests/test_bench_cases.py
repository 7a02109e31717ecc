"""The shared-case benchmark's leak count: it attributes a detail to the customer whose text put
it into a prompt, sees a leak that is planted, and does not count a coincidence as one."""

from __future__ import annotations

import sys
from pathlib import Path

from fourfold.agent import TurnReport
from fourfold.agent.prompt import PromptParts, assemble_system
from fourfold.embeddings import HashEmbedder
from fourfold.episodic.codec import build_episode
from fourfold.types import Episode

# benchmarks/ is a folder of scripts, not a package: import its modules the way the script does.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import cases as bench

BANK = bench.PROBLEMS[24]  # the bank transfer: its fix says "matching it by amount"


def _customer(cid: str, *texts: str, town: str = "matching") -> bench.Customer:
    who = bench.Customer(cid, texts[0] if texts else "", {}, {"lower_town": town})
    for text in texts:
        who.told(text)
    return who


def _case(goal: str, outcome: str = "sorted it out") -> Episode:
    return build_episode({"goal": goal, "actions": [], "outcome": outcome, "success": True}, ts=0.0)


def _report(*, cases: tuple[Episode, ...] = (), episodes: tuple[Episode, ...] = ()) -> TurnReport:
    system = assemble_system(PromptParts(episodes=episodes, cases=cases))
    return TurnReport("m", (), episodes, (), (), 0, 0, 0, 0, system_prompt=system, cases=cases)


def _owners(asker: bench.Customer, everyone: list[bench.Customer], report: TurnReport,
            sources: dict[str, str]) -> list[str]:
    return [leak.owner for leak in bench._attributed(asker, {c.cid: c for c in everyone}, report, sources, 1)]


def test_a_planted_unmasked_case_is_attributed_to_its_customer() -> None:
    """The self-check the benchmark runs first: a case written unmasked is seen, by source."""
    tally = bench.self_check(HashEmbedder(), 14, "unlisted", n_types=3)
    planted = {leak.kind for leak in tally.found if leak.owner == bench.PLANTED}
    assert {"name", "email", "first_name"} <= planted
    assert all(leak.source == f"customer:{bench.PLANTED}" for leak in tally.found if leak.owner == bench.PLANTED)
    assert sum(tally.raw.values()) >= len(planted)


def test_the_owners_town_in_a_case_from_their_ticket_is_a_leak_even_when_a_fix_holds_the_word() -> None:
    xavier = _customer("x", "in our matching shop the bank transfer is not received")
    asker = _customer("y", "my transfer is not showing")
    case = _case("the bank transfer is not received in our matching …", f"emailed them: {BANK[2]}")
    report = _report(cases=(case,))
    assert _owners(asker, [xavier, asker], report, {case.id: xavier.scope}) == ["x"]
    # the operator's generic fix alone ("matching it by amount") names no one
    fix_only = _case("the bank transfer is not received", f"emailed them: {BANK[2]}")
    assert _owners(asker, [xavier, asker], _report(cases=(fix_only,)), {fix_only.id: xavier.scope}) == []


def test_a_word_another_customers_case_carries_as_their_own_text_is_no_leak_of_the_owner() -> None:
    """A coincidence: zoe writes "chicken" about her order; xavier's town is chicken."""
    xavier = _customer("x", "hi from chicken, my parcel is late", town="chicken")
    zoe = _customer("z", "my chicken order arrived cold", town="bath")
    asker = _customer("y", "my food order arrived cold")
    case = _case("my chicken order arrived cold")
    assert _owners(asker, [xavier, zoe, asker], _report(cases=(case,)), {case.id: zoe.scope}) == []
    # ... but the same line without a source, or from a customer who never wrote the word, is one
    assert _owners(asker, [xavier, zoe, asker], _report(cases=(case,)), {}) == ["x"]
    bob = _customer("b", "my order arrived cold", town="bath")
    assert _owners(asker, [xavier, bob, asker], _report(cases=(case,)), {case.id: bob.scope}) == ["x"]


def test_a_detail_its_owner_never_wrote_is_counted_only_by_the_raw_count() -> None:
    """The generator gives every customer a town; one who never typed theirs disclosed nothing."""
    xavier = _customer("x", "Hi, I'm Xavier Quarshie. My invoice fails.")
    asker = _customer("y", "my invoice fails")
    case = _case("the … transfer is not received in our matching …")
    report = _report(cases=(case,))
    assert _owners(asker, [xavier, asker], report, {case.id: "customer:z"}) == []
    raw = bench._raw(asker, {"x": xavier, "y": asker}, bench._prompt_data(report.system_prompt))
    assert raw["lower_town"] == 1


def test_the_askers_own_episode_explains_only_the_askers_own_words() -> None:
    xavier = _customer("x", "greetings from matching")
    mine = _case("our matching shop has no wifi")
    asker = _customer("y", "our matching shop has no wifi")
    assert _owners(asker, [xavier, asker], _report(episodes=(mine,)), {}) == []
    stranger = _customer("w", "the wifi is down")
    assert _owners(stranger, [xavier, stranger], _report(episodes=(mine,)), {}) == ["x"]
