"""How the episode log keeps episodes: successes keep their tokens, a log reads texts and vectors
only when a listing or a search needs them, and a file of an older fourfold is migrated on open.

What is kept or read late must never change what a listing or a search gives, and must go when
the episode goes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engines import assert_erased
from fourfold.embeddings import HashEmbedder
from fourfold.episodic import EpisodeLog, lexical_text
from fourfold.ranking.bm25 import BM25Index
from fourfold.stores.vector import tokens_to_keep
from fourfold.text import tokenize
from fourfold.types import Episode

ITEMS = [
    {"goal": "refund the damaged parcel", "actions": ["checked photos", "issued refund"], "outcome": "refunded",
     "success": True, "scope": "c1", "tags": ["billing"]},
    {"goal": "router keeps rebooting", "actions": ["updated firmware"], "outcome": "stable since",
     "success": True, "scope": "c1"},
    {"goal": "parcel lost in transit", "actions": ["traced it"], "outcome": "never found", "success": False,
     "scope": "c1"},
    {"goal": "password reset link expired", "actions": ["sent a new link"], "outcome": "signed in",
     "success": True, "scope": "c2", "tags": ["account", "login"]},
    {"goal": "invoice shows the wrong currency", "actions": [], "outcome": "reissued in EUR", "success": True},
    {"goal": "the and of", "actions": [], "outcome": "it", "success": True, "scope": "c2"},  # no words left
]
SITUATIONS = [("damaged parcel refund", "c1"), ("router reboot", "c1"), ("reset password", "c2"), ("currency", None)]


@pytest.fixture
def path(database_target: Path | str) -> Path | str:
    return database_target


def _kept(log: EpisodeLog) -> dict[str, str | None]:
    with log.db.read() as conn:
        return dict(conn.execute("SELECT id, tokens FROM episodes").fetchall())


def _searches(log: EpisodeLog) -> list[list[tuple[str, float | None]]]:
    return [[(e.id, e.score) for e in log.similar_successes(s, scope=scope, k=5)] for s, scope in SITUATIONS]


def _bm25(log: EpisodeLog, scopes: tuple[str | None, ...], query: str) -> tuple[list[float], float]:
    """What `BM25Index` gives over the searched rows, with tokens made from the episodes' text."""
    rows = log._index.success_rows(scopes)
    index = BM25Index()
    for n, row in enumerate(rows):
        index.add(str(n), tokenize(lexical_text(log._index.episode(row))))
    tokens = tokenize(query)
    scores = index.scores(tokens)
    return [scores.get(str(n), 0.0) for n in range(len(rows))], index.best_possible(tokens)


def test_successes_keep_their_tokens_and_failures_keep_none(path: Path | str) -> None:
    log = EpisodeLog(path, HashEmbedder())
    episodes = log.record_many(ITEMS)
    kept = _kept(log)
    for ep in episodes:
        assert kept[ep.id] == (tokens_to_keep(tokenize(lexical_text(ep))) if ep.success else None), ep.goal


def test_a_search_reads_the_kept_tokens_as_they_are(path: Path | str) -> None:
    """The kept tokens are what a search scores (it does not tokenize the text again): a word
    only the kept tokens hold is found by lexical search."""
    writer = EpisodeLog(path, HashEmbedder())
    episodes = writer.record_many(ITEMS)
    with writer.db.write() as conn:
        conn.execute("UPDATE episodes SET tokens = ? WHERE id = ?", (tokens_to_keep(["zyzzyva"]), episodes[1].id))
    reader = EpisodeLog(path, HashEmbedder())
    reader.similar_successes("warm up", scope="c1")
    scores, _ = reader._index.lexical_scores((None, "c1"), ["zyzzyva"])
    rows = reader._index.success_rows((None, "c1")).tolist()
    assert [reader._index.ids[r] for r, s in zip(rows, scores, strict=True) if s > 0] == [episodes[1].id]


def test_tokens_missing_or_of_another_tokenizer_are_made_from_the_text(path: Path | str) -> None:
    writer = EpisodeLog(path, HashEmbedder())
    episodes = writer.record_many(ITEMS)
    with writer.db.write() as conn:  # as an older fourfold, or one with another stemmer, would leave them
        conn.execute("UPDATE episodes SET tokens = NULL WHERE id = ?", (episodes[0].id,))
        conn.execute("UPDATE episodes SET tokens = 't0-old nonsens' WHERE id = ?", (episodes[1].id,))
    reader = EpisodeLog(path, HashEmbedder())
    want = _searches(EpisodeLog(path, HashEmbedder()))
    assert _searches(reader) == want and [ids[0][0] for ids in want[:2]] == [episodes[0].id, episodes[1].id]
    for query in ("damaged parcel refund", "router reboot firmware", "nonsens"):
        got, best = reader._index.lexical_scores((None, "c1"), tokenize(query))
        want_scores, want_best = _bm25(reader, (None, "c1"), query)
        assert list(got) == pytest.approx(want_scores, rel=1e-12) and best == pytest.approx(want_best, rel=1e-12)


