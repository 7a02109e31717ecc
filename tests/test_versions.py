"""Memory versions in long-term memory, over every vector-store backend."""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from conftest import OpenMemory
from engines import assert_erased
from fourfold import InvalidInput, NotFound
from fourfold.embeddings import HashEmbedder
from fourfold.longterm import LongTermMemory, MemoryInput
from fourfold.stores.vector import VectorStore

S = "customer:42"


@pytest.fixture
def lt(vector_store: VectorStore, embedder: HashEmbedder) -> LongTermMemory:
    return LongTermMemory(vector_store, embedder)


def texts(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.text for h in hits]


def test_the_issue_api(lt: LongTermMemory) -> None:
    a = lt.remember("Prefers email", scope=S, kind="preference", key="contact_channel")
    b = lt.remember("Prefers text messages now", scope=S, kind="preference", key="contact_channel")
    assert a.supersedes == () and b.supersedes == (a,)
    assert texts(lt.recall("how to contact: email or text messages?", scope=S, k=5)) == ["Prefers text messages now"]
    both = lt.recall("how to contact: email or text messages?", scope=S, k=5, include_superseded=True)
    assert sorted(texts(both)) == ["Prefers email", "Prefers text messages now"]
    history = lt.history(b)
    assert [h.id for h in history] == [a, b]
    assert [h.text for h in history] == ["Prefers email", "Prefers text messages now"]
    assert history[0].valid_to == history[1].valid_from and history[1].valid_to is None
    assert history[0].key == history[1].key == "contact_channel"
    c = lt.update(b, "Prefers WhatsApp")
    assert c.supersedes == (b,)
    assert lt.get(a).valid_to is not None and lt.get(b).valid_to is not None and lt.get(c).valid_to is None
    assert [h.text for h in lt.history(a)] == ["Prefers email", "Prefers text messages now", "Prefers WhatsApp"]
    assert lt.get(c).kind == "preference" and lt.get(c).key == "contact_channel"
    assert texts(lt.recall("contact channel email text WhatsApp", scope=S, k=5)) == ["Prefers WhatsApp"]
    lt.forget(c)
    for gone in (a, b, c):
        with pytest.raises(NotFound):
            lt.get(gone)
    assert lt.recall("contact channel email text WhatsApp", scope=S, k=5, include_superseded=True) == []


def test_as_of_reads_what_was_current_then(lt: LongTermMemory) -> None:
    a = lt.remember("Lives in Lisbon", scope=S, key="city", valid_from=1_000)
    b = lt.remember("Lives in Porto", scope=S, key="city", valid_from=2_000)
    assert b.supersedes == (a,)
    q = "where does the customer live? Lisbon or Porto"
    assert texts(lt.recall(q, scope=S, as_of=1_500)) == ["Lives in Lisbon"]
    assert texts(lt.recall(q, scope=S, as_of=2_000)) == ["Lives in Porto"]
    assert lt.recall(q, scope=S, as_of=999) == []
    assert texts(lt.recall(q, scope=S, as_of=datetime.fromtimestamp(1_500, tz=UTC))) == ["Lives in Lisbon"]
    assert texts(lt.recall(q, scope=S, as_of=datetime(2001, 1, 1))) == ["Lives in Porto"]  # naive: UTC
    assert (lt.get(a).valid_from, lt.get(a).valid_to, lt.get(b).valid_from) == (1_000, 2_000, 2_000)
    assert texts(lt.all(scope=S, as_of=1_500)) == ["Lives in Lisbon"]
    assert texts(lt.all(scope=S)) == ["Lives in Porto"]


def test_a_backdated_write_takes_its_place_and_supersedes_nothing_newer(lt: LongTermMemory) -> None:
    a = lt.remember("Plan: basic", scope=S, key="plan", valid_from=1_000)
    c = lt.remember("Plan: enterprise", scope=S, key="plan", valid_from=3_000)
    b = lt.remember("Plan: pro", scope=S, key="plan", valid_from=2_000)
    assert b.supersedes == (a,)  # the version before it, not the newer current one
    assert [(h.text, h.valid_from, h.valid_to) for h in lt.history(c)] == [
        ("Plan: basic", 1_000, 2_000), ("Plan: pro", 2_000, 3_000), ("Plan: enterprise", 3_000, None),
    ]
    assert texts(lt.recall("which plan: basic, pro or enterprise", scope=S)) == ["Plan: enterprise"]
    older = lt.remember("Plan: trial", scope=S, key="plan", valid_from=500)
    assert older.supersedes == () and lt.get(older).valid_to == 1_000
    assert texts(lt.recall("which plan: trial basic pro enterprise", scope=S)) == ["Plan: enterprise"]


def test_occurred_at_metadata_is_the_default_valid_from(lt: LongTermMemory) -> None:
    lt.remember("Works night shifts", scope=S, key="shift", metadata={"occurred_at": "2024-03-01T00:00:00+00:00"})
    (hit,) = lt.all(scope=S)
    assert hit.valid_from == datetime(2024, 3, 1, tzinfo=UTC).timestamp()
    assert hit.metadata == {"occurred_at": "2024-03-01T00:00:00+00:00"}  # the bookkeeping stays hidden
    before = time.time()
    plain = lt.remember("Orders on Mondays", scope=S)
    assert before - 1 <= lt.get(plain).valid_from <= time.time() + 1


