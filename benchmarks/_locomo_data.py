"""LoCoMo loader and retrieval metrics, free of models so that tests of them run in milliseconds.

Only what a memory system would see becomes a `Turn`; questions, answers and evidence live in
`Question` and must never be indexed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORY_NAMES",
    "GROUPS",
    "Conversation",
    "Dataset",
    "EvidenceFix",
    "Question",
    "Scores",
    "Turn",
    "all_evidence",
    "load",
    "parse_session_date",
    "score",
    "turn_recall",
]

CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
#: Rows of every result table, in print order.
GROUPS = ("cat1", "cat2", "cat3", "cat4", "cat5", "cat1-4", "all")

_SESSION_KEY = re.compile(r"session_(\d+)")
# Accepts "D8:6" and the malformed "D:11:26"; int() later turns "D30:05" into "D30:5".
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")
_EVIDENCE_SEPARATOR = re.compile(r"[;,\s]+")


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialogue turn, as a memory system would see it."""

    dia_id: str
    session: int
    session_date: str
    speaker: str
    text: str
    blip_caption: str | None = None

    @property
    def memory_text(self) -> str:
        """The text every method indexes: speaker, words, and the caption of a shared photo."""
        out = f"{self.speaker}: {self.text}"
        if self.blip_caption:
            out += f" [shares a photo: {self.blip_caption}]"
        return out

    @property
    def metadata(self) -> dict[str, str | int]:
        """What an agent would attach to a chat turn: its id, session, date and speaker.

        `occurred_at` is the session date in ISO 8601 (absent when it does not parse), the key
        fourfold reads a memory's own date from.
        """
        out: dict[str, str | int] = {
            "dia_id": self.dia_id,
            "session": self.session,
            "session_date": self.session_date,
            "speaker": self.speaker,
        }
        occurred = parse_session_date(self.session_date)
        if occurred is not None:
            out["occurred_at"] = occurred.isoformat(timespec="minutes")
        return out


