"""A scope's index is built cheaply (batched tokens, per-term weights, vectorised context) and
ranks exactly as the plain construction does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fourfold.embeddings import HashEmbedder
from fourfold.longterm import LongTermMemory, MemoryInput
from fourfold.longterm.retrieval import ScopeIndex, Weights, _neighbour_plan, _runs
from fourfold.ranking.bm25 import BM25Index
from fourfold.ranking.terms import ContextTerms, neighbour_lists
from fourfold.stores.sqlite import SQLiteDatabase, SQLiteVectorStore
from fourfold.stores.vector import NO_VECTOR, VectorRecord
from fourfold.text import memory_date, time_words, tokenize
from fourfold.text.tokenize import tokenize_many

EMBEDDER = HashEmbedder()


def _neighbours(records: list[VectorRecord], weights: Weights) -> list[list[tuple[int, float]]]:
    """The plain definition: each record's neighbours along its run, one at each distance
    before it and after it (the one before first), as (index, share), nearest first."""
    out: list[list[tuple[int, float]]] = [[] for _ in records]
    for members, shares in zip(*_runs(records, weights), strict=True):
        for pos, i in enumerate(members):
            for d, share in enumerate(shares, start=1):
                if share <= 0:
                    break
                if pos - d >= 0:
                    out[i].append((members[pos - d], share))
                if pos + d < len(members):
                    out[i].append((members[pos + d], share))
    return out


def _arrays(neighbours: list[list[tuple[int, float]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The plain definition of `RunContext.arrays`: row r's k-th neighbour and its share at
    [r, k] (a missing one: row 0, share 0), and how many each row has."""
    counts = np.array([len(near) for near in neighbours], dtype=np.intp)
    width = int(counts.max()) if len(neighbours) else 0
    at = np.zeros((len(neighbours), width), dtype=np.intp)
    shares = np.zeros((len(neighbours), width), dtype=np.float64)
    for r, near in enumerate(neighbours):
        for k, (j, share) in enumerate(near):
            at[r, k], shares[r, k] = j, share
    return at, shares, counts


def _blended(records: list[VectorRecord], weights: Weights) -> np.ndarray:
    """The plain definition of the context vectors: each row plus its neighbours' at their
    shares, one at a time in order (float32 products and sums), renormalised."""
    own = np.stack([r.embedding for r in records]).astype(np.float32)
    want = own.copy()
    for i, near in enumerate(_neighbours(records, weights)):
        for j, share in near:
            want[i] += np.float32(share) * own[j]
    norms = np.linalg.norm(want, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    want /= norms
    return want


WORDS = ["refund", "parcel", "invoice", "router", "the", "Maria's", "can't", "café", "ﬁle", "Ｆｕｌｌ", "2023", "x_y",
         "refund refund", "parcel parcel parcel"]

records_strategy = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join).filter(str.strip),
        st.sampled_from([None, "t1", "t2"]),  # thread
        st.sampled_from([None, "Ann", "Bob"]),  # speaker
        st.sampled_from([0.0, 1.0, 600.0, 7200.0]),  # gap to the previous memory
        st.sampled_from(["note", "doc"]),
        st.sampled_from([None, "2023-05-07"]),  # the memory's own date
    ),
    min_size=1, max_size=25,
)


def _records(rows: list[tuple[str, str | None, str | None, float, str, str | None]]) -> list[VectorRecord]:
    out, clock = [], 1000.0
    for i, (text, thread, speaker, gap, kind, date) in enumerate(rows):
        clock += gap
        meta = {k: v for k, v in (("thread", thread), ("speaker", speaker), ("date", date)) if v is not None}
        out.append(VectorRecord(f"r{i}", f"{text} {i}", EMBEDDER.embed(f"{text} {i}"), "s", kind, clock, meta, seq=i))
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=8))
def test_tokenize_many_is_tokenize_of_each_text(texts: list[str]) -> None:
    assert tokenize_many(texts) == [tokenize(t) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from([*"aAzZ09 '\n\x00.,-_é", "can't", "Maria's", "THE", "o'clock", "refunds"]),
                         max_size=12).map("".join), max_size=8))
def test_tokenize_many_of_mostly_ascii_texts_is_tokenize_of_each_text(texts: list[str]) -> None:
    """ASCII texts are split in one pass over all of them: the same words as text by text."""
    assert tokenize_many(texts) == [tokenize(t) for t in texts]


def test_tokenize_many_handles_the_separator_and_no_texts() -> None:
    assert tokenize_many([]) == []
    assert tokenize_many(["refund\x00parcel", "Maria's invoice"]) == [["refund", "parcel"], ["maria", "invoic"]]


