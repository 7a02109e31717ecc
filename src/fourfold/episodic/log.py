"""Episodes in the data dir's database: appended, listed, and searched by situation.

Every process keeps the log's skeleton in memory (`EpisodeIndex`: each episode's id, scope,
time and outcome, read from one covering index) and, on each read, loads only the episodes
written since its last read: each write stamps its rows with the database's clock, which moves
on in commit order. Texts, tokens and vectors are read when a listing or a search needs them,
a searched scope's all at once, in the same snapshot as the skeleton they complete. An erasure
moves the "episodes/erased" version on, and readers then load the log afresh.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from fourfold._parallel import overlap, spare_core
from fourfold._validate import check_k, check_min_score, check_scope, check_text
from fourfold.embeddings import Embedder, Vectors
from fourfold.embeddings.coalescing import for_reader
from fourfold.episodic._index import EpisodeIndex, dense_text, lexical_text
from fourfold.episodic.codec import build_episode
from fourfold.errors import EmbedderMismatch, InvalidInput, NotFound
from fourfold.ranking import EPISODES, Background, Fusion, lexical_share, rank
from fourfold.stores.database import Database, Lock
from fourfold.stores.engine import open_database
from fourfold.stores.sql import chunked_ids
from fourfold.stores.vector import GLOBAL_SCOPE_KEY, scope_key, tokens_to_keep
from fourfold.text import tokenize
from fourfold.text.tokenize import tokenize_many
from fourfold.types import Episode

__all__ = ["PENDING_SCOPE", "SHARED_SCOPE", "EpisodeLog", "LogCursor"]

#: Moves on with every write of episodes, and with every erasure.
WRITTEN, ERASED = "episodes", "episodes/erased"
#: The shared case base: de-identified cases that every customer's turn reads. `record` refuses
#: it (any client could write there through MCP or REST); the support agent writes it through
#: `insert`, as an import does.
SHARED_SCOPE = "shared:cases"
#: Cases waiting for an operator's review before they are shared (when review is on); as
#: reserved as `SHARED_SCOPE`, and never read by a turn.
PENDING_SCOPE = "shared:cases:pending"

Floats = npt.NDArray[np.float64]
Rows = npt.NDArray[np.intp] | list[int]


class LogCursor(NamedTuple):
    """How far a reader of `EpisodeLog.since` got: the log's load generation and how many episodes it had."""

    generation: int
    position: int


#: What a log holds of every episode (the columns of the `episodes_log` index), its body, and
#: what a search reads of a successful one.
_SKELETON = "id, scope, ts, success, seq"
_BODY = "id, goal, actions, outcome, tags, problem, fix"
_SEARCHED = f"{_BODY}, tokens, embedding, embedder"
#: Successes with no vector of an embedder: three ranges of the `episodes_embedder` index (an
#: OR of them scanned the whole index). A vector is stored with its embedder, never apart.
_UNEMBEDDED = " UNION ALL ".join(
    f"SELECT id FROM episodes WHERE success = 1 AND embedder {test}" for test in ("IS NULL", "< ?", "> ?")
)
#: Past this many bodies missing, a listing reads the whole table rather than asking by id.
_SCAN_BODIES = 2000
#: Episodes fuse their evidence as memories do; only their calibration (`EPISODES`) is their own.
_FUSION = Fusion()


