"""Consolidation on write (issue 14, part 3): restatements of a current memory do not pile up."""

from __future__ import annotations

import json

import pytest

from fourfold.embeddings import HashEmbedder
from fourfold.longterm import LongTermMemory, MemoryInput
from fourfold.longterm.consolidate import ModelConsolidator, SimilarityConsolidator
from fourfold.models import ScriptedModel
from fourfold.stores.vector import VectorStore

S = "customer:7"
WORDINGS = ["Prefers email", "Prefers email please", "Prefers email, always", "Prefers to get email",
            "Prefers email updates"]


@pytest.fixture
def lt(vector_store: VectorStore, embedder: HashEmbedder) -> LongTermMemory:
    # the hash embedder's cosine of these wordings is 0.6-0.8; a distinct fact's is under 0.45
    return LongTermMemory(vector_store, embedder, consolidator=SimilarityConsolidator(threshold=0.55))


def test_five_wordings_come_back_as_one_memory(lt: LongTermMemory) -> None:
    ids = [lt.remember(text, scope=S, kind="preference") for text in WORDINGS]
    other = lt.remember("Owns a dog", scope=S, kind="preference")
    phone = lt.remember("Prefers phone calls", scope=S, kind="preference")
    assert sorted(m.text for m in lt.all(scope=S)) == ["Owns a dog", "Prefers email updates", "Prefers phone calls"]
    assert [h.text for h in lt.history(ids[-1])] == WORDINGS  # every wording stays in the history
    assert all(ids[i + 1].supersedes == (ids[i],) for i in range(4))
    assert other.supersedes == () and phone.supersedes == ()
    # the same kind only, and the same scope only
    lt.remember("Prefers email updates too", scope=S, kind="note")
    lt.remember("Prefers email updates too", scope="customer:8", kind="preference")
    assert len(lt.all(scope=S)) == 4 and len(lt.all(scope="customer:8")) == 1


def test_wordings_in_one_batch_consolidate_too(lt: LongTermMemory) -> None:
    done = lt.remember_many([MemoryInput(text, S, "preference") for text in WORDINGS] + [MemoryInput("Owns a dog", S)])
    assert sorted(m.text for m in lt.all(scope=S)) == ["Owns a dog", "Prefers email updates"]
    assert done[1].supersedes == (done[0].id,)


def test_keyed_writes_and_writes_without_a_consolidator_are_not_judged(
    vector_store: VectorStore, embedder: HashEmbedder
) -> None:
    lt = LongTermMemory(vector_store, embedder)
    for text in WORDINGS[:3]:
        lt.remember(text, scope=S, kind="preference")
    assert len(lt.all(scope=S)) == 3  # off unless asked for
    lt.remember_many([MemoryInput(t, "s2", "preference") for t in WORDINGS[:2]],
                     consolidate=SimilarityConsolidator(threshold=0.55))  # per call
    assert len(lt.all(scope="s2")) == 1
    judged = LongTermMemory(vector_store, embedder, consolidator=SimilarityConsolidator(threshold=0.55))
    judged.remember("Prefers email", scope="s3", kind="preference", key="contact")
    judged.remember("Prefers email please", scope="s3", kind="preference", key="language")
    assert len(judged.all(scope="s3")) == 2  # their keys say what they replace


def test_a_model_judges_a_whole_batch_in_one_call(vector_store: VectorStore, embedder: HashEmbedder) -> None:
    lt = LongTermMemory(vector_store, embedder)
    email = lt.remember("Prefers email", scope=S, kind="preference")
    dog = lt.remember("Owns a dog called Rex", scope=S, kind="fact")
    model = ScriptedModel([json.dumps({"decisions": [
        {"item": 1, "action": "update", "target": email},
        {"item": 2, "action": "skip", "target": dog},
    ]})])
    done = lt.remember_many(
        [MemoryInput("Prefers email, but only on weekdays", S, "preference"),
         MemoryInput("Has a dog named Rex", S, "fact"),
         MemoryInput("Lives in Oslo", "elsewhere", "fact")],  # nothing similar: added without asking
        consolidate=ModelConsolidator(model),
    )
    assert len(model.requests) == 1
    prompt = model.requests[0]["messages"][0]["content"]
    assert "Prefers email, but only on weekdays" in prompt and f"existing {email}" in prompt and "Oslo" not in prompt
    assert done[0].supersedes == (email,) and done[0].created
    assert (done[1].id, done[1].created) == (dog, False)
    assert done[2].created and done[2].supersedes == ()
    assert sorted(m.text for m in lt.all(scope=S)) == ["Owns a dog called Rex", "Prefers email, but only on weekdays"]


def test_an_unreadable_or_wrong_answer_falls_back_to_the_similarity_rule(
    vector_store: VectorStore, embedder: HashEmbedder
) -> None:
    lt = LongTermMemory(vector_store, embedder)
    first = lt.remember("Prefers email", scope=S, kind="preference")
    answers = ("I think you should add it", json.dumps({"decisions": [
        {"item": 1, "action": "update", "target": "mem_not_shown"}]}))
    for answer, text in zip(answers, ("Prefers email please", "Prefers email, always"), strict=True):
        model = ScriptedModel([answer])
        judge = ModelConsolidator(model, fallback=SimilarityConsolidator(threshold=0.55))
        done = lt.remember(text, scope=S, kind="preference", consolidate=judge)
        assert len(model.requests) == 1
        assert done.supersedes == (first,)  # the similarity rule's update
        first = done
    assert [m.text for m in lt.all(scope=S)] == ["Prefers email, always"]


def test_the_learning_benchmark_runs_short_and_prints_its_line() -> None:
    import re
    import subprocess
    import sys
    from pathlib import Path

    bench = Path(__file__).parent.parent / "benchmarks" / "learning.py"
    out = subprocess.run([sys.executable, str(bench), "--embedder", "hash", "--types", "2", "--per-kind", "1"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    last = out.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"learning: learn=[\d.]+ wrong_fix=0 pii_leaks=0 pref_current=[\d.]+ dup_rate=[\d.]+ "
                        r"false_merge=[\d.]+", last), last
