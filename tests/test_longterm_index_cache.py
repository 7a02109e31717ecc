"""The cached scope indexes: after our own writes they are updated in place of a rescan, and
recall answers exactly what an index freshly read from the store answers."""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fourfold.embeddings import HashEmbedder
from fourfold.longterm import LongTermMemory, MemoryInput
from fourfold.stores import InMemoryVectorStore
from fourfold.stores.sqlite import SQLiteDatabase, SQLiteVectorStore
from fourfold.stores.vector import VectorRecord, VectorStore, WriteTicket

QUERIES = (
    "does she still go hiking every sunday",
    "parcel arrived damaged refund",
    "what did Maria say about the invoice in May 2023",
    "oolong tea",
)


class _Counting(VectorStore):
    """Delegates to a store and records every scan."""

    def __init__(self, inner: VectorStore) -> None:
        self.inner = inner
        self.embedder_identity = inner.embedder_identity
        self.scans: list[str | None] = []

    def scan(self, scope: str | None) -> list[VectorRecord]:
        return self.scan_versioned(scope)[0]

    def scan_versioned(self, scope: str | None) -> tuple[list[VectorRecord], Hashable | None]:
        self.scans.append(scope)
        return self.inner.scan_versioned(scope)

    @contextmanager
    def writing(self) -> Iterator[WriteTicket]:
        with self.inner.writing() as ticket:
            yield ticket

    def version(self, scope: str | None) -> Hashable | None:
        return self.inner.version(scope)

    def last_written(self, scopes: Iterable[str | None]) -> dict[str | None, float]:
        return self.inner.last_written(scopes)  # the store's own way: an index read, not a scan

    def generation(self) -> Hashable | None:
        return self.inner.generation()

    def add(self, records: Sequence[VectorRecord]) -> None:
        self.inner.add(records)

    def existing(self, ids: Sequence[str]) -> set[str]:
        return self.inner.existing(ids)

    def versioned(self, scope: str | None, ids: Sequence[str] = ()) -> list[VectorRecord]:
        return self.inner.versioned(scope, ids)

    def update_metadata(self, records: Sequence[VectorRecord]) -> None:
        self.inner.update_metadata(records)

    def get(self, ids: Sequence[str]) -> list[VectorRecord]:
        return self.inner.get(ids)

    def delete(self, ids: Sequence[str]) -> None:
        self.inner.delete(ids)

    def delete_scope(self, scope: str) -> int:
        return self.inner.delete_scope(scope)

    def count(self) -> int:
        return self.inner.count()

    def scopes(self) -> list[str | None]:
        return self.inner.scopes()


def _item(text: str, scope: str, **metadata: Any) -> MemoryInput:
    return MemoryInput(text, scope, "note", metadata)


def _results(lt: LongTermMemory, scopes: Sequence[str]) -> dict[tuple[str, str], Any]:
    out: dict[tuple[str, str], Any] = {}
    for scope in scopes:
        out[(scope, "*all*")] = lt.all(scope=scope)
        for query in QUERIES:
            out[(scope, query)] = lt.recall(query, scope=scope, k=20)
    return out


def test_own_writes_update_cached_indexes_exactly_as_a_rescan_would(
    vector_store: VectorStore, embedder: HashEmbedder
) -> None:
    store = _Counting(vector_store)
    lt = LongTermMemory(store, embedder)
    lt.remember_many([
        _item("Maria: I go hiking every Sunday", "c1", thread="t1", speaker="Maria", date="2023-05-07"),
        _item("Jon: which trail do you like?", "c1", thread="t1", speaker="Jon"),
        _item("Maria: the invoice from May was wrong", "c1", session="s1", speaker="Maria"),
        _item("Parcel arrived damaged, refund issued", "c1"),
        _item("Prefers email over phone", "c2"),
    ])
    lt.remember_many([_item("Jon: the lake one, always", "c1", thread="t1", speaker="Jon")])
    before = _results(lt, ["c1", "c2"])  # every scope is cached now
    store.scans.clear()

    lt.remember_many([
        _item("Maria: yes, every Sunday!", "c1", thread="t1", speaker="Maria"),  # a neighbour in t1
        _item("Maria: it was resent in June", "c1", session="s1", speaker="Maria", date="2023-06-02"),
        _item("Parcel arrived damaged, refund issued", "c1"),  # already stored: not new
        _item("Likes oolong tea", "c2"),
        _item("Asked about oolong tea too", "c3"),  # a scope nobody has read yet
        _item("Second parcel damaged as well", "c1"),
    ])
    lt.remember("Maria: and Sundays in July", scope="c1", metadata={"thread": "t1", "speaker": "Maria"})
    updated = _results(lt, ["c1", "c2"])
    if isinstance(vector_store, SQLiteVectorStore):  # a version per scope
        assert store.scans == []  # the writes were folded into the cached indexes

    rescanned = _results(LongTermMemory(store, embedder), ["c1", "c2", "c3"])
    assert updated == {key: value for key, value in rescanned.items() if key[0] != "c3"}
    assert updated != before
    assert [r.text for r in updated[("c1", "*all*")]][-4:] == [
        "Maria: yes, every Sunday!", "Maria: it was resent in June", "Second parcel damaged as well",
        "Maria: and Sundays in July",
    ]  # the batch's order (seq), then the later write
    assert _results(lt, ["c3"]) == {key: value for key, value in rescanned.items() if key[0] == "c3"}