def parse_session_date(text: str) -> datetime | None:
    """LoCoMo's "1:56 pm on 8 May, 2023" as a naive datetime; None when it does not parse."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Question:
    """One QA item; `evidence` holds repaired dia_ids that exist in the conversation."""

    sample_id: str
    question: str
    category: int
    evidence: tuple[str, ...]
    answer: str  # `adversarial_answer` for category 5; never used for retrieval


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: int  # sessions that have turns
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@dataclass(frozen=True, slots=True)
class EvidenceFix:
    """One evidence id that was rewritten (`result` set) or dropped (`result` None)."""

    sample_id: str
    question: str
    raw: str
    result: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class Dataset:
    conversations: tuple[Conversation, ...]
    fixes: tuple[EvidenceFix, ...]

    @property
    def repaired(self) -> int:
        return sum(1 for f in self.fixes if f.result is not None)

    @property
    def dropped(self) -> int:
        return sum(1 for f in self.fixes if f.result is None)

    @property
    def questions(self) -> list[Question]:
        return [q for c in self.conversations for q in c.questions]


def load(path: Path, *, sample_ids: Collection[str] | None = None) -> Dataset:
    """Read a LoCoMo JSON file, keeping the conversations named in `sample_ids` (all if None)."""
    raw: list[dict[str, Any]] = json.loads(Path(path).read_text(encoding="utf-8"))
    if sample_ids is not None:
        known = {item["sample_id"] for item in raw}
        unknown = sorted(set(sample_ids) - known)
        if unknown:
            raise ValueError(f"unknown conversations {unknown}; the file has {sorted(known)}")
        raw = [item for item in raw if item["sample_id"] in sample_ids]
    conversations: list[Conversation] = []
    fixes: list[EvidenceFix] = []
    for item in raw:
        conversation, conversation_fixes = _parse_conversation(item)
        conversations.append(conversation)
        fixes.extend(conversation_fixes)
    return Dataset(tuple(conversations), tuple(fixes))


def _parse_conversation(item: dict[str, Any]) -> tuple[Conversation, list[EvidenceFix]]:
    sample_id = str(item["sample_id"])
    conv = item["conversation"]
    numbers = sorted(int(m.group(1)) for key in conv if (m := _SESSION_KEY.fullmatch(key)))
    turns: list[Turn] = []
    sessions = 0
    for n in numbers:
        session_turns = conv.get(f"session_{n}") or []
        if not session_turns:
            continue  # some sessions have a date but no turns
        sessions += 1
        date = str(conv.get(f"session_{n}_date_time", ""))
        for t in session_turns:
            turns.append(
                Turn(
                    dia_id=str(t["dia_id"]),
                    session=n,
                    session_date=date,
                    speaker=str(t["speaker"]),
                    text=str(t["text"]).strip(),
                    blip_caption=t.get("blip_caption") or None,
                )
            )
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    fixes: list[EvidenceFix] = []
    for qa in item.get("qa", []):
        evidence: list[str] = []
        for raw_id in qa.get("evidence") or []:
            for dia_id, fix in _repair(str(raw_id), known):
                if fix is not None:
                    fixes.append(EvidenceFix(sample_id, str(qa["question"]), *fix))
                if dia_id is not None and dia_id not in evidence:
                    evidence.append(dia_id)
        answer = qa.get("answer", qa.get("adversarial_answer", ""))
        questions.append(
            Question(
                sample_id=sample_id,
                question=str(qa["question"]),
                category=int(qa["category"]),
                evidence=tuple(evidence),
                answer=str(answer),
            )
        )
    speakers = (str(conv.get("speaker_a", "")), str(conv.get("speaker_b", "")))
    conversation = Conversation(sample_id, speakers, sessions, tuple(turns), tuple(questions))
    return conversation, fixes


def _repair(
    raw: str, known: Collection[str]
) -> list[tuple[str | None, tuple[str, str | None, str] | None]]:
    """Turn one evidence string into (dia_id or None, fix or None) pairs, one per id it names."""
    out: list[tuple[str | None, tuple[str, str | None, str] | None]] = []
    parts = [p for p in _EVIDENCE_SEPARATOR.split(raw.strip()) if p]
    for part in parts or [raw]:
        m = _EVIDENCE_ID.fullmatch(part)
        if m is None:
            out.append((None, (raw, None, "malformed")))
            continue
        dia_id = f"D{int(m.group(1))}:{int(m.group(2))}"
        if dia_id not in known:
            out.append((None, (raw, None, f"no turn {dia_id}")))
        elif dia_id != raw:
            out.append((dia_id, (raw, dia_id, "split" if len(parts) > 1 else "reformatted")))
        else:
            out.append((dia_id, None))
    return out


# --- metrics ---------------------------------------------------------------------------------


def turn_recall(ranked: Sequence[str], evidence: Collection[str], k: int) -> float:
    """The share of `evidence` found in the first k of `ranked`."""
    if not evidence:
        raise ValueError("turn recall is undefined without evidence")
    top = set(ranked[:k])
    return sum(1 for e in evidence if e in top) / len(evidence)


def all_evidence(ranked: Sequence[str], evidence: Collection[str], k: int) -> bool:
    """Whether every evidence turn is in the first k of `ranked`."""
    if not evidence:
        raise ValueError("all-evidence is undefined without evidence")
    return set(evidence) <= set(ranked[:k])


@dataclass(frozen=True, slots=True)
class Scores:
    """Averages over the `n` questions with evidence in one group (NaN when n is 0)."""

    n: int
    recall: dict[int, float]
    all_evidence: dict[int, float]


def score(
    results: Iterable[tuple[Question, Sequence[str]]], ks: Sequence[int]
) -> dict[str, Scores]:
    """Turn recall@k and all-evidence@k per group of `GROUPS`; questions without evidence skipped."""
    members: dict[str, list[tuple[Question, Sequence[str]]]] = {g: [] for g in GROUPS}
    for question, ranked in results:
        if not question.evidence:
            continue
        groups = [f"cat{question.category}", "all"]
        if 1 <= question.category <= 4:
            groups.append("cat1-4")
        for g in groups:
            if g in members:
                members[g].append((question, ranked))
    return {g: _average(items, ks) for g, items in members.items()}


def _average(items: Sequence[tuple[Question, Sequence[str]]], ks: Sequence[int]) -> Scores:
    n = len(items)
    if n == 0:
        return Scores(0, dict.fromkeys(ks, math.nan), dict.fromkeys(ks, math.nan))
    recall = {k: sum(turn_recall(r, q.evidence, k) for q, r in items) / n for k in ks}
    every = {k: sum(all_evidence(r, q.evidence, k) for q, r in items) / n for k in ks}
    return Scores(n, recall, every)
