"""The real default embedder: loads offline from the installed package, and ranks by meaning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import OpenMemory
from fourfold.embeddings import MiniLMEmbedder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    from fourfold.embeddings import default_embedder

    return default_embedder()  # type: ignore[no-any-return]


def test_loads_with_the_hub_unreachable(tmp_path: Path) -> None:
    """A fresh process with an empty HF cache, hub offline and no proxy route still embeds."""
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    code = "from fourfold.embeddings import MiniLMEmbedder; v = MiniLMEmbedder().embed('hello'); print(v.shape)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "(384,)"


def test_vectors_are_unit_length_and_deterministic(minilm: MiniLMEmbedder) -> None:
    a = minilm.embed_many(["The refund went back to my card.", "The refund went back to my card."])
    assert a.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(a[0], a[1], atol=1e-6)


def test_semantically_close_text_ranks_first(minilm: MiniLMEmbedder, open_memory: OpenMemory) -> None:
    mem = open_memory(embedder=minilm)
    for text in [
        "Customer prefers to be contacted by e-mail rather than telephone",
        "The warehouse in Rotterdam closes at 6pm",
        "Invoices are generated on the first day of each month",
        "Two-factor authentication was reset after the phone was lost",
    ]:
        mem.long_term.remember(text, scope="c")
    hits = mem.long_term.recall("how should we reach this person? they dislike calls", scope="c", k=4)
    assert hits[0].text.startswith("Customer prefers to be contacted by e-mail")
    hits = mem.long_term.recall("when is the monthly bill created", scope="c", k=4)
    assert hits[0].text.startswith("Invoices are generated")


def test_consolidation_merges_a_rewording_and_keeps_a_distinct_near_miss(minilm: MiniLMEmbedder) -> None:
    """With the defaults calibrated for MiniLM (benchmarks/learning.py): "Owns a dog" and "Owns a
    cat" score about as high as a rewording, their differing words tell them apart."""
    from fourfold.longterm import LongTermMemory
    from fourfold.longterm.consolidate import SimilarityConsolidator
    from fourfold.stores import InMemoryVectorStore

    lt = LongTermMemory(InMemoryVectorStore(embedder_identity=minilm.identity), minilm,
                        consolidator=SimilarityConsolidator())
    spanish = lt.remember("Speaks Spanish", scope="c", kind="fact")
    # 0.77 similar, under 0.84; "speaks" / "talk" 0.68 similar: a rewording
    alone = SimilarityConsolidator(reword_threshold=None)
    assert lt.remember("Can talk in Spanish", scope="d", kind="fact", consolidate=alone).supersedes == ()
    assert lt.remember("Can talk in Spanish", scope="c", kind="fact").supersedes == (spanish,)
    assert lt.remember("Speaks German", scope="c", kind="fact").supersedes == ()  # another language
    theme = lt.remember("Customer said: I'd prefer the dark theme in the app.", scope="c", kind="preference")
    light = lt.remember("Customer said: I'd rather have the light theme in the app now.", scope="c", kind="preference")
    assert light.supersedes == (theme,)
    assert lt.remember("Customer said: I'd prefer prices in dollars from now on.", scope="c",
                       kind="preference").supersedes == ()


@pytest.mark.parametrize("wordings", [
    ["Prefers email", "Likes to be contacted by email", "Wants us to reach them via e-mail",
     "Email is their preferred contact channel", "Would rather get emails than anything else"],
    # the last is only 0.24-0.43 similar to the others: it names the same attribute and value,
    # and the slot threshold (0.30) is calibrated on wordings like it, so it merges
    ["Prefers email", "Prefers to be contacted by email", "Likes getting emails rather than calls",
     "Email is the preferred contact method", "Please reach this customer via email"],
])
def test_five_unkeyed_wordings_of_a_preference_come_back_as_one(minilm: MiniLMEmbedder, wordings: list[str]) -> None:
    """The default offline judge on MiniLM: wordings that name one slot (contact channel =
    email) merge; another value of that slot or the same value for another thing stays apart,
    however close it embeds."""
    from fourfold.longterm import LongTermMemory
    from fourfold.longterm.consolidate import SimilarityConsolidator
    from fourfold.stores import InMemoryVectorStore

    lt = LongTermMemory(InMemoryVectorStore(embedder_identity=minilm.identity), minilm)
    for text in wordings:
        lt.remember(text, scope="c", kind="preference", consolidate=True)
    assert [m.text for m in lt.all(scope="c")] == [wordings[-1]]
    assert [h.text for h in lt.history(lt.all(scope="c")[0].id)] == wordings
    for text in ("Prefers phone calls", "Prefers email for invoices"):
        assert lt.remember(text, scope="c", kind="preference", consolidate=True).supersedes == ()
    assert len(lt.all(scope="c")) == 3
    # without slots the same judge piles the wordings up: the slots are what merges them
    for text in wordings:
        lt.remember(text, scope="off", kind="preference", consolidate=SimilarityConsolidator(slot_threshold=None))
    assert len(lt.all(scope="off")) > 1

