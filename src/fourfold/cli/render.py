"""Terminal rendering of agent turns and the demo (rich)."""

from __future__ import annotations

import json
from typing import Any

from fourfold.agent.demo import DemoOutcome, DemoStep
from fourfold.agent.support import Reply
from fourfold.episodic import render_episode

__all__ = ["print_demo_step", "print_demo_summary", "print_reply"]


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def _assembled(reply: Reply) -> str:
    r = reply.report
    lines = [f"model: {r.model} | calls: {r.model_calls} | tokens in/out: {r.input_tokens}/{r.output_tokens}"]
    lines += [f"  memory   [{m.kind}] {m.text}" for m in r.memories] or ["  memory   (none)"]
    lines += [f"  episode  {render_episode(e)}" for e in r.episodes] or ["  episode  (none)"]
    lines += [f"  case     {render_episode(e)}" for e in r.cases]
    lines += [f"  doc      {d.source}: {' '.join(d.text.split())[:80]}" for d in r.docs]
    lines += [f"  tool     {t.name}({json.dumps(dict(t.input))}) -> {t.result}" for t in r.tool_uses]
    return "\n".join(lines)


def print_reply(reply: Reply, *, as_json: bool = False) -> None:
    if as_json:
        r = reply.report
        print(json.dumps({
            "reply": reply.text, "model": r.model,
            "memories": [m.text for m in r.memories], "episodes": [render_episode(e) for e in r.episodes],
            "cases": [render_episode(e) for e in r.cases],
            "tool_uses": [{"name": t.name, "input": dict(t.input), "result": t.result} for t in r.tool_uses],
            "input_tokens": r.input_tokens, "output_tokens": r.output_tokens,
        }, ensure_ascii=False))
        return
    from rich.markup import escape

    console = _console()
    console.print(f"[bold]agent:[/bold] {escape(reply.text)}")
    console.print(f"[dim]{escape(_assembled(reply))}[/dim]\n")


def print_demo_step(step: DemoStep) -> None:
    from rich.markup import escape

    console = _console()
    console.rule(f"[bold]{escape(step.title)}[/bold]" + (f" — {escape(step.customer)}" if step.customer != "-" else ""))
    if step.note:
        console.print(escape(step.note) + "\n")
        return
    console.print(f"[bold cyan]{escape(step.customer)}:[/bold cyan] {escape(step.message)}")
    assert step.reply is not None
    print_reply(step.reply)


def print_demo_summary(outcome: DemoOutcome) -> None:
    console = _console()
    console.rule("[bold]checks[/bold]")
    for label, passed in outcome.checks:
        console.print(("[green]PASS[/green] " if passed else "[red]FAIL[/red] ") + label)
