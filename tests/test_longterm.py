"""Long-term memory behaviour, run over every vector-store backend."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path

import pytest

from fourfold import EmbedderMismatch, InvalidInput, NotFound
from fourfold.embeddings import HashEmbedder, Vectors
from fourfold.longterm import LongTermMemory, MemoryInput, Weights
from fourfold.stores.sqlite import SQLiteDatabase, SQLiteVectorStore
from fourfold.stores.vector import VectorRecord, VectorStore


@pytest.fixture
def lt(vector_store: VectorStore, embedder: HashEmbedder) -> LongTermMemory:
    return LongTermMemory(vector_store, embedder)


def test_remember_then_recall(lt: LongTermMemory) -> None:
    mid = lt.remember("Prefers email over phone calls", scope="customer:42", kind="preference", metadata={"src": "t1"})
    (hit,) = lt.recall("how does the customer like to be contacted? email or phone", scope="customer:42", k=3)
    assert (hit.id, hit.text, hit.kind, hit.scope, hit.metadata) == (
        mid, "Prefers email over phone calls", "preference", "customer:42", {"src": "t1"},
    )
    assert hit.created_at > 0


def test_scope_is_a_hard_filter_that_fails_closed(lt: LongTermMemory) -> None:
    lt.remember("Customer A uses a Visa card ending 4242", scope="customer:A")
    lt.remember("Global lesson: restart the worker on 502", scope=None)
    assert lt.recall("Visa card", scope="customer:B", k=10) == []
    assert all(r.scope is None for r in lt.recall("Visa card worker", k=10))
    assert [r.scope for r in lt.recall("Visa card", scope="customer:A", k=10)] == ["customer:A"]


def test_same_text_same_scope_is_idempotent(lt: LongTermMemory) -> None:
    first = lt.remember("Ships to Berlin office", scope="c1")
    second = lt.remember("Ships to Berlin office", scope="c1")
    other = lt.remember("Ships to Berlin office", scope="c2")
    assert first == second and first.created and not second.created
    assert other != first
    assert len(lt.all(scope="c1")) == 1


def test_ids_never_collide_after_a_delete(lt: LongTermMemory) -> None:
    """The seed's mem-{count} reuses an id after a delete and Chroma drops the new memory."""
    a = lt.remember("alpha fact about invoices", scope="s")
    lt.remember("beta fact about shipping", scope="s")
    lt.forget(a)
    lt.remember("gamma fact about refunds", scope="s")
    assert sorted(r.text for r in lt.all(scope="s")) == ["beta fact about shipping", "gamma fact about refunds"]


def test_forget_unknown_id_is_not_found(lt: LongTermMemory) -> None:
    with pytest.raises(NotFound):
        lt.forget("mem_does_not_exist")


def test_kinds_and_metadata_filters(lt: LongTermMemory) -> None:
    lt.remember("likes dark mode in the dashboard", scope="u", kind="preference", metadata={"product": "web"})
    lt.remember("dashboard crash fixed by clearing cache", scope="u", kind="resolution", metadata={"product": "ios"})
    assert [r.kind for r in lt.recall("dashboard", scope="u", k=5, kinds=("resolution",))] == ["resolution"]
    assert [r.metadata["product"] for r in lt.recall("dashboard", scope="u", k=5, where={"product": "web"})] == ["web"]


