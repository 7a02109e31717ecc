"""Vendor token formats, from gitleaks' public rule file (vendored in vendor/gitleaks.toml).

The community keeps gitleaks' rules up to date with the prefixes and shapes vendors issue;
fourfold reads the file as released (v8.30.1) and runs each rule the way gitleaks does: the
`keywords` gate the rule, the regex finds a candidate, `secretGroup` (or the first group
that matched) is the secret, `entropy` is its minimum Shannon entropy, and the rule's and
the file's allowlists (regexes, stopwords) drop known non-secrets. Every regex is compiled
by RE2 (gitleaks' own Go regexp is RE2 too); a rule RE2 refuses, or one that matches file
paths only, is skipped and counted.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

import re2

from fourfold.text._rules import Pattern, Rule, compile_re2
from fourfold.text._shapes import entropy

__all__ = ["GITLEAKS_VERSION", "Vendored", "load"]

GITLEAKS_VERSION = "v8.30.1"


@dataclass(frozen=True, slots=True)
class Vendored:
    """The rules read from the file, and how many of its rules were skipped and why."""

    rules: tuple[Rule, ...]
    skipped: dict[str, str]  # rule id -> why


@dataclass(frozen=True, slots=True)
class _Allow:
    regexes: tuple[Pattern, ...]
    stopwords: tuple[str, ...]
    target: str  # "secret", "match" or "line"
    all_of: bool  # condition AND: every listed check must hold


def _allowlist(raw: dict[str, Any]) -> _Allow:
    return _Allow(
        tuple(compile_re2(r) for r in raw.get("regexes", ())),
        tuple(s.lower() for s in raw.get("stopwords", ())),
        raw.get("regexTarget", "secret"),
        raw.get("condition", "OR").upper() == "AND",
    )


def _allowed(allow: _Allow, secret: str, match: str, line: str) -> bool:
    target = {"match": match, "line": line}.get(allow.target, secret)
    checks = []
    if allow.regexes:
        checks.append(any(r.search(target) is not None for r in allow.regexes))
    if allow.stopwords:
        lowered = secret.lower()
        checks.append(any(word in lowered for word in allow.stopwords))
    if not checks:
        return False
    return all(checks) if allow.all_of else any(checks)


def _line_of(text: str, start: int, end: int) -> str:
    return text[text.rfind("\n", 0, start) + 1 : (text.find("\n", end) + 1 or len(text) + 1) - 1]


def _rule(raw: dict[str, Any], global_allow: _Allow) -> Rule:
    pattern = compile_re2(raw["regex"])
    group = int(raw.get("secretGroup", 0))
    min_entropy = float(raw.get("entropy", 0.0))
    generic = raw["id"].startswith("generic")
    allows = tuple(_allowlist(a) for a in raw.get("allowlists", ()))

    def find(text: str) -> Iterator[tuple[int, int]]:
        for match in pattern.finditer(text):
            start, end = _secret_span(match, group)
            if end <= start:
                continue
            secret = text[start:end]
            if min_entropy and (entropy(secret) < min_entropy or (generic and not any(c.isdigit() for c in secret))):
                continue
            whole = match.group()
            line = _line_of(text, *match.span())
            if _allowed(global_allow, secret, whole, line) or any(_allowed(a, secret, whole, line) for a in allows):
                continue
            yield start, end

    kind = raw["id"].replace("-", "_")
    patterns = (pattern, *global_allow.regexes, *(r for a in allows for r in a.regexes))
    return Rule(kind, find, "secrets", tuple(k.lower() for k in raw.get("keywords", ())), None, patterns, vendored=True)


def _secret_span(match: Any, group: int) -> tuple[int, int]:
    """gitleaks' secret: the rule's `secretGroup`, else the first group that matched, else all."""
    groups = match.re.groups
    if group and group <= groups:
        return tuple(match.span(group))  # type: ignore[return-value]
    for i in range(1, groups + 1):
        start, end = match.span(i)
        if end > start >= 0:
            return start, end
    return tuple(match.span())  # type: ignore[return-value]


def parsed() -> dict[str, Any]:
    """The vendored rule file as data, read from its JSON form (`vendor/gitleaks.json`).

    Python's TOML parser takes about as long over the file as compiling all its regexes, and
    every cold command that stores text pays for it; the JSON form is the same data (made by
    `python -m fourfold.text._gitleaks`, and a test holds it equal to the TOML file).
    """
    text = resources.files(__package__).joinpath("vendor/gitleaks.json").read_text(encoding="utf-8")
    config: dict[str, Any] = json.loads(text)
    return config


def parsed_toml() -> dict[str, Any]:
    """The vendored TOML file itself, parsed (what `parsed` must equal)."""
    return tomllib.loads(resources.files(__package__).joinpath("vendor/gitleaks.toml").read_text(encoding="utf-8"))


def load() -> Vendored:
    """The vendored file's rules, compiled by RE2, and the ones skipped."""
    config = parsed()
    global_allow = _allowlist(config.get("allowlist", {}))
    rules: list[Rule] = []
    skipped: dict[str, str] = {}
    for raw in config["rules"]:
        if "regex" not in raw:
            skipped[raw["id"]] = "matches file paths only"
            continue
        try:
            rules.append(_rule(raw, global_allow))
        except re2.error as exc:
            skipped[raw["id"]] = f"RE2 refuses its regex: {exc}"
    # The generic rules go last: a vendor's own rule names what it finds, and ties go to it.
    rules.sort(key=lambda r: r.kind.startswith("generic"))
    return Vendored(tuple(rules), skipped)


if __name__ == "__main__":  # writes vendor/gitleaks.json from vendor/gitleaks.toml
    from pathlib import Path

    target = Path(__file__).with_name("vendor") / "gitleaks.json"
    target.write_text(json.dumps(parsed_toml(), ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
