"""Episodes as one-line worked examples for a prompt: "Previously: goal -> actions -> outcome"."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from fourfold.text.problem import problem_sentence
from fourfold.types import Episode

__all__ = ["render_episode", "render_episodes", "render_ticket"]

MAX_FIELD_CHARS = 200
MAX_ACTION_CHARS = 80
MAX_ACTIONS = 5


def _one_line(text: str, limit: int) -> str:
    """Collapse whitespace and control characters to single spaces; cut long text at a word."""
    cleaned = "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch for ch in text)
    flat = " ".join(cleaned.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def _actions(actions: Sequence[str]) -> str:
    shown = [_one_line(action, MAX_ACTION_CHARS) for action in actions[:MAX_ACTIONS]]
    if len(actions) > MAX_ACTIONS:
        shown.append(f"(+{len(actions) - MAX_ACTIONS} more)")
    return ", ".join(shown)


def render_episode(ep: Episode) -> str:
    """One line: "Previously: deploy 502 -> restarted worker -> fixed"; failures say so."""
    parts = [_one_line(ep.goal, MAX_FIELD_CHARS)]
    if ep.actions:
        parts.append(_actions(ep.actions))
    parts.append(_one_line(ep.outcome, MAX_FIELD_CHARS))
    label = "Previously" if ep.success else "Previously (failed)"
    return f"{label}: {' -> '.join(parts)}"


def render_ticket(ep: Episode) -> str:
    """A past ticket from its problem and fix alone: "Previously: printer offline -> replaced the
    cable". Never the goal as it was said (a customer's message, with greetings, contact
    details and preferences that may have changed since): an episode that recorded no problem
    shows the problem sentence of its goal (`problem_sentence`), and one without a fix its outcome."""
    problem = ep.problem or problem_sentence(ep.goal)
    label = "Previously" if ep.success else "Previously (failed)"
    fix = _one_line(ep.fix or ep.outcome, MAX_FIELD_CHARS)
    return f"{label}: {_one_line(problem, MAX_FIELD_CHARS)} -> {fix}" if problem else f"{label}: {fix}"


def render_episodes(eps: Sequence[Episode]) -> str:
    """One rendered episode per line; an empty string when there are none."""
    return "\n".join(render_episode(ep) for ep in eps)