def test_bad_input_is_refused_and_nothing_is_written(lt: LongTermMemory) -> None:
    lt.remember("keeps invoices in PDF", scope="u")
    for bad in ["", "   ", "thanks!", "ok", 42, "bad \ud800 surrogate"]:
        with pytest.raises(InvalidInput):
            lt.remember(bad, scope="u")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        lt.remember_many([MemoryInput("a valid memory about invoices", "u"), MemoryInput("", "u")])
    for kwargs in ({"k": 0}, {"k": -1}, {"k": 1_000_000}, {"k": "3"}, {"scope": ""}, {"kinds": ("Bad Kind",)}):
        with pytest.raises(InvalidInput):
            lt.recall("invoices", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        lt.remember("kind doc is reserved for documents", scope="u", kind="doc")
    assert [r.text for r in lt.all(scope="u")] == ["keeps invoices in PDF"]


def test_secrets_are_redacted_and_reported(lt: LongTermMemory) -> None:
    mid = lt.remember("API key for staging is sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", scope="u")
    assert mid.redactions and all(r.placeholder in lt.get(mid).text for r in mid.redactions)
    assert "sk-ant-api03" not in lt.get(mid).text


def test_forget_scope_only_touches_that_scope(lt: LongTermMemory) -> None:
    lt.remember("A likes tea", scope="A")
    lt.remember("B likes coffee", scope="B")
    assert lt.forget_scope("A") == 1
    assert lt.all(scope="A") == []
    assert [r.text for r in lt.all(scope="B")] == ["B likes coffee"]


def test_hybrid_ranks_exact_identifier_match_first(lt: LongTermMemory) -> None:
    lt.remember_many(
        [MemoryInput(f"Order ORD-{1000 + i} shipped on time to the warehouse", "u") for i in range(20)]
        + [MemoryInput("Order ORD-7777 was lost in transit and refunded", "u")]
    )
    assert [r.text for r in lt.recall("what happened to ORD-7777?", scope="u", k=1)] == [
        "Order ORD-7777 was lost in transit and refunded"]


def test_second_instance_sees_writes_of_the_first(vector_store: VectorStore, embedder: HashEmbedder) -> None:
    writer, reader = LongTermMemory(vector_store, embedder), LongTermMemory(vector_store, embedder)
    assert reader.recall("teapot", scope="s", k=3) == []
    writer.remember("collects antique teapot designs", scope="s")
    assert [r.text for r in reader.recall("teapot", scope="s", k=3)] == ["collects antique teapot designs"]


def test_embedded_store_persists_and_rejects_another_embedder(tmp_path: Path, embedder: HashEmbedder) -> None:
    from fourfold.stores.chroma import ChromaVectorStore

    lt = LongTermMemory(ChromaVectorStore.persistent(tmp_path / "v", embedder), embedder)
    lt.remember("billing address is in Lyon", scope="c")
    reopened = LongTermMemory(ChromaVectorStore.persistent(tmp_path / "v", embedder), embedder)
    assert [r.text for r in reopened.recall("billing address", scope="c", k=2)] == ["billing address is in Lyon"]
    with pytest.raises(EmbedderMismatch):
        ChromaVectorStore.persistent(tmp_path / "v", HashEmbedder(dimension=64))


# -- context from neighbouring memories, dates, speakers ---------------------------------

_FILLER = [
    "Invoices are sent on the first of the month",
    "The warehouse in Lyon ships on weekdays",
    "Refunds take five business days",
    "The support line opens at nine",
    "Premium plan includes phone support",
    "Passwords are reset from the login page",
]


def _thread(lt: LongTermMemory, session: str, texts: list[str]) -> None:
    lt.remember_many([MemoryInput(t, "u", metadata={"session": session}) for t in texts])


def _rank(lt: LongTermMemory, query: str, text: str) -> int:
    hits = [r.text for r in lt.recall(query, scope="u", k=20)]
    return hits.index(text)


def test_a_reply_is_found_through_the_message_it_answers(lt: LongTermMemory) -> None:
    _thread(lt, "filler", _FILLER)
    _thread(lt, "chat", ["Ann joined a pottery class downtown", "Bob asked how often she goes", "Every Sunday morning!"])
    # The reply shares no word with the query: its neighbours lend it theirs.
    assert _rank(lt, "pottery class", "Every Sunday morning!") <= 2
    lt.weights = Weights(context=0.0)  # without context it is just another unrelated memory
    assert _rank(lt, "pottery class", "Every Sunday morning!") > 2


def test_context_stays_inside_a_thread(lt: LongTermMemory) -> None:
    _thread(lt, "filler", _FILLER)
    _thread(lt, "a", ["Ann joined a pottery class downtown"])
    _thread(lt, "b", ["Every Sunday morning!"])  # written next, but in another thread
    assert _rank(lt, "pottery class", "Every Sunday morning!") > 2


def test_unthreaded_memories_far_apart_in_time_are_not_neighbours(vector_store: VectorStore, embedder: HashEmbedder) -> None:
    # the weight threads use, so that the gap alone decides
    lt = LongTermMemory(vector_store, embedder, weights=Weights(context_gap=0.0, context_unthreaded=0.4))
    lt.remember_many([MemoryInput(t, "u") for t in _FILLER])
    lt.remember_many([MemoryInput("Ann joined a pottery class downtown", "u"), MemoryInput("Every Sunday morning!", "u")])
    assert _rank(lt, "pottery class", "Every Sunday morning!") <= 1  # one batch: no gap
    lt.remember("Sessions last two hours each", scope="u")  # a later write: past the gap
    assert _rank(lt, "pottery class", "Sessions last two hours each") > 2


def test_a_batch_keeps_its_order_in_the_store(lt: LongTermMemory) -> None:
    lt.remember_many([MemoryInput(f"step {word} of the migration", "u") for word in ["one", "two", "three", "four"]])
    stored = sorted(lt.store.scan("u"), key=lambda r: (r.created_at, r.seq))
    assert [r.text.split()[1] for r in stored] == ["one", "two", "three", "four"]
    assert len({r.created_at for r in stored}) == 1 and [r.seq for r in stored] == [0, 1, 2, 3]


def test_a_memory_date_makes_its_month_year_and_weekday_searchable(lt: LongTermMemory) -> None:
    for i, day in enumerate(["2023-05-08", "2023-06-13", "2024-01-17", "2022-11-25"]):  # Mon, Tue, Wed, Fri
        lt.remember(f"Visited the office for meeting number {i}", scope="u", metadata={"occurred_at": day, "thread": i})
    (hit,) = lt.recall("which meeting was on a Tuesday in June 2023?", scope="u", k=1)
    assert hit.metadata["occurred_at"] == "2023-06-13"
    assert lt.recall("the meeting of a Friday in November", scope="u", k=1)[0].metadata["occurred_at"] == "2022-11-25"


def test_memories_of_the_speaker_a_query_names_rank_first(lt: LongTermMemory) -> None:
    _thread(lt, "filler", _FILLER)
    lt.remember("Loves hiking in the hills", scope="u", metadata={"speaker": "Bob"})
    lt.remember("Loves hiking in the hills on weekends", scope="u", metadata={"speaker": "Ann"})
    assert lt.recall("What does Ann love?", scope="u", k=1)[0].metadata["speaker"] == "Ann"
    assert lt.recall("What does Bob love?", scope="u", k=1)[0].metadata["speaker"] == "Bob"


class _CountingStore(SQLiteVectorStore):
    """Counts scope scans, to see which indexes a write makes recall rebuild."""

    def __init__(self, db: SQLiteDatabase, embedder: HashEmbedder) -> None:
        super().__init__(db, embedder_identity=embedder.identity, dimension=embedder.dimension)
        self.scans: list[str | None] = []

    def scan_versioned(self, scope: str | None) -> tuple[list[VectorRecord], Hashable | None]:
        self.scans.append(scope)
        return super().scan_versioned(scope)

    def scan_matrix(self, scope: str | None) -> tuple[list[VectorRecord], Vectors, Hashable | None]:
        self.scans.append(scope)
        return super().scan_matrix(scope)

    def scan_tokens(self, scope: str | None) -> tuple[list[VectorRecord], Vectors, list[list[str]], Hashable | None]:
        self.scans.append(scope)
        return super().scan_tokens(scope)


def test_own_writes_rebuild_only_the_scopes_they_touch(embedder: HashEmbedder, tmp_path: Path) -> None:
    store = _CountingStore(SQLiteDatabase(tmp_path / "db.sqlite3"), embedder)
    lt = LongTermMemory(store, embedder)
    lt.remember("alpha likes green tea", scope="a")
    lt.remember("beta likes black coffee", scope="b")
    lt.recall("tea", scope="a")
    lt.recall("coffee", scope="b")
    store.scans.clear()
    lt.remember("alpha also likes oolong tea", scope="a")
    lt.recall("coffee", scope="b")
    assert store.scans == []  # b's index survived a's write
    assert [r.text for r in lt.recall("oolong tea", scope="a", k=3)] == ["alpha also likes oolong tea", "alpha likes green tea"]
    assert store.scans == []  # a's cached index took the new memory in without a rescan
    # a write by anyone else (another instance or process) makes every index rebuild
    LongTermMemory(store, embedder).remember("beta now drinks decaf coffee", scope="b")
    assert [r.text for r in lt.recall("decaf coffee", scope="b", k=3)] == ["beta now drinks decaf coffee", "beta likes black coffee"]


def test_cached_indexes_stay_within_the_record_budget(embedder: HashEmbedder, tmp_path: Path) -> None:
    store = _CountingStore(SQLiteDatabase(tmp_path / "db.sqlite3"), embedder)
    lt = LongTermMemory(store, embedder, max_cached_records=4)
    for scope in "abc":
        lt.remember_many([MemoryInput(f"{scope} durable fact number n{i}", scope) for i in range(2)])
    for scope in "abc":
        assert sorted(r.text for r in lt.recall("durable fact", scope=scope, k=5)) == [
            f"{scope} durable fact number n0", f"{scope} durable fact number n1"]
    store.scans.clear()
    lt.recall("durable fact", scope="c")  # most recent: still cached
    lt.recall("durable fact", scope="a")  # evicted when c came in: read again
    assert store.scans == ["a"]


def test_forget_many_is_all_or_nothing(lt: LongTermMemory) -> None:
    a = lt.remember("keeps receipts for taxes", scope="s")
    b = lt.remember("ships to the Lyon warehouse", scope="s")
    with pytest.raises(NotFound):
        lt.forget_many([a, "mem_unknown"])
    assert len(lt.all(scope="s")) == 2
    lt.forget_many([a, b])
    assert lt.all(scope="s") == []


def test_separate_notes_lend_each_other_less_context_than_turns_of_a_thread(lt: LongTermMemory) -> None:
    notes = ["Prefers email over phone calls", "Lives in Oslo", "On the Pro plan"]
    lt.remember_many([MemoryInput(t, "notes") for t in notes])  # one batch, no thread
    lt.remember_many([MemoryInput(t, "chat", metadata={"thread": "T-1"}) for t in notes])
    query = "how should we get in touch?"

    def context(scope: str) -> float:
        parts = {r.text: p for r, p in lt.explain(query, scope=scope, k=3)}
        return abs(parts["Lives in Oslo"].context)

    assert 0 < context("notes") < context("chat")