def _versions(lt: LongTermMemory, scope: str) -> dict[str, Any]:
    query = "how to contact: email, phone or chat"
    return {
        "current": lt.recall(query, scope=scope, k=10),
        "all": lt.recall(query, scope=scope, k=10, include_superseded=True),
        "then": lt.recall(query, scope=scope, k=10, as_of=1_500),
        "listed": lt.all(scope=scope, include_superseded=True),
    }


def test_superseding_writes_update_cached_indexes_exactly_as_a_rescan_would(
    vector_store: VectorStore, embedder: HashEmbedder
) -> None:
    store = _Counting(vector_store)
    lt = LongTermMemory(store, embedder)
    first = lt.remember("Prefers email", scope="c1", key="contact", valid_from=1_000)
    lt.remember("Owns a dog", scope="c1")
    before = _versions(lt, "c1")  # cached now
    store.scans.clear()
    lt.remember("Prefers phone", scope="c1", key="contact", valid_from=2_000)
    lt.update(first, "Prefers chat")
    updated = _versions(lt, "c1")
    if isinstance(vector_store, SQLiteVectorStore):
        assert store.scans == []  # the new versions and the old ones' ends were folded in
    assert updated == _versions(LongTermMemory(store, embedder), "c1")
    assert updated != before
    assert sorted(r.text for r in updated["current"]) == ["Owns a dog", "Prefers chat"]
    assert "Prefers email" in [r.text for r in updated["then"]]


def test_a_delete_drops_the_scope_and_the_next_recall_reads_the_store(embedder: HashEmbedder) -> None:
    store = _Counting(InMemoryVectorStore(embedder_identity=embedder.identity))
    lt = LongTermMemory(store, embedder)
    doomed = lt.remember("Parcel arrived damaged, refund issued", scope="c1")
    lt.remember("Prefers email over phone", scope="c1")
    _results(lt, ["c1"])
    store.scans.clear()
    lt.forget(doomed)
    after = _results(lt, ["c1"])
    assert store.scans == ["c1"]
    assert after == _results(LongTermMemory(store, embedder), ["c1"])
    assert doomed not in [r.id for r in after[("c1", "*all*")]]


class _HeldScan(InMemoryVectorStore):
    """A scan that reads, then waits for `release` before it returns (a slow store read)."""

    def __init__(self, identity: str) -> None:
        super().__init__(embedder_identity=identity)
        self.hold = False
        self.scanned = threading.Event()
        self.release = threading.Event()

    def scan(self, scope: str | None) -> list[VectorRecord]:
        records = super().scan(scope)
        if self.hold:
            self.scanned.set()
            assert self.release.wait(10)
        return records


def test_an_index_scanned_across_a_concurrent_write_still_has_the_write(embedder: HashEmbedder) -> None:
    inner = _HeldScan(embedder.identity)
    lt = LongTermMemory(inner, embedder)
    lt.remember("First note about oolong tea", scope="s")
    inner.hold = True
    reader = threading.Thread(target=lambda: lt.recall("oolong tea", scope="s"))
    reader.start()
    assert inner.scanned.wait(10)
    inner.hold = False
    lt.remember("Second note about oolong tea", scope="s")  # acknowledged while the read is in flight
    inner.release.set()
    reader.join(10)
    texts = [r.text for r in lt.recall("oolong tea", scope="s", k=5)]
    assert "Second note about oolong tea" in texts


