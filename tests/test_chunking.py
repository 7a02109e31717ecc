"""Markdown-aware chunking: coverage, limits, headings, code fences and overlap."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fourfold.errors import InvalidInput
from fourfold.semantic.chunking import Chunk, chunk_text

SENTENCE = "The refund window is thirty days for card payments made online. "


def check_invariants(text: str, chunks: list[Chunk], max_chars: int) -> None:
    """What every chunking must satisfy, whatever the input."""
    assert [c.position for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.text == text[chunk.start : chunk.end]
        assert chunk.text.strip()
        assert len(chunk.text) <= max_chars
    starts = [c.start for c in chunks]
    assert starts == sorted(starts)


def fence_lines(text: str) -> int:
    return sum(1 for line in text.split("\n") if line.strip().startswith("```"))


# --- properties ----------------------------------------------------------------------------

words = st.text(alphabet="abcdefghij.!?#`-*0", min_size=1, max_size=15)
separators = st.sampled_from([" ", " ", " ", "\n", "\n\n", ". ", "\n# ", "\n## ", "\n```\n", "\t"])


@st.composite
def documents(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(words, separators), max_size=200))
    return "".join(w + s for w, s in parts)


@settings(max_examples=300, deadline=None)
@given(
    text=documents(),
    max_chars=st.integers(100, 400),
    overlap_share=st.floats(0, 0.49),
)
def test_every_word_is_kept_and_limits_hold(
    text: str, max_chars: int, overlap_share: float
) -> None:
    overlap = int(max_chars * overlap_share)
    chunks = chunk_text(text, max_chars=max_chars, overlap=overlap)
    check_invariants(text, chunks, max_chars)
    for word in text.split():
        assert any(word in c.text for c in chunks), word
    assert bool(chunks) == bool(text.strip())


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=2000), max_chars=st.integers(100, 300))
def test_arbitrary_text_never_breaks_invariants(text: str, max_chars: int) -> None:
    chunks = chunk_text(text, max_chars=max_chars, overlap=max_chars // 4)
    check_invariants(text, chunks, max_chars)
    covered = "".join(text[c.start : c.end] for c in chunks)
    assert set(covered) >= {ch for ch in text if not ch.isspace()}


@settings(max_examples=100, deadline=None)
@given(
    blocks=st.lists(
        st.one_of(
            st.lists(st.sampled_from(["x = 1", "# comment", "", "print('a. b')"]), max_size=6).map(
                lambda lines: "```py\n" + "\n".join(lines) + "\n```"
            ),
            st.integers(1, 8).map(lambda n: SENTENCE * n),
            st.sampled_from(["# Title", "## Part"]),
        ),
        max_size=25,
    )
)
def test_small_code_blocks_are_never_split(blocks: list[str]) -> None:
    text = "\n\n".join(blocks)
    chunks = chunk_text(text, max_chars=600, overlap=150)
    check_invariants(text, chunks, 600)
    for block in blocks:
        if block.startswith("```"):
            assert any(block in c.text for c in chunks)
    for chunk in chunks:
        assert fence_lines(chunk.text) % 2 == 0, chunk.text


# --- examples ------------------------------------------------------------------------------


def test_plain_text_without_headings() -> None:
    text = "\n\n".join(SENTENCE * 3 for _ in range(10))
    chunks = chunk_text(text, max_chars=500, overlap=100)
    assert len(chunks) > 1
    assert {c.heading for c in chunks} == {""}
    check_invariants(text, chunks, 500)


def test_short_text_is_one_chunk() -> None:
    assert chunk_text("  Hello there.\n") == [Chunk("Hello there.", 0, "", 2, 14)]


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n"])
def test_blank_text_has_no_chunks(text: str) -> None:
    assert chunk_text(text) == []


def test_heading_paths_are_carried() -> None:
    text = (
        "Preamble line.\n\n"
        "# Refunds\nGeneral refund rules.\n\n"
        "## Card payments ##\nCards take 5 days.\n\n"
        "### Amex\nAmex takes 7.\n\n"
        "## Bank transfer\nTransfers take 3 days.\n\n"
        "# Shipping\nShips in 2 days.\n"
    )
    chunks = chunk_text(text)
    assert [(c.heading, c.text.splitlines()[-1]) for c in chunks] == [
        ("", "Preamble line."),
        ("Refunds", "General refund rules."),
        ("Refunds > Card payments", "Cards take 5 days."),
        ("Refunds > Card payments > Amex", "Amex takes 7."),
        ("Refunds > Bank transfer", "Transfers take 3 days."),
        ("Shipping", "Ships in 2 days."),
    ]
    assert chunks[2].text.startswith("## Card payments")


def test_heading_without_body_joins_the_next_section() -> None:
    chunks = chunk_text("# Policies\n\n## Refunds\nThirty days.\n\n# Last\n")
    assert [(c.heading, c.text) for c in chunks] == [
        ("Policies > Refunds", "# Policies\n\n## Refunds\nThirty days."),
        ("Last", "# Last"),
    ]


def test_not_headings() -> None:
    text = "#hashtag is not a heading\n\n    # indented code\n\n####### seven hashes"
    assert {c.heading for c in chunk_text(text)} == {""}


def test_hash_lines_inside_code_are_not_headings() -> None:
    text = "# Setup\n```bash\n# install it\npip install fourfold\n```\nDone.\n"
    chunks = chunk_text(text)
    assert [c.heading for c in chunks] == ["Setup"]
    assert "# install it" in chunks[0].text


def test_code_block_stays_whole_and_is_not_an_overlap_start() -> None:
    code = "```python\n" + "\n".join(f"value_{i} = {i}  # note" for i in range(12)) + "\n```"
    text = SENTENCE * 4 + "\n\n" + code + "\n\n" + SENTENCE * 6
    chunks = chunk_text(text, max_chars=400, overlap=150)
    check_invariants(text, chunks, 400)
    holders = [c for c in chunks if "value_0 = 0" in c.text]
    assert holders and all(code in c.text for c in holders)
    assert all(fence_lines(c.text) % 2 == 0 for c in chunks)


def test_code_block_longer_than_max_is_split_on_lines() -> None:
    lines = [f"line_{i} = {i}" for i in range(80)]
    text = "```\n" + "\n".join(lines) + "\n```"
    chunks = chunk_text(text, max_chars=200, overlap=50)
    check_invariants(text, chunks, 200)
    for line in lines:
        assert any(re.search(rf"(^|\n){line}(\n|$)", c.text) for c in chunks)


def test_unclosed_fence_runs_to_the_end() -> None:
    chunks = chunk_text("Intro.\n```\n# not a heading\ncode")
    assert [c.heading for c in chunks] == [""]
    assert chunks[0].text.endswith("code")


def test_inline_triple_backticks_are_not_a_fence() -> None:
    chunks = chunk_text("```inline``` code\n\n# Real heading\nBody.")
    assert [c.heading for c in chunks] == ["", "Real heading"]


def test_consecutive_chunks_overlap_at_word_boundaries() -> None:
    text = "# Guide\n" + " ".join(f"Sentence number {i} is here." for i in range(200))
    chunks = chunk_text(text, max_chars=500, overlap=120)
    check_invariants(text, chunks, 500)
    assert len(chunks) > 3
    for prev, nxt in itertools.pairwise(chunks):
        shared = prev.end - nxt.start
        assert 60 <= shared <= 120
        assert nxt.text.startswith("Sentence")  # a sentence start was available
        assert nxt.heading == "Guide"


def test_no_overlap_when_zero() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(100))
    chunks = chunk_text(text, max_chars=300, overlap=0)
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.start > prev.end


def test_no_overlap_across_sections() -> None:
    text = "# A\n" + SENTENCE * 10 + "\n# B\n" + SENTENCE * 10
    chunks = chunk_text(text, max_chars=300, overlap=100)
    first_b = next(c for c in chunks if c.heading == "B")
    assert first_b.text.startswith("# B")


def test_long_paragraph_splits_on_sentences() -> None:
    text = "".join(f"Point {i} matters a great deal to us. " for i in range(60)).strip()
    chunks = chunk_text(text, max_chars=300, overlap=0)
    assert len(chunks) > 1
    assert all(c.text.endswith(".") for c in chunks)


def test_huge_word_is_cut_hard() -> None:
    text = "start " + "x" * 1000 + " end"
    chunks = chunk_text(text, max_chars=300, overlap=50)
    check_invariants(text, chunks, 300)
    assert "".join(c.text for c in chunks if "x" in c.text).count("x") >= 1000


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_chars": 99},
        {"max_chars": 100, "overlap": 50},
        {"max_chars": 1000, "overlap": -1},
        {"max_chars": 1000.0},
        {"overlap": True},
    ],
)
def test_bad_options(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        chunk_text("text", **kwargs)  # type: ignore[arg-type]


def test_not_a_string() -> None:
    with pytest.raises(InvalidInput):
        chunk_text(b"bytes")  # type: ignore[arg-type]


def test_crlf_text() -> None:
    text = "# Title\r\n\r\nFirst para.\r\n\r\n## Sub\r\nSecond.\r\n"
    chunks = chunk_text(text)
    assert [c.heading for c in chunks] == ["Title", "Title > Sub"]
    assert chunks[0].text == "# Title\r\n\r\nFirst para."