class EpisodeLog:
    """Episodes (goal, actions, outcome, success) in the `episodes` table of a database.

    A path (or a postgresql:// URL) opens a database of the log's own; a `Database` is shared
    with the other stores of a data dir.
    """

    def __init__(self, db: Database | str | os.PathLike[str], embedder: Embedder, *, lock_timeout: float = 30.0) -> None:
        if not isinstance(embedder, Embedder):
            raise InvalidInput(f"embedder must be an Embedder, not {type(embedder).__name__}")
        self._owns = not isinstance(db, Database)
        self.db = open_database(db, timeout=lock_timeout)
        self.path = self.db.where
        self.embedder = embedder
        self._mutex = threading.RLock()  # one thread at a time touches the in-memory index
        #: Whether a core is idle, so a search's reads may run beside its query's embedding.
        self.spare_core: Callable[[], bool] = spare_core
        self._generation = -1  # moves on whenever the index is loaded afresh (see `since`)
        self._clear()

    def _clear(self) -> None:
        self._generation += 1
        self._index = EpisodeIndex(self.embedder.dimension)
        self._seq = 0  # the clock of the newest write loaded
        self._written = -1  # the writes' version when the index was last brought up to date
        self._erased = -1  # the erasure version the index was loaded under

    def close(self) -> None:
        """Close the database when the log opened its own."""
        if self._owns:
            self.db.close()

    # -- writing -----------------------------------------------------------------------

    def record(
        self,
        *,
        goal: str,
        actions: Sequence[str],
        outcome: str,
        success: bool,
        scope: str | None = None,
        tags: Sequence[str] = (),
        problem: str = "",
        fix: str = "",
    ) -> Episode:
        """Append one episode (its text redacted) and return it as stored.

        `problem` and `fix` are what a prompt may show of it (`Episode.problem`), apart from
        the goal as it was said."""
        item = {"goal": goal, "actions": actions, "outcome": outcome, "success": success}
        return self.record_many([{**item, "scope": scope, "tags": tags, "problem": problem, "fix": fix}])[0]

    def record_many(self, items: Sequence[Mapping[str, Any]]) -> list[Episode]:
        """Append several episodes in one transaction; all or none are valid."""
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise InvalidInput("record_many takes a sequence of episode mappings")
        episodes = [build_episode(item, ts=time.time()) for item in items]
        if any(ep.scope in (SHARED_SCOPE, PENDING_SCOPE) for ep in episodes):
            raise InvalidInput(
                f"scope {SHARED_SCOPE!r} is the shared case base: only the support agent's resolve writes it"
            )
        if episodes:
            self.insert(episodes)
        return episodes

    def insert(
        self,
        episodes: Sequence[Episode],
        *,
        vectors: Mapping[str, Vectors] | None = None,
        derived_from: Mapping[str, str] | None = None,
    ) -> None:
        """Store episodes as they are (validated and redacted already: an import, a migration,
        a shared case), with the vectors of this embedder already known for some of them.

        `derived_from` maps an episode's id to the scope it was made from (a shared case to its
        customer): erasing that scope erases the episode too. The link is used for nothing else.
        """
        links = [(episode_id, check_scope(source)) for episode_id, source in (derived_from or {}).items()]
        if any(source is None for _, source in links):
            raise InvalidInput("derived_from maps episode ids to scopes, not None")
        with self.db.write() as conn:
            ((_, seq),) = self.db.bump(conn, [WRITTEN]).values()
            conn.executemany(
                "INSERT INTO episodes (id, scope, ts, success, goal, actions, outcome, tags, seq, pos, tokens, problem, fix)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                [_row(ep, seq, pos, tokens) for pos, (ep, tokens) in enumerate(zip(episodes, _kept(episodes), strict=True))],
            )
            if vectors:
                self._persist_vectors(dict(vectors))
            conn.executemany(
                "INSERT INTO episode_sources (episode_id, source_scope) VALUES (?, ?)"
                " ON CONFLICT (episode_id) DO UPDATE SET source_scope = excluded.source_scope",
                links,
            )

    def sources(self, ids: Sequence[str]) -> dict[str, str]:
        """The scope each of these episodes was derived from, by id; others are absent."""
        found: dict[str, str] = {}
        with self.db.read() as conn:
            for part in chunked_ids(ids):
                marks = ",".join("?" * len(part))
                found.update(conn.execute(
                    f"SELECT episode_id, source_scope FROM episode_sources WHERE episode_id IN ({marks})", part
                ).fetchall())
        return found

    def existing(self, ids: Sequence[str]) -> set[str]:
        """Which of these ids the log holds (an import counts what it adds)."""
        with self.db.read() as conn:
            return {row[0] for row in self._by_id(conn, "id", ids)}

    def stored_vectors(self, ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors (of this embedder) of these episodes, by id; others are absent."""
        found: dict[str, Vectors] = {}
        with self.db.read() as conn:
            for part in chunked_ids(ids):
                marks = ",".join("?" * len(part))
                for episode_id, blob in conn.execute(
                    f"SELECT id, embedding FROM episodes WHERE id IN ({marks}) AND embedder = ?",
                    [*part, self.embedder.identity],
                ):
                    found[episode_id] = np.frombuffer(blob, dtype=np.float32)
        return found

    # -- reading -----------------------------------------------------------------------

    def _refresh(self) -> None:
        """Load the skeleton of the episodes written since the last call; all of it after an erasure."""
        with self.db.read() as conn:
            versions = self.db.versions((ERASED, WRITTEN))
            if versions[ERASED] != self._erased:
                self._clear()
                self._erased = versions[ERASED]
            if versions[WRITTEN] == self._written:
                return  # nothing written since: no query for new rows
            rows = conn.execute(
                f"SELECT {_SKELETON} FROM episodes WHERE seq > ? ORDER BY seq, pos", (self._seq,)
            ).fetchall()
        self._written = versions[WRITTEN]
        if not rows:
            return
        self._index.add_rows(rows)
        self._seq = max(self._seq, int(rows[-1][-1]))  # rows come in seq order

    def _read_bodies(self, rows: Sequence[int], *, scope: str | None = None, of_scope: bool = False) -> None:
        """Read the bodies the index lacks of these rows (all of one scope with `of_scope`), in
        the caller's snapshot: by scope, by id, or the whole table when most are missing."""
        missing = self._index.rows_without_body(rows)
        if not missing:
            return
        with self.db.read() as conn:
            if of_scope:
                found = conn.execute(f"SELECT {_BODY} FROM episodes WHERE scope = ?", (scope_key(scope),)).fetchall()
            elif len(missing) > _SCAN_BODIES:
                found = conn.execute(f"SELECT {_BODY} FROM episodes").fetchall()
            else:
                found = self._by_id(conn, _BODY, [self._index.ids[row] for row in missing])
        self._index.set_bodies(found)

    @staticmethod
    def _by_id(conn: Any, columns: str, ids: Sequence[str]) -> list[Any]:
        found: list[Any] = []
        for part in chunked_ids(ids):
            marks = ",".join("?" * len(part))
            found += conn.execute(f"SELECT {columns} FROM episodes WHERE id IN ({marks})", part).fetchall()
        return found

    def episodes(self, *, scope: str | None = None, success: bool | None = None) -> list[Episode]:
        """Episodes oldest first; scope=None lists every scope, a scope lists exactly that one."""
        scope = check_scope(scope)
        if success is not None and not isinstance(success, bool):
            raise InvalidInput("success must be True, False or None")
        with self._mutex, self.db.read():
            self._refresh()
            rows = self._index.rows_of(scope=scope, any_scope=scope is None, success=success)
            self._read_bodies(rows, scope=scope, of_scope=scope is not None)
            return [self._index.episode(row) for row in rows]

    def lock(self, name: str) -> Lock:
        """A lock named `name` shared by every process using this log (its database's)."""
        return self.db.lock(f"episodes:{name}")

    def since(self, cursor: LogCursor | None = None) -> tuple[LogCursor, list[Episode], bool]:
        """What was added after `cursor`, for a reader that keeps up incrementally.

        Returns the cursor to pass next, the episodes added since (oldest first), and whether
        the log was loaded afresh since then (an erasure or a move, here or in another process):
        then the episodes are all of them and whatever the reader derived must start over.
        Only what the last call did not see is copied.
        """
        with self._mutex, self.db.read():
            self._refresh()
            now = LogCursor(self._generation, len(self._index))
            restarted = cursor is None or cursor.generation != self._generation or cursor.position > now.position
            rows = range(0 if restarted or cursor is None else cursor.position, now.position)
            self._read_bodies(rows)
            return now, [self._index.episode(row) for row in rows], restarted

    def get(self, episode_id: str) -> Episode:
        """The episode with this id; NotFound if the log has none."""
        with self._mutex, self.db.read():
            self._refresh()
            row = self._index.rows.get(episode_id) if isinstance(episode_id, str) else None
            if row is None:
                raise NotFound(f"no episode {episode_id!r}")  # never the server's file path
            self._read_bodies([row])
            return self._index.episode(row)

    def __len__(self) -> int:
        with self._mutex:
            self._refresh()
            return len(self._index)

    # -- similarity --------------------------------------------------------------------

    def similar_successes(
        self,
        situation: str,
        *,
        k: int = 3,
        scope: str | None = None,
        include_unscoped: bool = True,
        min_score: float | None = None,
    ) -> list[Episode]:
        """Successful episodes most like situation, from scope and the unscoped shared ones.

        scope=None sees only unscoped episodes: one customer's episodes never reach another.
        `include_unscoped=False` keeps to the scope alone: anyone who may write unscoped
        episodes (an MCP client) could otherwise plant text in every customer's prompt.
        Each episode's `score` is its relevance in [0, 1] (on the scale of
        `LongTermMemory.recall`'s scores: the same in every scope and log size); `min_score`
        drops episodes whose relevance is lower.
        """
        situation = check_text(situation, what="situation")
        k = check_k(k)
        scope = check_scope(scope)
        min_score = check_min_score(min_score)
        scopes: tuple[str | None, ...] = (
            (None,) if scope is None else (None, scope) if include_unscoped else (scope,)
        )
        tokens = tokenize(situation)
        with self._mutex:
            # With a core idle, the search's reads (a scope's episodes, the first time) and its
            # lexical scores are made on a helper thread while this one embeds the query (see
            # `LongTermMemory`'s first read of a scope); a log that has not read its skeleton
            # yet reads it in line. This thread holds the mutex for the helper and touches
            # nothing of the log meanwhile.
            both = overlap(partial(self._searched, scopes, tokens), partial(self.embedder.embed, situation),
                           spare=self.spare_core) if self._written != -1 else None
            (rows, lexical), query = both if both is not None else (self._searched(scopes, tokens), None)
            if not len(rows):
                return []
            ranked = self._rank(situation, rows, scopes, k, min_score, lexical, query)
            return [replace(self._index.episode(row), score=score) for row, score in ranked]

    def _searched(self, scopes: Sequence[str | None], tokens: list[str]) -> tuple[npt.NDArray[np.intp], Floats]:
        """The successful rows of `scopes`, with everything a search reads of them (bodies,
        tokens, vectors) read or embedded, and their lexical shares for the query's `tokens`;
        the caller holds the mutex."""
        with self.db.read():  # one snapshot for the new episodes and what this search reads of them
            self._refresh()
            rows = self._index.success_rows(scopes)
            if not len(rows):
                return rows, np.zeros(0)
            self._read_groups_of(scopes)
        self._embed_missing(scopes)
        return rows, lexical_share(*self._index.lexical_scores(scopes, tokens))

    def _read_groups_of(self, scopes: Sequence[str | None]) -> None:
        """Read what a search needs of the successful episodes of `scopes` (bodies, kept tokens,
        stored vectors): a group never searched in one query by scope (by the scope's index: a
        third of the time of asking by ids), then, by id, the episodes of the others that
        arrived since or still have no vector (another process may have stored it)."""
        whole, rows = self._index.to_read(scopes)
        identity = self.embedder.identity
        with self.db.read() as conn:
            for scope in whole:
                found = conn.execute(
                    f"SELECT {_SEARCHED} FROM episodes WHERE scope = ? AND success = 1 ORDER BY seq, pos",
                    (scope_key(scope),),
                ).fetchall()
                self._index.set_group(scope, found, identity=identity)
            if rows:
                self._index.set_loaded(self._by_id(conn, _SEARCHED, [self._index.ids[row] for row in rows]),
                                       identity=identity)
        self._index.mark_read(scopes)

    def pending(self) -> int:
        """How many successful episodes have no vector yet (`embed_pending` would embed them)."""
        with self._mutex:
            return len(self._pending())

    def _pending(self) -> list[Episode]:
        """The successful episodes with no stored vector of this embedder, oldest first."""
        with self.db.read() as conn:
            self._refresh()
            ids = conn.execute(_UNEMBEDDED, (self.embedder.identity, self.embedder.identity)).fetchall()
            rows = sorted(row for (episode_id,) in ids if (row := self._index.rows.get(episode_id)) is not None)
            self._read_bodies(rows)
        return [self._index.episode(row) for row in rows]

    def embed_pending(self) -> int:
        """Embed and cache the vector of every successful episode that has none yet; returns
        how many were embedded.

        Searches embed what they miss themselves. A writer that records episodes under load can
        call this after recording, off its request path, so that searches find them ready. The
        model runs without holding the log's lock, so searches are not held up meanwhile.
        """
        with self._mutex:
            pending = self._pending()
        if not pending:
            return 0
        fresh = self._embed(pending)
        with self._mutex:
            self._keep_vectors(fresh)
        return len(fresh)

    def _embed_missing(self, scopes: Sequence[str | None]) -> None:
        """Embed the successful episodes of `scopes` still missing a vector (after reading them), and store those."""
        missing = self._index.rows_without_vector(scopes)
        if not missing:
            return
        with for_reader(self.embedder):  # a search waits on these: not queued behind bulk writes
            fresh = self._embed([self._index.episode(row) for row in missing])
        self._keep_vectors(fresh)

    def _embed(self, episodes: list[Episode]) -> dict[str, Vectors]:
        """Vectors of episodes by id, checked against the embedder's dimension."""
        vectors = self.embedder.embed_many([dense_text(ep) for ep in episodes])
        if vectors.shape != (len(episodes), self.embedder.dimension):
            raise EmbedderMismatch(f"{self.embedder.identity} returned vectors of shape {vectors.shape}")
        return {ep.id: vectors[i] for i, ep in enumerate(episodes)}

    def _keep_vectors(self, fresh: dict[str, Vectors]) -> None:
        """Attach new vectors to the index and cache them on disk (caller holds the mutex)."""
        self._index.set_vectors(fresh)
        self._persist_vectors(fresh)

    def _persist_vectors(self, fresh: dict[str, Vectors]) -> None:
        """Store vectors for other processes and later opens (no version moves: a vector is
        derived from its episode, and readers missing one look here before embedding)."""
        rows = [(v.astype(np.float32).tobytes(), self.embedder.identity, i) for i, v in fresh.items()]
        with self.db.write() as conn:
            conn.executemany("UPDATE episodes SET embedding = ?, embedder = ? WHERE id = ?", rows)

    def _rank(
        self, situation: str, rows: npt.NDArray[np.intp], scopes: tuple[str | None, ...], k: int, min_score: float | None,
        lexical: Floats, query: Vectors | None,
    ) -> list[tuple[int, float]]:
        """The k best (row, relevance), by the shared ranker, newest first among equals, from the
        rows' lexical shares and the situation's vector (embedded here when None).

        Rows below `min_score` are dropped: the calibrated relevance is the only floor (a
        cosine cut-off before it lost an eighth of the relevant tickets that share no word
        with the situation: benchmarks/episodes_relevance.py).
        """
        if query is None:
            query = self.embedder.embed(situation)
        # einsum's own loop, not a BLAS call: BLAS worker threads would then spin and slow
        # down the next embedding on a small machine, for a product that takes microseconds.
        # Group by group, on each group's own matrix (`rows` is the groups' rows in order).
        dense = np.concatenate(
            [np.einsum("ij,j->i", self._index.group_vectors(scope), query) for scope in scopes]
        ).astype(np.float64)
        null = Background.of(self.embedder).null(query)
        ranked = rank(dense, lexical, k=k, fusion=_FUSION, calibration=EPISODES, null=null,  # newest first, sorted among the few
                      newer=lambda part: _newest_order(self._index.timestamps(rows[part]), rows[part]))
        return [(int(rows[i]), score) for i, score in ranked if min_score is None or score >= min_score]

    # -- forgetting --------------------------------------------------------------------

    def forget_scope(self, scope: str) -> int:
        """Erase every episode of a scope, and every episode derived from it; returns how many."""
        checked = _named_scope(scope, "forget_scope")
        return self._erase(f"scope = ? OR {_DERIVED}", (checked, checked))

    def forget_derived(self, scope: str) -> int:
        """Erase the episodes derived from a scope (shared cases made from a customer's tickets)."""
        return self._erase(_DERIVED, (_named_scope(scope, "forget_derived"),))

    def forget_unscoped(self) -> int:
        """Erase every unscoped episode; returns how many. Erasure wins over "append-only"."""
        return self._erase("scope = ?", (GLOBAL_SCOPE_KEY,))

    def forget(self, episode_id: str) -> None:
        """Erase one episode; NotFound if there is none."""
        if not isinstance(episode_id, str) or not self._erase("id = ?", (episode_id,)):
            raise NotFound(f"no episode {episode_id!r}")

    def move(self, episode_id: str, *, from_scope: str, to_scope: str) -> Episode:
        """Move one episode of `from_scope` to `to_scope` (a reviewed case to the shared base),
        keeping its id and its link to the scope it was derived from; NotFound if not there."""
        source, target = _named_scope(from_scope, "move"), _named_scope(to_scope, "move")
        with self._mutex:
            with self.db.write() as conn:
                moved = conn.execute(
                    "UPDATE episodes SET scope = ? WHERE id = ? AND scope = ?",
                    (scope_key(target), episode_id, scope_key(source)),
                ).rowcount
                if moved:  # readers load the log afresh, as after an erasure
                    self.db.bump(conn, [ERASED, WRITTEN])
            if not moved:
                raise NotFound(f"no episode {episode_id!r} in scope {source!r}")
            self._clear()
        return self.get(episode_id)

    def _erase(self, where: str, params: tuple[str, ...]) -> int:
        with self._mutex:
            with self.db.write() as conn:
                removed = int(conn.execute(f"DELETE FROM episodes WHERE {where}", params).rowcount)
                if removed:
                    conn.execute("DELETE FROM episode_sources WHERE episode_id NOT IN (SELECT id FROM episodes)")
                    self.db.bump(conn, [ERASED, WRITTEN])
            if removed:
                self.db.erased()
                self._clear()
            return removed


_DERIVED = "id IN (SELECT episode_id FROM episode_sources WHERE source_scope = ?)"


def _named_scope(scope: object, what: str) -> str:
    checked = check_scope(scope)
    if checked is None:
        raise InvalidInput(f"{what} needs a scope; forget_unscoped() erases the unscoped episodes")
    return checked


def _row(ep: Episode, seq: int, pos: int, tokens: str | None) -> tuple[Any, ...]:
    return (
        ep.id, scope_key(ep.scope), ep.ts, int(ep.success), ep.goal,
        json.dumps(list(ep.actions), ensure_ascii=False), ep.outcome,
        json.dumps(list(ep.tags), ensure_ascii=False), seq, pos, tokens, ep.problem or None, ep.fix or None,
    )


def _kept(episodes: Sequence[Episode]) -> list[str | None]:
    """The tokens each episode keeps (`tokens_to_keep` of its `lexical_text`): only a success
    is ever searched, so a failure keeps none. A scope's first search then reads them instead
    of tokenizing its episodes."""
    made = iter(tokenize_many([lexical_text(ep) for ep in episodes if ep.success]))
    return [tokens_to_keep(next(made)) if ep.success else None for ep in episodes]


def _newest_order(ts: Floats, rows: npt.NDArray[np.int64]) -> Floats:
    """Each candidate's place from oldest to newest: by timestamp, then by row (log order)."""
    places = np.empty(len(rows), dtype=np.float64)
    places[np.lexsort((rows, ts))] = np.arange(len(rows), dtype=np.float64)
    return places