@pytest.mark.parametrize("writers", [8])
def test_concurrent_writers_to_one_scope_lose_nothing_from_the_cache(embedder: HashEmbedder, writers: int) -> None:
    store = InMemoryVectorStore(embedder_identity=embedder.identity)
    lt = LongTermMemory(store, embedder)
    lt.remember("seed note about the warehouse", scope="s")
    lt.recall("warehouse", scope="s")  # cached: every write below updates it

    def write(w: int) -> None:
        for n in range(15):
            lt.remember_many([_item(f"writer {w} note {n} about the warehouse", "s", thread=f"w{w}")])
            lt.recall("warehouse", scope="s")

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    cached = _results(lt, ["s"])
    assert len(cached[("s", "*all*")]) == 1 + writers * 15
    assert cached == _results(LongTermMemory(store, embedder), ["s"])


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(["hiking sunday", "refund parcel", "invoice may", "tea oolong", "router vpn"]),
                st.sampled_from([None, "t1", "t2"]),  # thread
                st.sampled_from([None, "Maria", "Ben"]),  # speaker
                st.integers(0, 3),  # created_at step: 0 = same time (seq orders), large = a new run
            ),
            min_size=1, max_size=6,
        ),
        min_size=1, max_size=5,
    ),
    late=st.booleans(),
)
def test_an_index_extended_by_with_added_is_bit_identical_to_a_rebuild(
    batches: list[list[tuple[str, str | None, str | None, int]]], late: bool
) -> None:
    from fourfold.longterm.retrieval import ScopeIndex

    embedder = HashEmbedder()
    clock, seq, held, index = 1000.0, 0, [], None
    for b, batch in enumerate(batches):
        new = []
        for text, thread, speaker, step in batch:
            clock += [0.0, 1.0, 600.0, 7200.0][step]
            seq += 1
            meta = {k: v for k, v in (("thread", thread), ("speaker", speaker)) if v is not None}
            at = clock - 5000.0 if late and b == len(batches) - 1 else clock  # an out-of-order write
            new.append(VectorRecord(f"r{seq}", f"{text} {seq}", embedder.embed(f"{text} {seq}"), "s", "note", at, meta, seq=seq))
        held += new
        index = ScopeIndex(new, embedder.dimension) if index is None else index.with_added([*new, held[0]])
    assert index is not None
    rebuilt = ScopeIndex(held, embedder.dimension)
    assert [r.id for r in index.records] == [r.id for r in rebuilt.records]
    assert index.matrix.tobytes() == rebuilt.matrix.tobytes()
    extended, whole = index._lexical, rebuilt._lexical  # the term table extended, and made of every record at once
    assert list(extended._vocab.items()) == list(whole._vocab.items())
    for name in ("_occurrences", "_sizes", "_holders", "_weights", "_bounds", "_lengths"):
        assert getattr(extended, name).tobytes() == getattr(whole, name).tobytes(), name
    assert extended._total == whole._total
    for query in ("hiking", "refund parcel 3", "maria invoice", "vpn router tea"):
        tokens = query.split()
        assert index.bm25.scores(tokens) == rebuilt.bm25.scores(tokens)
        vector = embedder.embed(query)
        got = index.search(vector, query, k=10, keep=lambda r: True)
        want = rebuilt.search(vector, query, k=10, keep=lambda r: True)
        assert [(r.id, s) for r, s in got] == [(r.id, s) for r, s in want]


def test_a_write_by_another_process_is_seen_by_the_next_recall_of_that_scope_only(
    tmp_path: Path, embedder: HashEmbedder
) -> None:
    """Two `LongTermMemory`s on one SQLite file stand for two processes sharing a data dir."""
    first_db, second_db = SQLiteDatabase(tmp_path / "db.sqlite3"), SQLiteDatabase(tmp_path / "db.sqlite3")
    mine = _Counting(SQLiteVectorStore(first_db, embedder_identity=embedder.identity, dimension=embedder.dimension))
    theirs = LongTermMemory(SQLiteVectorStore(second_db, embedder_identity=embedder.identity, dimension=embedder.dimension), embedder)
    lt = LongTermMemory(mine, embedder)
    lt.remember("went hiking on sunday", scope="c1")
    gone = lt.remember("prefers email", scope="c2")
    lt.recall("hiking", scope="c1")
    lt.recall("email", scope="c2")
    mine.scans.clear()

    theirs.remember("hiking again next sunday", scope="c1")
    assert sorted(r.text for r in lt.recall("hiking", scope="c1", k=5)) == ["hiking again next sunday", "went hiking on sunday"]
    lt.recall("email", scope="c2")
    assert mine.scans == ["c1"]  # c2's cached index was still current

    theirs.forget(gone)
    assert lt.recall("email", scope="c2") == []
    first_db.close()
    second_db.close()