@settings(max_examples=120, deadline=None)
@given(records_strategy, st.sampled_from([Weights(), Weights(context_decay=1.0), Weights(context_decay=1.3),
                                          Weights(context=0.3, context_unthreaded=0.3, context_decay=0.9)]))
def test_per_term_weights_equal_the_records_weighted_terms(
    rows: list[tuple[str, str | None, str | None, float, str, str | None]], weights: Weights
) -> None:
    """Each term's weight in each record is the one the record's full weighted term map holds
    (exactly), and BM25 scores equal those of a `BM25Index` over those maps."""
    index = ScopeIndex(_records(rows), EMBEDDER.dimension, weights=weights)
    full = BM25Index()
    maps = [index.features(i)[1] for i in range(len(index))]
    for i, term_map in enumerate(maps):
        full.add_weighted(str(i), term_map)
    terms = {t for term_map in maps for t in term_map} | {"absent"}
    lexical = index._lexical
    assert isinstance(lexical, ContextTerms)
    sorted_sums = ContextTerms(index._token_lists, arrays=index._plan.arrays, dense_pairs=0,
                               nearer_weighs_more=weights.context_decay <= 1)  # the path of large scopes
    for term in terms:
        assert sorted_sums.posting(term) == lexical.posting(term)
        want = {str(i): w[term] for i, w in enumerate(maps) if term in w}
        assert lexical.posting(term) == want
        assert lexical.idf(term) == full.idf(term)
    for query in (["refund", "parcel"], ["maria", "maria", "invoic"], ["absent"], sorted(terms)[:5]):
        got, want = lexical.scores(query), full.scores(query)
        assert lexical.score_array(query).tolist() == [got.get(str(i), 0.0) for i in range(len(index))]
        assert got.keys() == want.keys()
        assert [got[d] for d in want] == pytest.approx([want[d] for d in want], rel=1e-12)
        assert lexical.best_possible(query) == pytest.approx(full.best_possible(query), rel=1e-12)


@settings(max_examples=150, deadline=None)
@given(records_strategy, st.sampled_from([Weights(), Weights(context_window=1), Weights(context_window=0),
                                          Weights(context=0.0, context_unthreaded=0.0), Weights(context_decay=0.0),
                                          Weights(context_decay=1.3, context_window=6), Weights(context_gap=0.5)]))
def test_neighbour_arrays_made_along_runs_equal_those_of_the_neighbour_lists(
    rows: list[tuple[str, str | None, str | None, float, str, str | None]], weights: Weights
) -> None:
    records = _records(rows)
    lists = _neighbours(records, weights)
    got, want = _neighbour_plan(records, weights).arrays, _arrays(lists)
    for array, expected in zip(got, want, strict=True):
        assert array.dtype == expected.dtype and array.shape == expected.shape
        assert array.tobytes() == expected.tobytes()
    assert neighbour_lists(*got) == lists
    assert ScopeIndex(records, EMBEDDER.dimension, weights=weights)._neighbours == lists


@settings(max_examples=60, deadline=None)
@given(records_strategy, st.sampled_from([Weights(), Weights(context_window=1), Weights(context=0.0, context_unthreaded=0.0)]))
def test_context_vectors_are_bit_identical_to_one_row_at_a_time(
    rows: list[tuple[str, str | None, str | None, float, str, str | None]], weights: Weights
) -> None:
    """(A few rows at a time, as `with_added` blends them: `test_longterm_index_cache`.)"""
    records = _records(rows)
    assert ScopeIndex(records, EMBEDDER.dimension, weights=weights).matrix.tobytes() == _blended(records, weights).tobytes()


@settings(max_examples=40, deadline=None)
@given(records_strategy)
def test_an_index_of_a_scan_matrix_ranks_as_an_index_of_records(rows: list[tuple[str, str | None, str | None, float, str, str | None]]) -> None:
    from dataclasses import replace

    records = _records(rows)
    plain = ScopeIndex(list(reversed(records)), EMBEDDER.dimension)  # sorted on the way in
    matrix = np.stack([r.embedding for r in records])
    scanned = ScopeIndex.of_scan([replace(r, embedding=NO_VECTOR) for r in records], matrix, EMBEDDER.dimension)
    assert scanned.matrix.tobytes() == plain.matrix.tobytes()
    for query in ("refund parcel", "Ann invoice 2023", "May 2023 router"):
        vector = EMBEDDER.embed(query)
        got = scanned.explain(vector, query, k=10, keep=lambda r: True)
        want = plain.explain(vector, query, k=10, keep=lambda r: True)
        assert [(r.id, p) for r, p in got] == [(r.id, p) for r, p in want]


