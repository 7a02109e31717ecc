"""The support agent and memory versions: dated memories in the prompt, keyed preferences
that replace each other, and the demo that shows it (issue 14, parts 4 and 7)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fourfold import Memory
from fourfold.agent import DATA_CLOSE, DATA_OPEN, SupportAgent, customer_scope
from fourfold.agent.prompt import PromptParts, assemble_system
from fourfold.embeddings import HashEmbedder
from fourfold.models import ScriptedModel
from fourfold.types import Recalled


@pytest.fixture
def mem(tmp_path: Path) -> Memory:
    m = Memory.open(tmp_path / "data", embedder=HashEmbedder())
    yield m  # type: ignore[misc]
    m.close()


def memory_lines(system: str) -> list[str]:
    lines = system.splitlines()
    block = lines[lines.index(DATA_OPEN) + 1 : lines.index(DATA_CLOSE)]
    start = block.index("# Known about this customer") + 1
    end = next(i for i in range(start, len(block)) if block[i].startswith("# "))
    return [json.loads(line) for line in block[start:end]]


def test_each_memory_line_starts_with_the_date_its_version_became_true() -> None:
    march = datetime(2024, 3, 1, 9, 30, tzinfo=UTC).timestamp()
    parts = PromptParts(memories=[
        Recalled("m1", "Prefers text messages", "preference", "c", 1.0, created_at=march + 86_400, valid_from=march),
        Recalled("m2", "Met at the fair", "note", "c", 1.0, {"occurred_at": "2023-05-08T18:00+02:00"},
                 created_at=march, valid_from=datetime(2023, 5, 8, 16, tzinfo=UTC).timestamp()),
        Recalled("m3", "Plain note", "note", "c", 1.0, created_at=march),
    ])
    assert memory_lines(assemble_system(parts)) == [
        "[2024-03-01 09:30 UTC] Prefers text messages",  # valid_from, not when it was stored
        "[2023-05-08 18:00 UTC+0200] Met at the fair",  # its own date, in its own zone
        "[2024-03-01 09:30 UTC] Plain note",
    ]


def test_the_prompt_carries_only_the_current_version_with_its_date(mem: Memory) -> None:
    scope = customer_scope("ann")
    mem.long_term.remember("Prefers email for updates", scope=scope, kind="preference", key="contact_channel",
                           valid_from=datetime(2024, 1, 5, tzinfo=UTC))
    mem.long_term.remember("Prefers text messages for updates", scope=scope, kind="preference",
                           key="contact_channel", valid_from=datetime(2024, 6, 1, tzinfo=UTC))
    model = ScriptedModel(["noted"])
    SupportAgent(mem, model).turn("ann", "How will you send me updates, email or text messages?")
    assert memory_lines(model.requests[0]["system"]) == ["[2024-06-01 00:00 UTC] Prefers text messages for updates"]
