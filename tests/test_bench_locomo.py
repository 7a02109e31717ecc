"""The LoCoMo benchmark's loader, metrics and output, on a tiny file (no model loaded)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

# benchmarks/ is a folder of scripts, not a package: import its modules the way the script does.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _locomo_data as data
import locomo

TINY: list[dict[str, Any]] = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:00 pm on 1 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob! I adopted a puppy."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Congrats! Show me a photo."},
                {
                    "speaker": "Ann",
                    "dia_id": "D1:3",
                    "text": "Here he is.",
                    "img_url": ["https://example.invalid/rex.jpg"],
                    "blip_caption": "a photo of a beagle on grass",
                    "query": "beagle puppy",
                },
            ],
            "session_2_date_time": "9:00 am on 3 June, 2023",
            "session_2": [],
            "session_3_date_time": "2:00 pm on 9 June, 2023",
            "session_4_date_time": "8:30 pm on 1 July, 2023",
            "session_4": [
                {"speaker": "Bob", "dia_id": "D4:1", "text": "I started painting sunsets."},
                {"speaker": "Ann", "dia_id": "D4:2", "text": "Lovely. I went hiking."},
            ],
        },
        "qa": [
            {
                "question": "Which puppy did Ann adopt?",
                "answer": "a beagle",
                "evidence": ["D1:1; D1:3"],
                "category": 4,
            },
            {
                "question": "What does Bob paint?",
                "answer": "sunsets",
                "evidence": ["D:4:1"],
                "category": 1,
            },
            {
                "question": "Where did Ann go hiking?",
                "answer": "mountains",
                "evidence": ["D4:02", "D1:2", "D9:9", "D"],
                "category": 2,
            },
            {"question": "How old is Ann?", "answer": 42, "evidence": [], "category": 3},
            {
                "question": "What breed is Bob's cat?",
                "adversarial_answer": "a beagle",
                "evidence": ["D1:3"],
                "category": 5,
            },
        ],
    }
]


@pytest.fixture
def tiny_path(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    return path


def test_loader_skips_sessions_without_turns(tiny_path: Path) -> None:
    (conv,) = data.load(tiny_path).conversations
    assert conv.sessions == 2
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D4:1", "D4:2"]
    assert conv.turns[3].metadata == {
        "dia_id": "D4:1",
        "session": 4,
        "session_date": "8:30 pm on 1 July, 2023",
        "speaker": "Bob",
        "occurred_at": "2023-07-01T20:30",
    }
    assert data.parse_session_date("not a date") is None


def test_memory_text_has_speaker_and_caption_but_no_qa(tiny_path: Path) -> None:
    (conv,) = data.load(tiny_path).conversations
    texts = [t.memory_text for t in conv.turns]
    assert texts[0] == "Ann: Hi Bob! I adopted a puppy."
    assert texts[2] == "Ann: Here he is. [shares a photo: a photo of a beagle on grass]"
    assert not any(q.question in t or "mountains" in t for q in conv.questions for t in texts)


def test_evidence_is_split_reformatted_or_dropped(tiny_path: Path) -> None:
    dataset = data.load(tiny_path)
    adopt, paint, hike, age, cat = dataset.conversations[0].questions
    assert adopt.evidence == ("D1:1", "D1:3")
    assert paint.evidence == ("D4:1",)
    assert hike.evidence == ("D4:2", "D1:2")
    assert age.evidence == ()
    assert cat.evidence == ("D1:3",)
    assert dataset.repaired == 4  # two from the split, D:4:1, D4:02
    assert dataset.dropped == 2  # D9:9 names no turn, "D" is no id at all
    reasons = {(f.raw, f.reason) for f in dataset.fixes if f.result is None}
    assert reasons == {("D9:9", "no turn D9:9"), ("D", "malformed")}


def test_category_5_and_numeric_answers_load(tiny_path: Path) -> None:
    questions = data.load(tiny_path).questions
    assert questions[3].answer == "42"
    assert questions[4].category == 5 and questions[4].answer == "a beagle"


def test_unknown_conversation_is_refused(tiny_path: Path) -> None:
    with pytest.raises(ValueError, match="tiny-1"):
        data.load(tiny_path, sample_ids=["conv-99"])


def test_turn_recall_and_all_evidence_on_hand_made_rankings() -> None:
    ranked = ["D1:1", "D2:2", "D3:3", "D4:4"]
    assert data.turn_recall(ranked, ("D2:2", "D4:4"), 1) == 0.0
    assert data.turn_recall(ranked, ("D2:2", "D4:4"), 2) == 0.5
    assert data.turn_recall(ranked, ("D2:2", "D4:4"), 4) == 1.0
    assert data.turn_recall(ranked[:1], ("D2:2",), 20) == 0.0  # fewer results than k
    assert not data.all_evidence(ranked, ("D1:1", "D3:3"), 2)
    assert data.all_evidence(ranked, ("D1:1", "D3:3"), 3)
    with pytest.raises(ValueError):
        data.turn_recall(ranked, (), 1)


def _q(category: int, evidence: tuple[str, ...]) -> data.Question:
    return data.Question("c", "q?", category, evidence, "a")


def test_score_groups_skip_questions_without_evidence() -> None:
    results = [
        (_q(1, ("A", "B")), ["A", "X", "B"]),  # R@1 .5, R@3 1
        (_q(4, ("C",)), ["X", "C"]),  # R@1 0, R@3 1
        (_q(5, ("D",)), ["D"]),  # adversarial: in "all", not in cat1-4
        (_q(3, ()), ["A"]),  # no evidence: skipped everywhere
    ]
    scores = data.score(results, [1, 3])
    assert scores["cat1-4"].n == 2
    assert scores["cat1-4"].recall == {1: 0.25, 3: 1.0}
    assert scores["cat1-4"].all_evidence == {1: 0.0, 3: 1.0}
    assert scores["all"].n == 3
    assert scores["all"].recall[1] == pytest.approx(0.5)
    assert scores["cat3"].n == 0 and math.isnan(scores["cat3"].recall[1])


def test_bm25_stems_and_ranks_rare_terms_first(tiny_path: Path) -> None:
    (conv,) = data.load(tiny_path).conversations
    bm25 = locomo.BM25()
    bm25.index(conv)
    assert bm25.search("paintings", 3) == ["D4:1"]  # stemmed; turns with no shared word omitted
    assert bm25.search("Ann's adopted puppy", 2)[0] == "D1:1"


def test_main_prints_the_headline_last(tiny_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert locomo.main(["--data", str(tiny_path), "--methods", "bm25", "--k", "1,5"]) == 0
    lines = capsys.readouterr().out.rstrip("\n").splitlines()
    # (1 + 1 + 0.5) / 3: the hiking question's D1:2 shares no word with it.
    assert lines[-1] == "locomo R@10 cat1-4: fourfold=n/a dense=n/a bm25=0.833"
    assert "evidence ids repaired: 4, dropped: 2" in lines


def test_data_path_comes_from_the_environment(
    tiny_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(locomo.DATA_ENV, str(tiny_path))
    assert locomo.main(["--methods", "bm25", "--limit-questions", "1"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("bm25=1.000")