def test_listings_after_a_search_hold_every_episode_whole(path: Path | str) -> None:
    """A search reads the texts of the scopes it searches; whatever is listed or fetched
    afterwards (other scopes, one id, everything since a cursor) is whole, as a fresh log has it."""
    writer = EpisodeLog(path, HashEmbedder())
    recorded = writer.record_many(ITEMS)
    log = EpisodeLog(path, HashEmbedder())
    assert len(log.similar_successes("parcel", scope="c1", k=5)) == 3  # c1's two and the unscoped one
    assert log.get(recorded[3].id) == recorded[3]  # of a scope never searched
    assert log.episodes(scope="c2") == [recorded[3], recorded[5]]
    assert log.episodes(success=False) == [recorded[2]]
    later = writer.record(goal="vpn drops at noon", actions=["new profile"], outcome="fixed", success=True, scope="c3")
    cursor, everything, restarted = log.since()
    assert everything == [*recorded, later] and restarted
    assert log.episodes() == EpisodeLog(path, HashEmbedder()).episodes() == everything
    assert [(e.actions, e.tags) for e in everything[:4]] == [(tuple(i["actions"]), tuple(i.get("tags", ())))
                                                             for i in ITEMS[:4]]
    newest = writer.record(goal="card declined abroad", actions=["travel note"], outcome="paid", success=True)
    assert log.since(cursor)[1:] == ([newest], False)


def test_pending_is_the_successes_without_a_vector_of_this_embedder(path: Path | str) -> None:
    first, other = HashEmbedder(), HashEmbedder(128)
    log = EpisodeLog(path, first)
    log.record_many(ITEMS)
    assert log.pending() == 5 and log.embed_pending() == 5 and log.pending() == 0
    assert EpisodeLog(path, other).embed_pending() == 5  # another model's vectors are not this one's
    assert EpisodeLog(path, first).pending() == 5  # and now this one's are replaced
    with log.db.write() as conn:
        conn.execute("UPDATE episodes SET embedding = NULL, embedder = NULL")  # as `fourfold reindex` leaves them
    assert EpisodeLog(path, other).pending() == 5


def test_forgetting_an_episode_leaves_none_of_its_tokens(path: Path | str) -> None:
    (word,) = tokenize("Quetzalcoatl")  # lowercase: in the kept tokens only, not in the text
    log = EpisodeLog(path, HashEmbedder())
    gone = log.record(goal="ship to Quetzalcoatl street", actions=["checked"], outcome="sent", success=True, scope="a")
    log.record(goal="ship to Quetzalcoatl avenue", actions=["checked"], outcome="sent", success=True, scope="b")
    log.record(goal="prefers email", actions=["noted"], outcome="done", success=True, scope="a")
    assert word in (_kept(log)[gone.id] or "")
    assert len(log.similar_successes("Quetzalcoatl", scope="a", k=5)) == 2  # read, and its vectors stored
    log.forget(gone.id)
    log.forget_scope("b")
    assert_erased(path, "episodes", word, "Quetzalcoatl")
    assert [e.goal for e in log.similar_successes("Quetzalcoatl", scope="a", k=5)] == ["prefers email"]


def _as_before(path: Path) -> None:
    """The episodes table and its indexes as fourfold wrote them before successes kept their tokens."""
    with sqlite3.connect(path) as conn:
        for name in ("episodes_log", "episodes_group", "episodes_embedder"):
            conn.execute(f"DROP INDEX {name}")
        conn.execute("CREATE INDEX episodes_seq ON episodes (seq, pos)")
        conn.execute("CREATE INDEX episodes_scope ON episodes (scope)")
        conn.execute("ALTER TABLE episodes DROP COLUMN tokens")


def _indexes(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'episodes'")}


def test_a_file_from_before_kept_tokens_is_migrated_on_open(tmp_path: Path) -> None:
    path = tmp_path / "fourfold.sqlite3"
    log = EpisodeLog(path, HashEmbedder())
    episodes = log.record_many([*ITEMS, *({"goal": f"parcel {i} late", "actions": ["waited"], "outcome": "came",
                                           "success": i % 3 > 0, "scope": f"s{i % 4}"} for i in range(20))])
    log.embed_pending()
    want = _searches(log)
    log.close()
    _as_before(path)
    migrated = EpisodeLog(path, HashEmbedder())
    assert {"episodes_log", "episodes_group", "episodes_embedder"} <= _indexes(path)
    assert not {"episodes_seq", "episodes_scope"} & _indexes(path)
    kept = _kept(migrated)
    assert kept == {ep.id: tokens_to_keep(tokenize(lexical_text(ep))) if ep.success else None for ep in episodes}
    assert _searches(migrated) == want
    assert migrated.episodes() == episodes and migrated.pending() == 0
    migrated.close()


def test_an_old_file_reads_as_before_until_it_is_migrated(tmp_path: Path) -> None:
    """Rows an older fourfold adds to a migrated file have no tokens: a search makes them."""
    path = tmp_path / "fourfold.sqlite3"
    log = EpisodeLog(path, HashEmbedder())
    log.record_many(ITEMS)
    with sqlite3.connect(path) as conn:  # what an older fourfold's insert leaves: no tokens
        conn.execute("UPDATE episodes SET tokens = NULL")
    fresh = EpisodeLog(path, HashEmbedder())
    results = _searches(fresh)
    assert [r[0][0] for r in results] == [log.episodes()[i].id for i in (0, 1, 3, 4)]
    got, best = fresh._index.lexical_scores((None, "c2"), tokenize("password link"))
    want, want_best = _bm25(fresh, (None, "c2"), "password link")
    assert list(got) == pytest.approx(want, rel=1e-12) and best == pytest.approx(want_best, rel=1e-12)


def test_episodes_are_value_objects_whatever_was_read_when(path: Path | str) -> None:
    """An episode read by a search, by id and in a listing is one value, score apart."""
    log = EpisodeLog(path, HashEmbedder())
    recorded = log.record_many(ITEMS)
    reader = EpisodeLog(path, HashEmbedder())
    (found, *_) = reader.similar_successes("damaged parcel refund", scope="c1", k=1)
    assert isinstance(found, Episode) and found.score is not None
    assert found == reader.get(found.id) == recorded[0] and reader.get(found.id).score is None
