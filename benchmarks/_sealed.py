"""The learning benchmark on a set of tickets written by someone else (`learning.py --set PATH`).

The set is JSON lines, one item per line, of four types:

- shared_fix: a first customer's messages and the operator's note, the fix's words
  (`fix_words`), later customers' messages, and the first ticket's identifying spans;
- preference_change: a first and a second ticket; the old and the new value's words;
- standing_preference: a first ticket stating a preference (`value_words`) and a later ticket;
- sentences: sentences with their roles, and the identifying spans among them.

What is measured (one desk, offline, `SupportAgent` with the reader):

- learn: later customers whose prompt carries every fix word (case-insensitive);
- fix_intact: first tickets whose shared case's fix holds every fix word;
- wrong_fix: later customers whose prompt carries another ticket's whole fix and not theirs;
- pii_leaks: identifying texts of a first ticket found in another customer's prompt;
- pref_current / stale: changed preferences current without the old one / with the old one;
- own: later tickets whose prompt carries the standing preference's words;
- span_recall: identifying spans the personal-details detector covers (every letter and digit);
- invariance: variants of each text (capitalised first word, lower case, an added greeting,
  reordered sentences, a typo) that keep the fix words, the preference and its key, and the
  spans found, as the original.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fourfold import Memory
from fourfold.agent import SupportAgent, customer_scope
from fourfold.agent.deidentify import Ticket, extract_case
from fourfold.embeddings import Embedder
from fourfold.models import OfflineModel
from fourfold.text import detect
from fourfold.text.preferences import preference_key, states_preference
from fourfold.text.reader import read

__all__ = ["Scores", "load", "run"]

#: The set's role names as the reader's.
ROLES = {"problem": "problem", "fix_or_outcome": "fix", "preference": "preference",
         "preference_change": "preference_change", "greeting_or_contact": "contact", "question": "question",
         "chatter": "chatter"}
_CASES_HEAD = "# Similar resolved tickets of other customers"


@dataclass
class Scores:
    later: int = 0
    reached: int = 0
    firsts: int = 0
    intact: int = 0
    wrong_fix: int = 0
    leaks: int = 0
    changes: int = 0
    current: int = 0
    stale: int = 0
    standing: int = 0
    own: int = 0
    spans: int = 0
    recalled: int = 0
    variants: int = 0
    agreed: int = 0
    roles: int = 0
    roles_right: int = 0
    missed: list[str] = field(default_factory=list)


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _has(text: str, words: Sequence[str]) -> bool:
    lowered = text.lower()
    return all(w.lower() in lowered for w in words)


def _data(report: Any) -> str:
    from cases import _prompt_data

    return _prompt_data(report.system_prompt)


def _cases_section(data: str) -> str:
    return data.split(_CASES_HEAD, 1)[1].split("\n# ", 1)[0] if _CASES_HEAD in data else ""


def shared_fixes(embedder: Embedder, items: list[dict[str, Any]], s: Scores, verbose: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="fourfold-sealed-") as tmp, Memory.open(Path(tmp), embedder=embedder) as mem:
        agent = SupportAgent(mem, OfflineModel())
        for item in items:
            cid = f"{item['id']}-first"
            agent.turn(cid, "\n".join(item["first"]["customer_messages"]))
            case = agent.resolve(cid, item["first"]["operator_note"]).case
            s.firsts += 1
            if case is not None and _has(case.outcome, item["fix_words"]):
                s.intact += 1
            elif verbose:
                print(f"    fix not intact {item['id']}: {case.outcome if case else None!r}")
        for item in items:
            for n, later in enumerate(item["later"]):
                cid = f"{item['id']}-later{n}"
                message = "\n".join(later["customer_messages"])
                data = _data(agent.turn(cid, message).report)
                section = _cases_section(data)
                s.later += 1
                if _has(section, item["fix_words"]):
                    s.reached += 1
                else:
                    if any(_has(section, other["fix_words"]) for other in items if other is not item):
                        s.wrong_fix += 1
                    if verbose:
                        print(f"    fix not reached {cid}: {section[:300]!r}")
                for other in items:
                    for span in other["identifying"]:
                        value = span["text"]
                        if len(value) >= 3 and value.lower() in data.lower() and value.lower() not in message.lower():
                            s.leaks += 1
                            if verbose:
                                print(f"    leak {other['id']} {span['type']}={value!r} in {cid}'s prompt")
                agent.resolve(cid, "Answered.", success=False)


def preferences(embedder: Embedder, changes: list[dict[str, Any]], standing: list[dict[str, Any]], s: Scores,
                verbose: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="fourfold-sealed-") as tmp, Memory.open(Path(tmp), embedder=embedder) as mem:
        agent = SupportAgent(mem, OfflineModel(), share_cases=False)
        for item in changes:
            cid = item["id"]
            agent.turn(cid, "\n".join(item["first_ticket"]))
            agent.resolve(cid, "Sorted out the customer's issue.")
            agent.turn(cid, "\n".join(item["second_ticket"]))
            agent.resolve(cid, "Sorted out the customer's issue.")
            current = " ".join(m.text for m in mem.long_term.all(scope=customer_scope(cid), kinds=("preference",)))
            has_new = _has(current, item["new_value_words"])
            has_old = any(w.lower() in current.lower() for w in item["old_value_words"])
            s.changes += 1
            s.current += has_new and not has_old
            s.stale += has_old
            if verbose and not (has_new and not has_old):
                print(f"    preference {cid} ({item['kind']}): now {current!r}")
        for item in standing:
            cid = item["id"]
            agent.turn(cid, "\n".join(item["first_ticket"]))
            agent.resolve(cid, "Sorted out the customer's issue.")
            own = _data(agent.turn(cid, "\n".join(item["later_ticket"])).report).split(_CASES_HEAD, 1)[0]
            s.standing += 1
            ok = _has(own, item["value_words"])
            s.own += ok
            if verbose and not ok:
                print(f"    standing {cid} ({item['kind']}) {item['value_words']}: {own[:300]!r}")


def covered(text: str, value: str) -> bool | None:
    """Does the detector cover every letter and digit of `value` in `text` (None: not in it)?"""
    at = text.find(value)
    if at < 0:
        return None
    found = detect(text, policy="personal")
    return all(any(r.start <= i < r.end for r in found) for i in range(at, at + len(value)) if text[i].isalnum())


def spans(items: list[dict[str, Any]], s: Scores, verbose: bool) -> None:
    for item in items:
        if item["type"] == "shared_fix":
            texts = [*item["first"]["customer_messages"], item["first"]["operator_note"]]
            gold = item["identifying"]
        else:
            texts = [x["text"] for x in item["sentences"]]
            gold = item["spans"]
            for sentence in item["sentences"]:
                got = [x.role for x in read(sentence["text"]).sentences]
                s.roles += 1
                s.roles_right += ROLES[sentence["role"]] in got
        text = "\n".join(texts)
        for span in gold:
            hit = covered(text, span["text"])
            if hit is None:
                continue
            s.spans += 1
            s.recalled += hit
            if verbose and not hit:
                print(f"    span missed {item['id']} {span['type']}={span['text']!r}")


def variants(text: str, rng: random.Random) -> list[str]:
    """The text with a capitalised first word, lower-cased, with an added greeting, with its
    sentences reordered, and with a typo in one word."""
    out = [text[:1].upper() + text[1:], text.lower(), f"Hi there!\n{text}"]
    parts = re.split(r"(?<=[.!?])\s+", text.strip())
    if len(parts) > 1:
        out.append(" ".join(parts[1:] + parts[:1]))
    words = [m for m in re.finditer(r"[a-z]{5,}", text)]
    if words:
        m = rng.choice(words)
        w = m.group()
        out.append(text[: m.start()] + w[0] + w[2] + w[1] + w[3:] + text[m.end() :])
    return out


def _signature(text: str, gold: Sequence[str], fix_words: Sequence[str]) -> tuple[object, ...]:
    key = preference_key(text) if states_preference(text) else None
    found = tuple(bool(covered(text, g) or covered(text, g.lower())) for g in gold if g.lower() in text.lower())
    kept = ()
    if fix_words:
        fix = extract_case(Ticket("", (), (), text)).fix.lower()
        kept = tuple(w.lower() in fix for w in fix_words)
    return states_preference(text), key, found, kept


def invariance(items: list[dict[str, Any]], s: Scores, verbose: bool, seed: int) -> None:
    rng = random.Random(seed)
    for item in items:
        probes: list[tuple[str, list[str], list[str]]] = []
        if item["type"] == "shared_fix":
            gold = [x["text"] for x in item["identifying"]]
            probes.append((item["first"]["operator_note"], gold, item["fix_words"]))
        elif item["type"] == "sentences":
            probes.append((" ".join(x["text"] for x in item["sentences"]), [x["text"] for x in item["spans"]], []))
        else:
            probes.append((" ".join(item["first_ticket"]), [], []))
        for text, gold, fix_words in probes:
            base = _signature(text, gold, fix_words)
            for variant in variants(text, rng):
                s.variants += 1
                got = _signature(variant, gold, fix_words)
                s.agreed += got == base
                if verbose and got != base:
                    print(f"    variant of {item['id']} disagrees: {base} -> {got}: {variant[:120]!r}")


def run(path: Path, embedder: Embedder, *, verbose: bool = False, seed: int = 14,
        progress: Callable[[str], None] = print) -> Scores:
    items = load(path)
    s = Scores()
    by_type = {t: [i for i in items if i["type"] == t] for t in ("shared_fix", "preference_change",
                                                                 "standing_preference", "sentences")}
    spans(by_type["shared_fix"] + by_type["sentences"], s, verbose)
    progress(f"  spans: {s.recalled}/{s.spans} recalled; sentence roles {s.roles_right}/{s.roles}")
    invariance(items, s, verbose, seed)
    progress(f"  invariance: {s.agreed}/{s.variants} variants agree")
    preferences(embedder, by_type["preference_change"], by_type["standing_preference"], s, verbose)
    progress(f"  preferences: {s.current}/{s.changes} changed and current, {s.stale} stale; "
             f"standing {s.own}/{s.standing}")
    shared_fixes(embedder, by_type["shared_fix"], s, verbose)
    progress(f"  shared fixes: {s.intact}/{s.firsts} intact, {s.reached}/{s.later} later customers reached, "
             f"{s.wrong_fix} wrong, {s.leaks} leaks")
    return s
