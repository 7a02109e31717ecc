"""One detector, two policies: secrets are removed from everything stored; personal details
(names, emails, phones, addresses, order/account/ticket numbers) from anything shared.

    detect("call me at 415-555-0100", policy="personal")  # -> (Redaction(kind="phone", ...),)
    redact("password=hunter2")                             # -> ("password=[REDACTED:password]", ...)

The "personal" policy applies the secret rules too: text shared with other customers must
hold neither. Offsets always refer to the original text; a `Redaction` never holds the value.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from fourfold.errors import InvalidInput
from fourfold.text._normalise import Normalised, joined, normalise
from fourfold.text._rules import Pattern, Policy, Rule
from fourfold.text._secret_rules import NUMBER_RULES, vendored
from fourfold.text._structure import KINDS, find_structure
from fourfold.types import Redaction

__all__ = ["POLICIES", "Policy", "detect", "redact", "redact_json", "redact_many", "rules", "structure_only"]

POLICIES: tuple[Policy, ...] = ("secrets", "personal")

# Whether gitleaks' vendor rules run; `structure_only` turns them off for the whole process.
_VENDORED = [True]


@contextmanager
def structure_only() -> Iterator[None]:
    """Detect secrets by structure alone, without the vendored rule file (to measure what
    structure catches by itself). Process-wide while it lasts: for benchmarks, not serving."""
    _VENDORED.append(False)
    try:
        yield
    finally:
        _VENDORED.pop()


def rules(policy: Policy = "secrets") -> tuple[Rule, ...]:
    """The pattern rules a policy applies, most specific first (the structure pass, which
    every policy runs, is apart: `fourfold.text._structure`)."""
    rules = vendored().rules if _VENDORED[-1] else ()
    named, generic = [r for r in rules if not r.kind.startswith("generic")], [r for r in rules if r.kind.startswith("generic")]
    secret_rules = (*named, *NUMBER_RULES, *generic)
    if policy == "secrets":
        return secret_rules
    if policy == "personal":
        # Loaded on first use: compiling its patterns would cost every cold command (a
        # `fourfold recall` checks its scope for secrets only) tens of milliseconds.
        from fourfold.text._personal_rules import PERSONAL_RULES

        return secret_rules + PERSONAL_RULES
    raise InvalidInput(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")


class _Plan:
    """The rules of a policy indexed by trigger, so one text costs one substring test per
    distinct trigger (then only the gated rules' patterns), not one test per rule."""

    def __init__(self, active: tuple[Rule, ...]) -> None:
        self.rules = active
        self.by_trigger: dict[str, list[int]] = {}
        self.gated: list[tuple[int, Pattern]] = []
        self.always: list[int] = []
        for i, rule in enumerate(active):
            for trigger in rule.triggers:
                self.by_trigger.setdefault(trigger, []).append(i)
            if rule.gate is not None:
                self.gated.append((i, rule.gate))
            elif not rule.triggers:
                self.always.append(i)
        # Structure findings rank after the vendor rules that name a vendor and the checksum
        # rules (cards, IBANs), before the rest (gitleaks' generic rules among them:
        # "password" says more than "generic_api_key").
        named = [i for i, r in enumerate(active) if (r.vendored and not r.kind.startswith("generic")) or r in NUMBER_RULES]
        self.structure_priority = (named[-1] if named else -1) + 0.5

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

    def unfiltered(self, text: str) -> set[int]:
        """Every rule written here, and the vendored rules whose keywords occur: gitleaks
        gates its rules by their keywords, and that gate is part of what a rule means."""
        lowered = text.lower()
        return {i for i, rule in enumerate(self.rules) if not rule.vendored or any(k in lowered for k in rule.triggers)}


_PLANS: dict[tuple[Policy, bool], _Plan] = {}


def _plan(policy: Policy) -> _Plan:
    """The plan of a policy's rules (with or without the vendored ones, as switched)."""
    key = (policy, _VENDORED[-1])
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS.setdefault(key, _Plan(rules(policy)))  # an unknown policy is refused
    return plan


Candidate = tuple[int, int, float, str]


def _candidates(text: str, plan: _Plan, prefilter: bool, depth: int) -> Iterator[Candidate]:
    """Every (start, end, rule priority, kind) a rule finds, overlapping ones included."""
    indices = plan.applicable(text) if prefilter else plan.unfiltered(text)
    for priority in sorted(indices):
        rule = plan.rules[priority]
        for start, end in rule.find(text):
            yield start, end, priority, rule.kind
    # Base64 is decoded and read again, once: deeper nesting is no one's paste.
    nested = (lambda plain: bool(_spans(plain, plan, prefilter, depth + 1))) if depth == 0 else None
    for start, end, kind in find_structure(text, nested):
        yield start, end, plan.structure_priority + _KIND_RANK[kind], kind


# Ties between structure's findings go to the more specific kind (within the structure's rank).
_KIND_RANK = {kind: i / (2 * len(KINDS)) for i, kind in enumerate(KINDS)}


def _select(
    text: str, *, policy: Policy = "secrets", prefilter: bool = True, active: tuple[Rule, ...] | None = None
) -> list[tuple[int, int, str]]:
    """Pick non-overlapping spans: earliest first, then longest, then the most specific rule.

    `active` replaces the policy's rules (tests use it to check that no trigger is redundant).
    """
    plan = _plan(policy) if active is None else _Plan(active)  # an unknown policy is refused
    return _pick(text, plan, prefilter)


def _spans(text: str, plan: _Plan, prefilter: bool, depth: int) -> list[Candidate]:
    """Candidates in `text` read normalised (and with wrapped tokens joined), in its offsets."""
    norm = normalise(text)
    found = [_mapped(c, norm) for c in _candidates(norm.text, plan, prefilter, depth)]
    wrapped = joined(norm)
    if wrapped is not None:
        found += [_mapped(c, wrapped) for c in _candidates(wrapped.text, plan, prefilter, depth)]
    return found


def _mapped(candidate: Candidate, norm: Normalised) -> Candidate:
    start, end, priority, kind = candidate
    if norm.identity:
        return candidate
    return (*norm.span(start, end), priority, kind)


def _pick(text: str, plan: _Plan, prefilter: bool = True) -> list[tuple[int, int, str]]:
    chosen: list[tuple[int, int, str]] = []
    last_end = -1
    for start, end, _, kind in sorted(set(_spans(text, plan, prefilter, 0)), key=lambda c: (c[0], -c[1], c[2], c[3])):
        if start >= last_end and end > start:
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


def redact_json(value: Any, *, policy: Policy = "secrets") -> tuple[Any, list[str]]:
    """`value` (JSON-like: dicts, lists, scalars) with every string in it redacted, object
    keys included, at any depth; and the kinds found. A secret hides as well in a key
    (`{"<the token>": true}`) or three levels down as in a top-level string."""
    kinds: list[str] = []

    def clean(item: Any) -> Any:
        if isinstance(item, str):
            text, found = redact(item, policy=policy)
            kinds.extend(r.kind for r in found)
            return text
        if isinstance(item, (list, tuple)):
            return [clean(v) for v in item]
        if isinstance(item, dict):
            return {clean(k): clean(v) for k, v in item.items()}
        return item

    try:
        return clean(value), kinds
    except RecursionError:  # deeper than any JSON a client may send (the service caps depth)
        raise InvalidInput("the value is nested too deeply") from None
