"""SQLite rows keep their tokens: a scope's first read loads them instead of tokenizing its texts.

What is kept must never change what recall finds, and must go when the memory goes.
"""

from __future__ import annotations

import sqlite3
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from conftest import OpenMemory
from fourfold.embeddings import HashEmbedder
from fourfold.longterm import LongTermMemory, MemoryInput
from fourfold.longterm.retrieval import ScopeIndex
from fourfold.stores.sqlite import SQLiteDatabase, SQLiteVectorStore
from fourfold.stores.vector import (
    NO_VECTOR,
    VectorRecord,
    kept_tokens,
    record_tokens,
    stored_record,
    tokens_to_keep,
)
from fourfold.text import tokenize
from fourfold.text.tokenize import TOKENS_TAG

NOTES = [
    MemoryInput("Customer prefers email over phone calls", "c"),
    MemoryInput("Ordered the blue kettle; it arrived broken", "c", metadata={"date": "2023-05-07"}),
    MemoryInput("Zoë's café account is on the Pro plan", "c", metadata={"thread": "t1"}),
    MemoryInput("Asked twice about the refund window", "c", metadata={"thread": "t1", "speaker": "Zoë"}),
    MemoryInput("the and of", "c"),  # no words left: an empty token list, kept as such
]
QUERIES = ["email or phone", "broken kettle in May 2023", "what did Zoë ask about refunds", "Pro plan café"]


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()


def _store(path: Path, embedder: HashEmbedder) -> SQLiteVectorStore:
    return SQLiteVectorStore(SQLiteDatabase(path), embedder_identity=embedder.identity, dimension=embedder.dimension)


def _kept(path: Path) -> dict[str, str | None]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT text, tokens FROM memories").fetchall())


def _ranked(index: ScopeIndex, embedder: HashEmbedder) -> list[list[tuple[str, object]]]:
    return [[(r.id, parts) for r, parts in index.explain(embedder.embed(q), q, k=5, keep=lambda r: True)] for q in QUERIES]


def test_rows_keep_their_tokens_and_rank_as_tokens_made_from_the_text(tmp_path: Path, embedder: HashEmbedder) -> None:
    path = tmp_path / "db.sqlite3"
    store = _store(path, embedder)
    LongTermMemory(store, embedder).remember_many(NOTES)
    records, matrix, tokens, _ = store.scan_tokens("c")
    assert tokens == record_tokens(records)
    kept = _kept(path)
    assert kept["Zoë's café account is on the Pro plan"] == f"{TOKENS_TAG} zoë café account pro plan"
    assert kept["the and of"] == TOKENS_TAG
    made = ScopeIndex.of_scan(records, matrix, embedder.dimension)  # tokens made from the texts
    loaded = ScopeIndex.of_scan(records, matrix, embedder.dimension, tokens=tokens)
    assert _ranked(loaded, embedder) == _ranked(made, embedder)
    assert _ranked(loaded, embedder)[1][0][0] == next(r.id for r in records if "kettle" in r.text)
    store.db.close()
    reopened = _store(path, embedder)  # the kept tokens are read back by another process alike
    again = reopened.scan_tokens("c")
    assert again[2] == tokens
    assert _ranked(ScopeIndex.of_scan(again[0], again[1], embedder.dimension, tokens=again[2]), embedder) == _ranked(
        made, embedder
    )
    reopened.db.close()


def test_tokens_missing_or_of_another_tokenizer_are_made_from_the_text(tmp_path: Path, embedder: HashEmbedder) -> None:
    path = tmp_path / "db.sqlite3"
    store = _store(path, embedder)
    LongTermMemory(store, embedder).remember_many(NOTES)
    with store.db.write() as conn:  # as an older fourfold, or one with another stemmer, would leave them
        conn.execute("UPDATE memories SET tokens = NULL WHERE text LIKE 'Customer%'")
        conn.execute("UPDATE memories SET tokens = 't0-old kettl nonsens' WHERE text LIKE 'Ordered%'")
    records, _, tokens, _ = store.scan_tokens("c")
    assert tokens == record_tokens(records)
    assert "nonsens" not in {t for ts in tokens for t in ts}
    assert kept_tokens("t0-old kettl") is None and kept_tokens(None) is None
    assert kept_tokens(tokens_to_keep(["a", "b"])) == ["a", "b"]
    store.db.close()