def test_warm_indexes_written_scopes_so_their_first_recall_scans_nothing() -> None:
    from fourfold.service.batching import GroupCommit

    embedder = HashEmbedder()
    store = _Counting(InMemoryVectorStore(embedder_identity=embedder.identity))
    lt = LongTermMemory(store, embedder)
    lt.remember("went hiking on sunday", scope="c1")
    lt.warm(["c1", None])
    assert set(store.scans) == {"c1", None} and len(store.scans) == 2
    lt.warm(["c1"])  # cached: a lookup, no scan
    assert [r.text for r in lt.recall("hiking", scope="c1")] == ["went hiking on sunday"]
    assert len(store.scans) == 2

    GroupCommit(lt).remember({"text": "prefers email", "scope": "c2"})  # the service's writer warms
    assert store.scans[-1] == "c2"
    assert [r.text for r in lt.recall("email", scope="c2")] == ["prefers email"]
    assert store.scans.count("c2") == 1


class _Rendezvous(_Counting):
    """A store whose scan waits (up to 5 s) until the query's embedding has begun: it completes
    at once only if the two run at the same time."""

    def __init__(self, inner: VectorStore, embedding: threading.Event, fail: Exception | None = None) -> None:
        super().__init__(inner)
        self.embedding, self.fail = embedding, fail
        self.waited: list[bool] = []
        self.threads: list[int] = []

    def scan_versioned(self, scope: str | None) -> tuple[list[VectorRecord], Hashable | None]:
        self.threads.append(threading.get_ident())
        self.waited.append(self.embedding.wait(5.0))
        if self.fail is not None:
            raise self.fail
        return super().scan_versioned(scope)


class _Signalling(HashEmbedder):
    """Sets an event as each query's embedding begins; optionally fails."""

    def __init__(self, fail: Exception | None = None) -> None:
        super().__init__()
        self.began, self.fail = threading.Event(), fail
        self.query_cache_size = 0

    def embed_batch(self, texts: Sequence[str]) -> Any:
        self.began.set()
        if self.fail is not None:
            raise self.fail
        return super().embed_batch(texts)


def test_a_scopes_first_read_runs_while_its_query_is_embedded(embedder: HashEmbedder) -> None:
    """The first recall of a scope reads and builds its index on another thread while the caller
    embeds the query (the support agent's first turn costs about a later one); the results are
    those of a cached index, and a cached scope is neither read again nor read on a thread."""
    inner = InMemoryVectorStore(embedder_identity=embedder.identity)
    LongTermMemory(inner, embedder).remember_many([_item(t, "c") for t in (
        "Hikes every Sunday with her sister", "Asked for a refund on the damaged parcel",
        "Prefers oolong tea to coffee", "The May 2023 invoice was paid twice")])
    expected = LongTermMemory(inner, embedder)
    expected.warm(["c"])  # read before recall: the sequential path
    quiet = _Signalling()
    store = _Rendezvous(inner, quiet.began)
    lt = LongTermMemory(store, quiet)
    lt.spare_core = lambda: True
    for query in QUERIES:
        assert lt.recall(query, scope="c", k=4) == expected.recall(query, scope="c", k=4)
    assert store.scans == ["c"] and store.waited == [True]  # read once, while the query was embedded
    assert store.threads[0] != threading.get_ident()
    assert lt.recall("anything", scope="empty") == [] and store.waited == [True, True]


@pytest.mark.parametrize("failing", ["store", "embedder", "both"])
def test_a_failed_first_read_or_embedding_reaches_the_caller(embedder: HashEmbedder, failing: str) -> None:
    """The read's error comes first (it says what is wrong with the store); the embedder's
    otherwise. An index read while the embedding failed stays cached."""
    from fourfold.errors import ModelError, StoreUnavailable

    inner = InMemoryVectorStore(embedder_identity=embedder.identity)
    LongTermMemory(inner, embedder).remember("Prefers oolong tea to coffee", scope="c")
    model = _Signalling(ModelError("the model is gone") if failing != "store" else None)
    store = _Rendezvous(inner, model.began, StoreUnavailable("the disk is gone") if failing != "embedder" else None)
    lt = LongTermMemory(store, model)
    lt.spare_core = lambda: True
    with pytest.raises(ModelError if failing == "embedder" else StoreUnavailable):
        lt.recall("tea", scope="c")
    if failing == "embedder":
        model.fail = None
        assert [r.text for r in lt.recall("tea", scope="c")] == ["Prefers oolong tea to coffee"]
        assert store.scans == ["c"]  # the index read beside the failed embedding was kept


