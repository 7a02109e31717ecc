"""Isolation: random interleavings of writes, reads, agent turns and forgets over many scopes.

No recall, no similar_successes and no agent prompt for one customer ever shows another
customer's text; forget_scope removes a scope from every store and from the files on disk,
and never touches another scope.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import OpenMemory
from fourfold import Memory
from fourfold.embeddings import HashEmbedder
from harness import reliability as rel

SCOPES = 4
OPS = ["remember", "record", "recall", "similar", "turn", "forget"]
steps = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, SCOPES - 1)), min_size=5, max_size=30)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_no_read_or_prompt_shows_another_scope_and_forget_is_exact(plan: list[tuple[str, int]]) -> None:
    ops = [(op, s, n) for n, (op, s) in enumerate(plan)] + [(op, s, 1000 + s) for s in range(SCOPES) for op in
                                                            ("recall", "similar", "turn")]
    # a fresh data dir per hypothesis example, opened here: open_memory's handles live per test
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Memory.open(tmp, embedder=HashEmbedder()) as mem:
            # vectors/ is checked on its own below: Chroma keeps deleted text in its log.
            assert rel.isolation_leaks(mem, ops, scopes=SCOPES, disk_skip=("vectors",)) == []


def test_forget_scope_erases_every_store_and_leaves_other_scopes_alone(memory: Memory) -> None:
    ops = [(op, s, n) for n, (op, s) in enumerate([(o, s) for s in range(SCOPES) for o in ("remember", "record", "turn")])]
    assert rel.isolation_leaks(memory, [*ops, ("forget", 0, 99), ("recall", 1, 100), ("turn", 2, 101)],
                               scopes=SCOPES, disk_skip=("vectors",)) == []
    assert memory.conversations.load("customer:iso0").messages == ()
    assert len(memory.conversations.load("customer:iso1").messages) == 2
    assert memory.episodes.episodes(scope="customer:iso0") == []
    assert len(memory.episodes.episodes(scope="customer:iso1")) == 1


def test_forget_scope_removes_the_text_from_the_vector_store_files(open_memory: OpenMemory, tmp_path: Path) -> None:
    with open_memory(tmp_path) as mem:
        mem.long_term.remember("Customer zqforgetmezq lives at 12 Harbour Lane", scope="customer:gone")
        mem.long_term.remember("Customer zqkeepmezq lives at 3 Hill Road", scope="customer:stay")
        mem.forget_scope("customer:gone")
    assert rel.on_disk(tmp_path, ["zqkeepmezq"]) != []  # the check can see text in these files
    assert rel.on_disk(tmp_path, ["zqforgetmezq"]) == []


def test_unscoped_episodes_are_shared_but_scoped_ones_never_cross(memory: Memory) -> None:
    shared = memory.episodes.record(goal="Parcel lost in transit", actions=["traced"], outcome="found", success=True)
    mine = memory.episodes.record(goal="Parcel lost zqmine", actions=["traced"], outcome="found", success=True,
                                  scope="customer:a")
    memory.episodes.record(goal="Parcel lost zqtheirs", actions=["traced"], outcome="found", success=True,
                           scope="customer:b")
    got = {e.id for e in memory.episodes.similar_successes("parcel lost", scope="customer:a", k=10)}
    assert got == {shared.id, mine.id}
    assert {e.id for e in memory.episodes.similar_successes("parcel lost", k=10)} == {shared.id}
