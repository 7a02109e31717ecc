"""Consolidation on write: restatements of a current memory do not pile up."""

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


@pytest.mark.slow
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


# -- a preference that says it is a change ---------------------------------------------------------

THEME = "Customer said: I'd prefer the dark theme in the app."
EUROS = "Customer said: I'd prefer prices in euros."


@pytest.fixture
def changing(vector_store: VectorStore, embedder: HashEmbedder) -> LongTermMemory:
    # hash-embedder cosines: theme/theme 0.79-0.93, euros/dollars 0.78, theme/prices 0.42-0.63
    judge = SimilarityConsolidator(threshold=0.95, change_threshold=0.7)
    return LongTermMemory(vector_store, embedder, consolidator=judge)


def test_a_signalled_change_replaces_the_most_similar_current_preference(changing: LongTermMemory) -> None:
    theme = changing.remember(THEME, scope=S, kind="preference")
    euros = changing.remember(EUROS, scope=S, kind="preference")
    light = changing.remember("Customer said: I'd rather have the light theme in the app now.", scope=S, kind="preference")
    dollars = changing.remember("Customer said: I'd prefer prices in dollars from now on.", scope=S, kind="preference")
    assert light.supersedes == (theme,) and dollars.supersedes == (euros,)  # each its own kind, no key needed
    assert sorted(m.text for m in changing.all(scope=S)) == sorted([
        "Customer said: I'd rather have the light theme in the app now.",
        "Customer said: I'd prefer prices in dollars from now on."])
    assert changing.history(light)[0].text == THEME  # the old one stays in the history


def test_without_a_signal_or_outside_preferences_the_ordinary_threshold_holds(changing: LongTermMemory) -> None:
    changing.remember(THEME, scope=S, kind="preference")
    plain = changing.remember("Customer said: I'd prefer the light theme in the app.", scope=S, kind="preference")
    assert plain.supersedes == ()  # 0.93 similar, under 0.95: two preferences may hold at once
    changing.remember(THEME, scope="notes", kind="note")
    note = changing.remember("Customer said: I'd rather have the light theme in the app now.", scope="notes", kind="note")
    assert note.supersedes == ()  # only preferences change by signal
    off = SimilarityConsolidator(threshold=0.95, change_threshold=None)
    changing.remember(EUROS, scope="off", kind="preference")
    assert changing.remember("Customer said: I'd prefer prices in dollars from now on.", scope="off", kind="preference",
                             consolidate=off).supersedes == ()


def test_a_signalled_preference_of_another_kind_replaces_nothing(changing: LongTermMemory) -> None:
    changing.remember(THEME, scope=S, kind="preference")
    dollars = changing.remember("Customer said: I'd prefer prices in dollars from now on.", scope=S, kind="preference")
    assert dollars.supersedes == ()  # 0.49 similar to the theme: under the change threshold
    assert len(changing.all(scope=S)) == 2


# -- the words in which two memories differ ---------------------------------------------------------


def test_differing_words_are_what_remains_between_the_shared_start_and_end() -> None:
    from fourfold.longterm.consolidate import differing_words

    assert differing_words("Has a dog at home", "Has a cat at home") == ("dog", "cat")
    assert differing_words("Owns a dog", "Their pet is a dog") == ("owns", "pet")
    assert differing_words("Prefers email", "Prefers email please") == ("", "please")
    assert differing_words("Prefers email", "prefers EMAIL.") == ("", "")


def test_below_the_threshold_a_memory_merges_only_when_its_differing_words_are_close(
    vector_store: VectorStore, embedder: HashEmbedder
) -> None:
    # hash-embedder cosines: the texts 0.74 and 0.69; their differing words 0.26 ("organises" /
    # "organizes", one word spelled two ways) and 0.03 ("x200 router" / "z5 printer")
    judge = SimilarityConsolidator(threshold=0.95, reword_threshold=0.6, reword_difference=0.2)
    lt = LongTermMemory(vector_store, embedder, consolidator=judge)
    first = lt.remember("Organises a yearly workshop", scope=S, kind="fact")
    assert lt.remember("Organizes a yearly workshop", scope=S, kind="fact").supersedes == (first,)
    router = lt.remember("Has the X200 router, bought in 2024", scope=S, kind="fact")
    printer = lt.remember("Has the Z5 printer, bought in 2024", scope=S, kind="fact")
    assert printer.supersedes == () and len(lt.all(scope=S)) == 3
    off = SimilarityConsolidator(threshold=0.95, reword_threshold=None)
    assert lt.remember("Organises a yearly workshop", scope="s2", kind="fact", consolidate=off).supersedes == ()
    assert lt.remember("Organizes a yearly workshop", scope="s2", kind="fact", consolidate=off).supersedes == ()
    assert router in {m.id for m in lt.all(scope=S)}


def test_a_memory_that_only_adds_words_is_not_judged_by_its_differing_words() -> None:
    from fourfold.longterm.consolidate import Candidate, Similar

    judge = SimilarityConsolidator(threshold=0.95, reword_threshold=0.6, reword_difference=0.2)
    added = Candidate("Owns a dog and a cat", "fact", S, (Similar("m1", "Owns a dog", 0.8, None),))
    reworded = Candidate("Their pet is a dog", "fact", S, (Similar("m1", "Owns a dog", 0.8, 0.7),))
    far = Candidate("Their pet is a dog", "fact", S, (Similar("m1", "Owns a dog", 0.5, 0.9),))
    assert [j.action for j in judge.judge([added, reworded, far])] == ["add", "update", "add"]


def test_the_model_s_fallback_judges_differing_words_as_it_would_alone(
    vector_store: VectorStore, embedder: HashEmbedder
) -> None:
    lt = LongTermMemory(vector_store, embedder)
    first = lt.remember("Organises a yearly workshop", scope=S, kind="fact")
    model = ScriptedModel(["no JSON here"])
    fallback = SimilarityConsolidator(threshold=0.95, reword_threshold=0.6, reword_difference=0.2)
    done = lt.remember("Organizes a yearly workshop", scope=S, kind="fact",
                       consolidate=ModelConsolidator(model, fallback=fallback))
    assert len(model.requests) == 1 and done.supersedes == (first,)  # 0.74 similar: by its differing words


def test_a_write_chooses_its_consolidation(vector_store: VectorStore, embedder: HashEmbedder) -> None:
    """consolidate=True is the offline judge, False none (over the memory's own), anything else a typed error."""
    from fourfold.errors import InvalidInput

    plain = LongTermMemory(vector_store, embedder)
    first = plain.remember("Prefers email", scope=S, kind="preference")
    again = plain.remember("Prefers email!", scope=S, kind="preference", consolidate=True)
    assert again.supersedes == (first,) and [m.text for m in plain.all(scope=S)] == ["Prefers email!"]
    judged = LongTermMemory(vector_store, embedder, consolidator=SimilarityConsolidator(threshold=0.55))
    kept = judged.remember("Prefers email!!", scope=S, kind="preference", consolidate=False)
    assert kept.supersedes == () and len(judged.all(scope=S)) == 2
    with pytest.raises(InvalidInput, match="consolidate must be a Consolidator"):
        plain.remember("Prefers text", scope=S, kind="preference", consolidate="yes")  # type: ignore[arg-type]
    assert len(plain.all(scope=S)) == 2  # nothing written by the refused call