def test_with_no_core_idle_a_scope_is_read_first_and_an_empty_one_embeds_nothing(embedder: HashEmbedder) -> None:
    inner = InMemoryVectorStore(embedder_identity=embedder.identity)
    LongTermMemory(inner, embedder).remember("Prefers oolong tea to coffee", scope="c")
    model = _Signalling()
    store = _Rendezvous(inner, threading.Event())  # set by nothing: the scan does not wait for the model
    store.embedding.set()
    lt = LongTermMemory(store, model)
    lt.spare_core = lambda: False
    assert [r.text for r in lt.recall("tea", scope="c")] == ["Prefers oolong tea to coffee"]
    assert store.threads == [threading.get_ident()]  # read in line, on the caller's thread
    model.began.clear()
    assert lt.recall("tea", scope="nobody") == [] and not model.began.is_set()


def test_many_first_reads_at_once_are_not_queued_behind_the_helpers(embedder: HashEmbedder) -> None:
    """More concurrent first reads than helper threads: the rest read on their own threads, so
    all of them are in progress at once (a rendezvous of every read completes)."""
    from concurrent.futures import ThreadPoolExecutor

    readers = 6
    inner = InMemoryVectorStore(embedder_identity=embedder.identity)
    LongTermMemory(inner, embedder).remember_many([_item(f"note {i} about tea", f"c{i}") for i in range(readers)])
    barrier = threading.Barrier(readers, timeout=10)

    class _AllAtOnce(_Counting):
        def scan_versioned(self, scope: str | None) -> tuple[list[VectorRecord], Hashable | None]:
            barrier.wait()
            return super().scan_versioned(scope)

    lt = LongTermMemory(_AllAtOnce(inner), embedder)
    lt.spare_core = lambda: True
    with ThreadPoolExecutor(readers) as pool:
        found = list(pool.map(lambda i: lt.recall("tea", scope=f"c{i}"), range(readers)))
    assert [[r.text for r in hits] for hits in found] == [[f"note {i} about tea"] for i in range(readers)]


def test_an_index_remembers_what_a_filter_keeps_and_a_copy_with_new_metadata_does_not(embedder: HashEmbedder) -> None:
    """A read's kinds/validity filter is tested on each record once per index; an index copied
    with changed metadata (a version's end, folded in after a write) tests its records again."""
    from dataclasses import replace

    from fourfold.longterm.retrieval import RecordFilter, ScopeIndex
    from fourfold.longterm.store import _record_filter, _with_metadata
    from fourfold.longterm.versions import Version, is_current, with_version

    texts = ["parcel arrived damaged", "parcel refund issued", "prefers email"]
    records = [VectorRecord(f"r{i}", t, embedder.embed(t), "s", "note", 1000.0 + i, {}, seq=i)
               for i, t in enumerate(texts)]
    index = ScopeIndex(records, embedder.dimension)
    query = embedder.embed("parcel")

    def found(ix: ScopeIndex, keep: Any) -> set[str]:
        return {r.id for r, _ in ix.search(query, "parcel", k=10, keep=keep)}

    tested: list[str] = []
    counting = RecordFilter(lambda r: tested.append(r.id) is None and is_current(r), key=("current",))
    assert found(index, counting) == {"r0", "r1", "r2"}
    assert found(index, counting) == {"r0", "r1", "r2"}
    assert len(tested) == 3  # once per record, not once per read

    ended = replace(records[0], metadata=with_version(
        {}, Version("r0", None, 1000.0, valid_to=2000.0), record_id="r0", written_at=1000.0))
    copied = _with_metadata(index, [ended])
    assert found(copied, counting) == {"r1", "r2"}  # the ended version is tested again, and left out
    assert found(copied, _record_filter(None, None, None, False)) == {"r1", "r2"}
    assert found(copied, _record_filter(None, None, None, True)) == {"r0", "r1", "r2"}
    assert found(copied, _record_filter(None, None, 1500.0, False)) == {"r0", "r1", "r2"}
    assert found(index, _record_filter(None, None, None, False)) == {"r0", "r1", "r2"}  # the original is unchanged
    assert found(copied, _record_filter(["fact"], None, None, False)) == set()