def test_keys_are_per_scope_and_unkeyed_memories_are_independent(lt: LongTermMemory) -> None:
    lt.remember("Prefers email", scope="c1", key="contact")
    lt.remember("Prefers phone", scope="c2", key="contact")
    lt.remember("Owns a dog", scope="c1")
    lt.remember("Owns a cat", scope="c1")
    assert sorted(texts(lt.all(scope="c1"))) == ["Owns a cat", "Owns a dog", "Prefers email"]
    assert texts(lt.all(scope="c2")) == ["Prefers phone"]
    lt.remember("Prefers chat", scope="c1", key="contact")
    assert sorted(texts(lt.all(scope="c1"))) == ["Owns a cat", "Owns a dog", "Prefers chat"]
    assert texts(lt.all(scope="c2")) == ["Prefers phone"]


def test_rewriting_a_superseded_text_makes_a_new_current_version(lt: LongTermMemory) -> None:
    a = lt.remember("Prefers email", scope=S, key="contact")
    b = lt.remember("Prefers phone", scope=S, key="contact")
    again = lt.remember("Prefers email", scope=S, key="contact")
    assert again.created and again not in (a, b) and again.supersedes == (b,)
    assert lt.get(a).valid_to is not None  # the old version is not revived
    assert [h.id for h in lt.history(a)] == [a, b, again]
    assert texts(lt.all(scope=S)) == ["Prefers email"]
    # the same for a memory without a key that was updated
    n = lt.remember("Ships to Berlin", scope="u")
    m = lt.update(n, "Ships to Hamburg")
    back = lt.remember("Ships to Berlin", scope="u")
    assert back not in (n, m) and back.supersedes == (m,)
    assert texts(lt.all(scope="u")) == ["Ships to Berlin"]


def test_identical_text_applies_new_kind_and_metadata(lt: LongTermMemory) -> None:
    first = lt.remember("Uses the mobile app", scope=S, kind="note", metadata={"src": "t1"})
    same = lt.remember("Uses the mobile app", scope=S, kind="note", metadata={"src": "t1"})
    assert same == first and not same.created and same.supersedes == ()
    changed = lt.remember("Uses the mobile app", scope=S, kind="fact", metadata={"src": "t2"})
    assert changed.created and changed != first and changed.supersedes == (first,)
    (now,) = lt.all(scope=S)
    assert (now.id, now.kind, now.metadata) == (changed, "fact", {"src": "t2"})
    keyed = lt.remember("Prefers email", scope=S, key="contact", metadata={"a": 1})
    again = lt.remember("Prefers email", scope=S, key="contact", metadata={"a": 1})
    assert again == keyed and not again.created


def test_a_batch_applies_in_order(lt: LongTermMemory) -> None:
    done = lt.remember_many([
        MemoryInput("Prefers email", S, "preference", key="contact"),
        {"text": "Prefers text", "scope": S, "kind": "preference", "key": "contact"},
        MemoryInput("Speaks Spanish", S, "preference", key="language"),
    ])
    assert done[0].created and done[1].supersedes == (done[0].id,) and done[2].supersedes == ()
    assert sorted(texts(lt.all(scope=S))) == ["Prefers text", "Speaks Spanish"]
    assert [h.text for h in lt.history(done[0].id)] == ["Prefers email", "Prefers text"]


def test_update_and_history_of_a_plain_memory(lt: LongTermMemory) -> None:
    a = lt.remember("Invoice address: 1 Main St", scope=S, kind="fact", metadata={"src": "t1"})
    assert [h.id for h in lt.history(a)] == [a] and lt.get(a).valid_to is None and lt.get(a).key is None
    b = lt.update(a, "Invoice address: 9 High St")
    assert b.supersedes == (a,)
    assert (lt.get(b).kind, lt.get(b).metadata) == ("fact", {"src": "t1"})
    c = lt.update(a, "Invoice address: 7 Low Rd", metadata={"src": "t3"})  # any version names the memory
    assert c.supersedes == (b,) and lt.get(c).metadata == {"src": "t3"}
    assert texts(lt.all(scope=S)) == ["Invoice address: 7 Low Rd"]
    assert [h.text for h in lt.history(c)] == ["Invoice address: 1 Main St", "Invoice address: 9 High St",
                                                "Invoice address: 7 Low Rd"]
    same = lt.update(c, "Invoice address: 7 Low Rd", metadata={"src": "t3"})
    assert same == c and not same.created
    with pytest.raises(NotFound):
        lt.update("mem_nope", "anything at all")


