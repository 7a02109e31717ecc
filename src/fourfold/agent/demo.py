"""The scripted demo: the write-back loop of the seed's support agent, done properly."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fourfold.agent.prompt import quote
from fourfold.agent.support import Reply, SupportAgent, customer_scope
from fourfold.memory import Memory
from fourfold.models.base import ChatModel

__all__ = ["POLICIES", "DemoOutcome", "DemoStep", "run_demo"]

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
    """Policies are set; A's first ticket is solved and resolved; A returns; B sees nothing of A."""
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

    say("Ticket 1, first turn", "alice",
        "Hi, downloading my invoice as PDF fails with error 502. Please always contact me by email, never by phone.")
    say("Ticket 1, second turn", "alice", "Clearing the browser cache and retrying fixed the invoice download.")
    resolution = agent.resolve("alice", "Invoice PDF download error 502 fixed by clearing the browser cache", success=True)
    note("Ticket 1 resolved", "alice",
         f"episode recorded; {len(resolution.remembered)} durable memories written to scope {customer_scope('alice')}")

    later = say("Ticket 2 (a week later)", "alice",
                "The invoice PDF download gives error 502 again. How many days do I have to request a refund? Reply by email.")
    other = say("Another customer", "bob", "My invoice PDF download fails with error 502, what should I do?")

    alice_texts = {m.text for m in memory.long_term.all(scope=customer_scope("alice"))}
    bob_prompt = other.report.system_prompt
    checks = (
        ("alice's returning ticket recalled her preference",
         any(m.kind == "preference" for m in later.report.memories)),
        ("alice's returning ticket found the similar resolved ticket", bool(later.report.episodes)),
        ("alice's returning ticket looked up refund_window_days",
         any(t.input.get("key") == "refund_window_days" for t in later.report.tool_uses)),
        ("bob saw none of alice's memories or episodes",
         not other.report.memories and not other.report.episodes
         and not any(quote(text) in bob_prompt for text in alice_texts)),
    )
    return DemoOutcome(tuple(steps), checks)