def test_an_empty_scan_is_an_empty_index() -> None:
    index = ScopeIndex.of_scan([], np.zeros((0, 0), dtype=np.float32), EMBEDDER.dimension)
    assert len(index) == 0 and index.matrix.shape == (0, EMBEDDER.dimension)
    assert index.search(EMBEDDER.embed("anything"), "anything", k=3, keep=lambda r: True) == []


#: A customer's notes (no thread, runs broken by long gaps) or one conversation, sometimes with
#: a document chunk among them (then a run is not of consecutive records).
consecutive_strategy = st.tuples(
    st.lists(st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
                       st.sampled_from([0.0, 1.0, 600.0, 7200.0]), st.sampled_from(["note"] * 9 + ["doc"]),
                       st.sampled_from([None, None, "2023-05-07"])),
             min_size=1, max_size=40),
    st.sampled_from([None, "t1"]),
)


def _consecutive_records(drawn: tuple[list[tuple[str, float, str, str | None]], str | None]) -> list[VectorRecord]:
    rows, thread = drawn
    return _records([(text, thread, None, gap, kind, date) for text, gap, kind, date in rows])


@settings(max_examples=200, deadline=None)
@given(consecutive_strategy, st.sampled_from([Weights(), Weights(context_window=1), Weights(context_decay=1.0),
                                              Weights(context_decay=1.3, context_window=6), Weights(context_gap=0.5),
                                              Weights(context=0.0, context_unthreaded=0.0)]))
def test_runs_of_consecutive_records_blend_and_weigh_terms_as_the_neighbour_arrays_do(
    drawn: tuple[list[tuple[str, float, str, str | None]], str | None], weights: Weights
) -> None:
    """The fast path of small scopes (slices of consecutive records) gives bit for bit what the
    general path (an array per neighbour slot) gives: vectors, term weights, lengths, scores."""
    records = _consecutive_records(drawn)
    plan = _neighbour_plan(records, weights)
    # a document among the notes, or more steps than slices pay for: the general path only
    assume(plan.steps is not None)
    assert ScopeIndex(records, EMBEDDER.dimension, weights=weights).matrix.tobytes() == _blended(records, weights).tobytes()
    tokens = tokenize_many([r.text for r in records])
    by_steps = ContextTerms(tokens, steps=plan.steps)
    by_slots = ContextTerms(tokens, arrays=_arrays(_neighbours(records, weights)),
                            nearer_weighs_more=weights.context_decay <= 1)
    assert by_steps._vocab == by_slots._vocab
    for mine, theirs in ((by_steps._holders, by_slots._holders), (by_steps._weights, by_slots._weights),
                         (by_steps._bounds, by_slots._bounds), (by_steps._lengths, by_slots._lengths)):
        assert mine.dtype == theirs.dtype and mine.tobytes() == theirs.tobytes()
    assert by_steps._total == by_slots._total
    for query in (["refund", "parcel"], ["maria", "invoic", "invoic"], ["absent"]):
        assert by_steps.scores(query) == by_slots.scores(query)


def test_a_customers_notes_take_the_fast_path_and_interleaved_threads_do_not() -> None:
    notes = _records([(f"note {i} refund", None, None, 5.0, "note", None) for i in range(30)])
    plan = _neighbour_plan(notes, Weights())
    assert plan.steps is not None and len(plan.steps) == 2 * Weights().context_window
    threads = _records([(f"turn {i}", f"t{i % 2}", None, 5.0, "note", None) for i in range(30)])
    assert _neighbour_plan(threads, Weights()).steps is None


@pytest.mark.parametrize("lists", [[["a", "b"], [], ["b", "c", "a", "a"]], [[]], [], [["x"] * 3, ["y"]]])
def test_a_term_table_gives_back_the_token_lists_it_was_made_of(lists: list[list[str]]) -> None:
    assert ContextTerms(lists, steps=[]).token_lists() == lists


def test_an_index_keeps_each_records_words_with_its_dates(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    store = SQLiteVectorStore(SQLiteDatabase(tmp_path / "db.sqlite3"), embedder_identity=embedder.identity,
                              dimension=embedder.dimension)
    LongTermMemory(store, embedder).remember_many([
        MemoryInput("Ordered the blue kettle", "c", metadata={"date": "2023-05-07"}),
        MemoryInput("the and of", "c"),
        MemoryInput("Prefers email", "c", metadata={"thread": "t"}),
    ])
    records, matrix, tokens, _ = store.scan_tokens("c")
    index = ScopeIndex.of_scan(records, matrix, embedder.dimension, tokens=tokens)
    assert index._token_lists == [tokens[0] + tokenize(" ".join(time_words(memory_date(records[0].metadata)))),
                                  [], ["prefer", "email"]]
