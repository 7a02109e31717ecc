"""One detector, two policies: secrets are removed from everything stored; personal details
(names, emails, phones, addresses, order/account/ticket numbers) from anything shared.

    detect("call me at 415-555-0100", policy="personal")  # -> (Redaction(kind="phone", ...),)
    redact("password=hunter2")                             # -> ("password=[REDACTED:password]", ...)

The "personal" policy applies the secret rules too: text shared with other customers must
hold neither. Offsets always refer to the original text; a `Redaction` never holds the value.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Sequence

from fourfold.errors import InvalidInput
from fourfold.text._rules import Policy, Rule
from fourfold.text._secret_rules import SECRET_RULES
from fourfold.types import Redaction

__all__ = ["POLICIES", "Policy", "detect", "redact", "redact_many", "rules"]

POLICIES: tuple[Policy, ...] = ("secrets", "personal")


def rules(policy: Policy = "secrets") -> tuple[Rule, ...]:
    """The rules a policy applies, most specific first."""
    if policy == "secrets":
        return SECRET_RULES
    if policy == "personal":
        # Loaded on first use: compiling its patterns would cost every cold command (a
        # `fourfold recall` checks its scope for secrets only) tens of milliseconds.
        from fourfold.text._personal_rules import PERSONAL_RULES

        return SECRET_RULES + PERSONAL_RULES
    raise InvalidInput(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")


class _Plan:
    """The rules of a policy indexed by trigger, so one text costs one substring test per
    distinct trigger (then only the gated rules' patterns), not one test per rule."""

    def __init__(self, active: tuple[Rule, ...]) -> None:
        self.rules = active
        self.by_trigger: dict[str, list[int]] = {}
        self.gated: list[tuple[int, re.Pattern[str]]] = []
        self.always: list[int] = []
        for i, rule in enumerate(active):
            for trigger in rule.triggers:
                self.by_trigger.setdefault(trigger, []).append(i)
            if rule.gate is not None:
                self.gated.append((i, rule.gate))
            elif not rule.triggers:
                self.always.append(i)

    def within(self, lowered: str) -> _Plan:
        """This plan without the triggers that occur nowhere in `lowered` (texts to test,
        lowercased and joined): every one of those texts gets the same rules from both."""
        out = copy.copy(self)
        out.by_trigger = {t: indices for t, indices in self.by_trigger.items() if t in lowered}
        return out

    def applicable(self, text: str) -> set[int]:
        """Indices of the rules that can match `text`: a trigger occurs, or the gate matches."""
        lowered = text.lower()
        chosen = set(self.always)
        for trigger, indices in self.by_trigger.items():
            if trigger in lowered:
                chosen.update(indices)
        chosen.update(i for i, gate in self.gated if i not in chosen and gate.search(text))
        return chosen


_PLANS: dict[Policy, _Plan] = {"secrets": _Plan(SECRET_RULES)}  # the personal plan joins on first use


def _plan(policy: Policy) -> _Plan:
    plan = _PLANS.get(policy)
    if plan is None:
        plan = _PLANS.setdefault(policy, _Plan(rules(policy)))
    return plan


def _candidates(text: str, plan: _Plan, prefilter: bool) -> Iterator[tuple[int, int, int, str]]:
    """Every (start, end, rule priority, kind) a rule finds, overlapping ones included."""
    indices = plan.applicable(text) if prefilter else range(len(plan.rules))
    for priority in sorted(indices):
        rule = plan.rules[priority]
        for start, end in rule.find(text):
            yield start, end, priority, rule.kind


def _select(
    text: str, *, policy: Policy = "secrets", prefilter: bool = True, active: tuple[Rule, ...] | None = None
) -> list[tuple[int, int, str]]:
    """Pick non-overlapping spans: earliest first, then longest, then the most specific rule.

    `active` replaces the policy's rules (tests use it to check that no trigger is redundant).
    """
    plan = _plan(policy) if active is None else _Plan(active)  # an unknown policy is refused
    return _pick(text, plan, prefilter)


def _pick(text: str, plan: _Plan, prefilter: bool = True) -> list[tuple[int, int, str]]:
    chosen: list[tuple[int, int, str]] = []
    last_end = -1
    for start, end, _, kind in sorted(_candidates(text, plan, prefilter), key=lambda c: (c[0], -c[1], c[2])):
        if start >= last_end:
            chosen.append((start, end, kind))
            last_end = end
    return chosen


def _placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def detect(text: str, *, policy: Policy = "secrets") -> tuple[Redaction, ...]:
    """What `redact` would remove from `text` under `policy`: kinds and spans, never the values."""
    return _redactions(_select(text, policy=policy))


def _redactions(spans: list[tuple[int, int, str]]) -> tuple[Redaction, ...]:
    return tuple(Redaction(kind, start, end, _placeholder(kind)) for start, end, kind in spans)


def redact(text: str, *, policy: Policy = "secrets") -> tuple[str, tuple[Redaction, ...]]:
    """Replace each finding with "[REDACTED:<kind>]"; offsets refer to the original text."""
    return _redacted(text, detect(text, policy=policy))


#: Below this many texts, `redact_many` tests each text for every trigger (as `redact` does).
_BATCH = 8


def redact_many(texts: Sequence[str], *, policy: Policy = "secrets") -> list[tuple[str, tuple[Redaction, ...]]]:
    """`redact` of each text, the same results, for a batch (a `remember_many`'s memories).

    A text is tested only for the triggers that occur somewhere in the batch, which one
    substring search over all of it finds per trigger; most triggers occur in no ordinary
    text. It saves little, so a batch under `_BATCH` texts takes `redact`'s path.
    """
    if len(texts) < _BATCH:
        return [redact(text, policy=policy) for text in texts]
    plan = _plan(policy).within("\n".join(text.lower() for text in texts))
    return [_redacted(text, _redactions(_pick(text, plan))) for text in texts]


def _redacted(text: str, found: tuple[Redaction, ...]) -> tuple[str, tuple[Redaction, ...]]:
    """The text with each finding replaced by its placeholder."""
    parts: list[str] = []
    pos = 0
    for r in found:
        parts.append(text[pos : r.start])
        parts.append(r.placeholder)
        pos = r.end
    parts.append(text[pos:])
    return "".join(parts), found
