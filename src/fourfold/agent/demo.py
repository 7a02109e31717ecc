"""The scripted demo: the support agent's write-back loop, each step checked as it runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fourfold.agent.prompt import quote
from fourfold.agent.support import Reply, SupportAgent, customer_scope
from fourfold.episodic import render_episode
from fourfold.memory import Memory
from fourfold.models.base import ChatModel

__all__ = ["ALICE_CHANGE", "ALICE_DETAILS", "ALICE_FIRST", "ALICE_FIX", "ALICE_OUTCOME", "POLICIES", "DemoOutcome", "DemoStep", "run_demo"]

#: Alice's first message and the operator's outcome hold personal details of several kinds.
ALICE_FIRST = (
    "Hi, I'm Alice Mbatha (order ORD-73105). Downloading my invoice as PDF fails with error 502. "
    "Please always contact me by email at alice.mbatha@example.com, never by phone."
)
ALICE_OUTCOME = "Called Alice back on +1 415 555 0142: invoice PDF error 502 fixed by clearing the browser cache"
ALICE_FIX = "clearing the browser cache"
#: Later alice changes how she wants to be contacted: the new preference replaces the old one.
ALICE_CHANGE = "One more thing: please text me instead of email from now on."
ALICE_DETAILS = ("Alice", "Mbatha", "ORD-73105", "73105", "alice.mbatha@example.com", "415 555 0142",
                 "contact me by email", "never by phone")

POLICIES: dict[str, tuple[object, str]] = {
    "refund_window_days": (30, "Days after purchase within which a refund can be requested"),
    "max_file_upload_mb": (25, "Largest attachment a customer can upload, in MB"),
    "support_hours": ("Mon-Fri 09:00-18:00 CET", "When human support answers"),
}


@dataclass(frozen=True, slots=True)
class DemoStep:
    title: str
    customer: str
    message: str
    reply: Reply | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class DemoOutcome:
    steps: tuple[DemoStep, ...]
    checks: tuple[tuple[str, bool], ...]

    @property
    def ok(self) -> bool:
        return all(passed for _, passed in self.checks)


def run_demo(memory: Memory, model: ChatModel, *, on_step: Callable[[DemoStep], None] = lambda s: None) -> DemoOutcome:
    """Policies are set; A's first ticket is solved and resolved; A returns; B gets A's fix,
    de-identified, and nothing personal of A's; A changes her contact preference, and the new
    one replaces the old (kept in its history)."""
    agent = SupportAgent(memory, model)
    steps: list[DemoStep] = []

    def say(title: str, customer: str, message: str) -> Reply:
        reply = agent.turn(customer, message)
        step = DemoStep(title, customer, message, reply)
        steps.append(step)
        on_step(step)
        return reply

    def note(title: str, customer: str, text: str) -> None:
        step = DemoStep(title, customer, "", None, text)
        steps.append(step)
        on_step(step)

    for key, (value, description) in POLICIES.items():
        memory.facts.set(key, value, description=description)
    note("Policies set", "-", ", ".join(f"{k}={v}" for k, (v, _) in POLICIES.items()))

    say("Ticket 1, first turn", "alice", ALICE_FIRST)
    say("Ticket 1, second turn", "alice", "Clearing the browser cache and retrying fixed the invoice download.")
    resolution = agent.resolve("alice", ALICE_OUTCOME, success=True)
    shared = f"; shared de-identified: {render_episode(resolution.case)}" if resolution.case else "; nothing shared"
    note("Ticket 1 resolved", "alice",
         f"episode recorded; {len(resolution.remembered)} durable memories written to scope "
         f"{customer_scope('alice')}{shared}")

    later = say("Ticket 2 (a week later)", "alice",
                "The invoice PDF download gives error 502 again. How many days do I have to request a refund? Reply by email.")
    other = say("Another customer", "bob", "My invoice PDF download fails with error 502, what should I do?")

    say("Ticket 2, later turn", "alice", ALICE_CHANGE)
    agent.resolve("alice", "Sent the refund window (30 days) by text message", success=True)
    contact = [m for m in memory.long_term.all(scope=customer_scope("alice")) if m.key == "contact_channel"]
    versions = memory.long_term.history(contact[0].id) if contact else []
    note("Ticket 2 resolved", "alice", "contact preference now: " + "; ".join(
        f"{v.text} ({'current' if v.valid_to is None else 'replaced'})" for v in versions))
    third = say("Ticket 3", "alice", "How will you contact me about my refund, by email or by text?")

    alice_texts = {m.text for m in memory.long_term.all(scope=customer_scope("alice"), include_superseded=True)}
    bob_prompt = other.report.system_prompt
    leaked = [d for d in ALICE_DETAILS if d.lower() in bob_prompt.lower()]
    checks = (
        ("alice's returning ticket recalled her preference",
         any(m.kind == "preference" for m in later.report.memories)),
        ("alice's returning ticket found the similar resolved ticket", bool(later.report.episodes)),
        ("alice's returning ticket looked up refund_window_days",
         any(t.input.get("key") == "refund_window_days" for t in later.report.tool_uses)),
        ("bob's prompt carries alice's fix, de-identified",
         any(ALICE_FIX in case.outcome for case in other.report.cases) and ALICE_FIX in bob_prompt),
        ("bob saw nothing personal of alice's: no memory, episode, name, contact, number or preference",
         not other.report.memories and not other.report.episodes and not leaked
         and not any(quote(text) in bob_prompt for text in alice_texts)),
        ("alice's changed contact preference replaced the old one: the old is in its history only",
         len(contact) == 1 and "text me" in contact[0].text and len(versions) == 2
         and versions[0].valid_to is not None and "by email" in versions[0].text
         and any(m.id == contact[0].id for m in third.report.memories)
         and not any(m.id == versions[0].id for m in third.report.memories)),
    )
    return DemoOutcome(tuple(steps), checks)