def test_the_kept_tokens_are_what_a_scope_read_gives(tmp_path: Path, embedder: HashEmbedder) -> None:
    """The read takes the row's tokens under the current tag as they are (it does not tokenize
    the text again): a word only the kept tokens hold is found by lexical search."""
    path = tmp_path / "db.sqlite3"
    store = _store(path, embedder)
    LongTermMemory(store, embedder).remember_many(NOTES)
    with store.db.write() as conn:
        conn.execute("UPDATE memories SET tokens = ? WHERE text LIKE 'Customer%'", (tokens_to_keep(["zyzzyva"]),))
    records, matrix, tokens, _ = store.scan_tokens("c")
    assert tokens[[r.text for r in records].index("Customer prefers email over phone calls")] == ["zyzzyva"]
    index = ScopeIndex.of_scan(records, matrix, embedder.dimension, tokens=tokens)
    (top, parts), *_ = index.explain(embedder.embed("zyzzyva"), "zyzzyva", k=1, keep=lambda r: True)
    assert top.text.startswith("Customer") and parts.lexical > 0
    store.db.close()


def test_a_file_from_before_kept_tokens_gains_them_all_on_open(tmp_path: Path, embedder: HashEmbedder) -> None:
    path = tmp_path / "db.sqlite3"
    store = _store(path, embedder)
    LongTermMemory(store, embedder).remember_many([*NOTES, *(MemoryInput(f"note number {i}", "d") for i in range(12))])
    store.db.close()
    with sqlite3.connect(path) as conn:  # the memories table as fourfold wrote it before
        conn.execute("ALTER TABLE memories DROP COLUMN tokens")
    reopened = _store(path, embedder)
    kept = _kept(path)
    assert len(kept) == len(NOTES) + 12 and None not in kept.values()
    for scope in ("c", "d"):
        records, _, tokens, _ = reopened.scan_tokens(scope)
        assert tokens == record_tokens(records)
        assert [kept[r.text] for r in records] == [tokens_to_keep(t) for t in tokens]
    reopened.db.close()


def test_forgetting_a_memory_leaves_none_of_its_tokens_on_disk(open_memory: OpenMemory, tmp_path: Path) -> None:
    (word,) = tokenize("Quetzalcoatl")  # lowercase: in the kept tokens only, not in the text
    with open_memory() as mem:
        gone = mem.long_term.remember("Ships to Quetzalcoatl street", scope="a")
        mem.long_term.remember("Ships to Quetzalcoatl avenue", scope="b")
        mem.long_term.remember("Prefers email", scope="a")
        files = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
        assert any(word.encode() in p.read_bytes() for p in files)  # the tokens are on disk
        mem.long_term.forget(gone)
        mem.forget_scope("b")
        assert [r.text for r in mem.long_term.recall("Quetzalcoatl", scope="a", k=5)] == ["Prefers email"]
        for p in (tmp_path / "data").rglob("*"):  # the log included: no byte of either, in any case
            assert not p.is_file() or word.encode() not in p.read_bytes().lower(), p


def test_a_row_with_a_vector_of_another_length_is_named(tmp_path: Path, embedder: HashEmbedder) -> None:
    from fourfold import StoreCorrupt

    store = _store(tmp_path / "db.sqlite3", embedder)
    ids = LongTermMemory(store, embedder).remember_many(NOTES)
    with store.db.write() as conn:
        conn.execute("UPDATE memories SET embedding = zeroblob(16) WHERE id = ?", (ids[2].id,))
    for scan in (store.scan_tokens, store.scan_matrix):
        with pytest.raises(StoreCorrupt, match=f"{ids[2].id} has a vector of 4 numbers"):
            scan("c")
    store.db.close()


def test_a_stored_record_is_the_record_its_constructor_makes(embedder: HashEmbedder) -> None:
    fields = ("id-1", "text", NO_VECTOR, None, "note", 12.5, {"thread": "t"}, 3, ("fact",))
    made = stored_record(*fields)
    assert type(made) is VectorRecord and made == VectorRecord(*fields)
    assert repr(made) == repr(VectorRecord(*fields))
    with pytest.raises(FrozenInstanceError):
        made.text = "changed"  # type: ignore[misc]