def test_forget_erases_every_version_and_leaves_other_memories(lt: LongTermMemory) -> None:
    a = lt.remember("Prefers email", scope=S, key="contact")
    lt.remember("Prefers phone", scope=S, key="contact")
    other = lt.remember("Owns a dog", scope=S)
    lt.forget(a)  # an old version names the memory too
    assert [h.id for h in lt.all(scope=S, include_superseded=True)] == [other]
    fresh = lt.remember("Prefers chat", scope=S, key="contact")
    assert fresh.supersedes == () and [h.id for h in lt.history(fresh)] == [fresh]


def test_bad_version_input_is_refused(lt: LongTermMemory) -> None:
    for kwargs in ({"key": ""}, {"key": 3}, {"key": "x" * 200}, {"valid_from": "yesterday"},
                   {"valid_from": float("nan")}, {"metadata": {"ff_version": {}}}):
        with pytest.raises(InvalidInput):
            lt.remember("Prefers email", scope=S, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        lt.recall("email", scope=S, as_of="now")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        lt.recall("email", scope=S, as_of=1.0, include_superseded=True)
    assert lt.all(scope=S) == []


def test_versions_survive_a_new_reader(vector_store: VectorStore, embedder: HashEmbedder) -> None:
    """A second LongTermMemory over the same store (another process's view) sees the same versions."""
    writer = LongTermMemory(vector_store, embedder)
    a = writer.remember("Prefers email", scope=S, key="contact")
    writer.recall("email", scope=S)  # cache the scope in the writer, then supersede
    b = writer.remember("Prefers text", scope=S, key="contact")
    assert texts(writer.recall("email or text", scope=S, k=5)) == ["Prefers text"]
    reader = LongTermMemory(vector_store, embedder)
    assert texts(reader.recall("email or text", scope=S, k=5)) == ["Prefers text"]
    assert [h.id for h in reader.history(b)] == [a, b]


def test_forget_erases_every_version_from_disk(open_memory: OpenMemory, memory_target: Path | str) -> None:
    with open_memory(memory_target) as mem:
        lt = mem.long_term
        a = lt.remember("Prefers Zanzibarmail for contact", scope=S, key="contact")
        b = lt.update(a, "Prefers Quetzalphone for contact")
        lt.remember("Prefers Xylocarpchat for contact", scope=S, key="contact")
        keep = lt.remember("Owns a Dalmatian", scope=S)
        lt.forget(b)
        assert [h.id for h in lt.all(scope=S, include_superseded=True)] == [keep]
    if isinstance(memory_target, str):
        assert_erased(memory_target, "memories")
        return
    raw = b"".join(p.read_bytes() for p in memory_target.rglob("*") if p.is_file()).lower()  # kept tokens are lowercase
    for needle in (b"zanzibarmail", b"quetzalphone", b"xylocarpchat"):
        assert needle not in raw, needle
    assert b"dalmatian" in raw  # the scan can see what is stored


@pytest.mark.postgres
def test_versions_in_a_large_postgresql_scope(postgres_url: str) -> None:
    """A scope searched through the store's candidates sees only current versions too."""
    from fourfold.stores.pgvector import PostgresVectorStore
    from fourfold.stores.postgres import PostgresDatabase

    embedder = HashEmbedder()
    db = PostgresDatabase(postgres_url)
    try:
        store = PostgresVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension, large_at=100)
        lt = LongTermMemory(store, embedder)
        lt.remember_many([{"text": f"customer note {i} about parcel {i}", "scope": "big"} for i in range(150)])
        assert store.is_large("big")
        a = lt.remember("Prefers zeppelin delivery", scope="big", key="delivery", valid_from=1_000)
        b = lt.remember("Prefers drone delivery", scope="big", key="delivery", valid_from=2_000)
        q = "zeppelin or drone delivery"
        assert [h.id for h in lt.recall(q, scope="big", k=2)][:1] == [b]
        assert a not in [h.id for h in lt.recall(q, scope="big", k=10)]
        assert a in [h.id for h in lt.recall(q, scope="big", k=10, as_of=1_500)]
        assert [h.id for h in lt.history(a)] == [a, b]
    finally:
        db.close()


def test_concurrent_keyed_writers_leave_one_current_version_and_a_linear_history(
    database_target: Path | str, embedder: HashEmbedder
) -> None:
    """Writers in two databases' connections (as two processes would) supersede one key at once."""
    import threading

    from fourfold.stores.postgres import PostgresDatabase
    from fourfold.stores.sqlite import SQLiteDatabase, SQLiteVectorStore

    def open_db() -> SQLiteDatabase | PostgresDatabase:
        return SQLiteDatabase(database_target) if isinstance(database_target, Path) else PostgresDatabase(database_target)

    dbs = [open_db(), open_db()]
    try:
        lts = [LongTermMemory(SQLiteVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension),
                              embedder) for db in dbs]

        def write(w: int) -> None:
            for n in range(8):
                lts[w % 2].remember(f"Writer {w} says contact channel number {n}", scope=S, key="contact")

        threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        for lt in lts:
            current = lt.all(scope=S)
            assert len(current) == 1
            history = lt.history(current[0].id)
            assert len(history) == 32 and history[-1].id == current[0].id
            assert all(a.valid_to == b.valid_from for a, b in itertools.pairwise(history))
    finally:
        for db in dbs:
            db.close()
