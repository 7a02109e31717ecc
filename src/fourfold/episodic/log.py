"""An append-only, multi-process-safe JSON Lines log of episodes, searchable by situation."""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fourfold._locks import FileLock
from fourfold._validate import check_k, check_min_score, check_scope, check_text
from fourfold.embeddings import Embedder, Vectors
from fourfold.embeddings.coalescing import for_reader
from fourfold.episodic._codec import build_episode, decode_line, encode_line
from fourfold.episodic._index import EpisodeIndex, dense_text
from fourfold.episodic._snapshot import Snapshot, load_snapshot, save_snapshot
from fourfold.episodic._vectors import VectorSidecar, fsync_dir, write_all, write_atomically
from fourfold.errors import EmbedderMismatch, InvalidInput, LockTimeout, NotFound
from fourfold.ranking import Fusion, lexical_share, rank
from fourfold.text import tokenize
from fourfold.types import Episode

__all__ = ["EpisodeLog"]

#: Write `<log>.index` after parsing this many lines beyond the last snapshot.
SNAPSHOT_EVERY = 5000
#: A candidate sharing no word with the situation must at least be this close in meaning.
MIN_COSINE = 0.25

Floats = npt.NDArray[np.float64]


class EpisodeLog:
    """Episodes in `path` (one JSON object per line), vectors cached in `<path>.vectors`.

    Writers append whole lines with one `os.write` on an O_APPEND descriptor under a
    cross-process lock; readers parse only the bytes appended since their last call.
    """

    def __init__(self, path: str | Path, embedder: Embedder, *, lock_timeout: float = 30.0) -> None:
        if not isinstance(embedder, Embedder):
            raise InvalidInput(f"embedder must be an Embedder, not {type(embedder).__name__}")
        self.path = Path(path)
        self.embedder = embedder
        self._lock = FileLock(
            f"{self.path}.lock", timeout=lock_timeout, hint="Retry, or raise lock_timeout."
        )
        self._snapshot_path = Path(f"{self.path}.index")
        self._sidecar = VectorSidecar(
            Path(f"{self.path}.vectors"), embedder.identity, embedder.dimension
        )
        self._mutex = threading.RLock()  # one thread at a time touches the in-memory index
        self._clear()

    def _clear(self) -> None:
        self._index = EpisodeIndex(self.embedder.dimension)
        self._offset = 0  # bytes of the log parsed so far (always just after a newline)
        self._line_count = 0
        self._file_key: tuple[int, int] | None = None
        self._last_line = b""  # the last line parsed, to notice a replaced file on a reused inode
        self._snapshot_lines = 0  # lines covered by the last snapshot written or read
        self._sidecar.reset()

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
    ) -> Episode:
        """Append one episode (its text redacted) and return it as stored."""
        item = {"goal": goal, "actions": actions, "outcome": outcome, "success": success}
        return self.record_many([{**item, "scope": scope, "tags": tags}])[0]

    def record_many(self, items: Sequence[Mapping[str, Any]]) -> list[Episode]:
        """Append several episodes with one locked, fsynced write; all or none are valid."""
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise InvalidInput("record_many takes a sequence of episode mappings")
        episodes = [build_episode(item, ts=time.time()) for item in items]
        if episodes:
            self._append(b"".join(encode_line(ep) for ep in episodes))
        return episodes

    def _append(self, payload: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock.hold():
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    payload = b"\n" + payload  # a crashed writer left a torn line: end it
                write_all(fd, payload)
                os.fsync(fd)
            finally:
                os.close(fd)
            if size == 0:
                fsync_dir(self.path.parent)

    # -- reading -----------------------------------------------------------------------

    def _refresh(self) -> None:
        """Parse what was appended since the last call; reload if the file was replaced."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            if self._file_key is not None:
                self._clear()
            return
        try:
            st = os.fstat(fd)
            key = (st.st_dev, st.st_ino)
            if self._file_key not in (None, key) or not self._still_same_file(fd, st.st_size):
                self._clear()  # forget_scope (here or elsewhere) or a truncation
            self._file_key = key
            if self._offset == 0:
                self._restore(fd, st.st_size)
            data = (
                os.pread(fd, st.st_size - self._offset, self._offset)
                if st.st_size > self._offset
                else b""
            )
            self._consume(data)
            if self._line_count - self._snapshot_lines >= SNAPSHOT_EVERY:
                self._snapshot(fd)
        finally:
            os.close(fd)

    def _restore(self, fd: int, size: int) -> None:
        """Start from the snapshot of the log's first bytes, when there is a valid one."""
        snap = load_snapshot(self._snapshot_path, fd, size)
        if snap is None:
            return
        self._index.add_many(snap.episodes)
        self._offset, self._line_count, self._last_line = snap.offset, snap.line_count, snap.last_line
        self._snapshot_lines = snap.line_count

    def _snapshot(self, fd: int) -> None:
        snap = Snapshot(self._offset, self._line_count, self._last_line, list(self._index.episodes))
        try:
            save_snapshot(self._snapshot_path, fd, snap)
        except OSError as exc:  # only a cache: the next open parses the log instead
            warnings.warn(f"could not write {self._snapshot_path}: {exc}", RuntimeWarning, stacklevel=4)
        self._snapshot_lines = self._line_count

    def _still_same_file(self, fd: int, size: int) -> bool:
        """The bytes already parsed are still in place (an inode number can be reused)."""
        if size < self._offset:
            return False
        width = len(self._last_line)
        return os.pread(fd, width, self._offset - width) == self._last_line

    def _consume(self, data: bytes) -> None:
        """Index every complete line; a trailing partial line waits for its newline."""
        end = data.rfind(b"\n") + 1
        if not end:
            return
        self._offset += end
        self._last_line = data[data.rfind(b"\n", 0, end - 1) + 1 : end]
        for line in data[:end].split(b"\n")[:-1]:
            self._line_count += 1
            if line.strip():
                self._index_line(line, self._line_count)

    def _index_line(self, line: bytes, lineno: int) -> None:
        try:
            ep = decode_line(line)
        except ValueError as exc:
            warnings.warn(
                f"{self.path}:{lineno}: skipped a corrupt episode line ({exc})",
                RuntimeWarning,
                stacklevel=5,
            )
            return
        if ep.id in self._index.rows:
            warnings.warn(
                f"{self.path}:{lineno}: skipped a duplicate of episode {ep.id}",
                RuntimeWarning,
                stacklevel=5,
            )
            return
        self._index.add(ep)

    def episodes(self, *, scope: str | None = None, success: bool | None = None) -> list[Episode]:
        """Episodes oldest first; scope=None lists every scope, a scope lists exactly that one."""
        scope = check_scope(scope)
        if success is not None and not isinstance(success, bool):
            raise InvalidInput("success must be True, False or None")
        with self._mutex:
            self._refresh()
            return [
                ep
                for ep in self._index.episodes
                if (scope is None or ep.scope == scope)
                and (success is None or ep.success is success)
            ]

    def get(self, episode_id: str) -> Episode:
        """The episode with this id; NotFound if the log has none."""
        with self._mutex:
            self._refresh()
            row = self._index.rows.get(episode_id) if isinstance(episode_id, str) else None
            if row is None:
                raise NotFound(f"no episode {episode_id!r} in {self.path}")
            return self._index.episodes[row]

    def __len__(self) -> int:
        with self._mutex:
            self._refresh()
            return len(self._index.episodes)

    # -- similarity --------------------------------------------------------------------

    def similar_successes(
        self, situation: str, *, k: int = 3, scope: str | None = None, min_score: float | None = None
    ) -> list[Episode]:
        """Successful episodes most like situation, from scope and the unscoped shared ones.

        scope=None sees only unscoped episodes: one customer's episodes never reach another.
        `min_score` drops episodes whose relevance (in [0, 1], on the scale of
        `LongTermMemory.recall`'s scores) is lower.
        """
        situation = check_text(situation, what="situation")
        k = check_k(k)
        scope = check_scope(scope)
        min_score = check_min_score(min_score)
        with self._mutex:
            self._refresh()
            rows = self._index.success_rows(scope)
            if not rows:
                return []
            self._ensure_vectors(rows)
            ranked = self._rank(situation, rows, scope, k, min_score)
            return [self._index.episodes[row] for row in ranked]

    def pending(self) -> int:
        """How many successful episodes have no vector yet (`embed_pending` would embed them)."""
        with self._mutex:
            return len(self._pending())

    def _pending(self) -> list[Episode]:
        self._refresh()
        self._index.set_vectors(self._sidecar.read_new())
        episodes = self._index.episodes
        missing = self._index.rows_without_vector(list(range(len(episodes))))
        return [episodes[row] for row in missing if episodes[row].success]

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

    def _ensure_vectors(self, rows: list[int]) -> None:
        """Load cached vectors, embed the episodes still missing one, and cache those."""
        self._index.set_vectors(self._sidecar.read_new())
        missing = self._index.rows_without_vector(rows)
        if not missing:
            return
        with for_reader(self.embedder):  # a search waits on these: not queued behind bulk writes
            fresh = self._embed([self._index.episodes[row] for row in missing])
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
        try:
            with self._lock.hold():
                self._index.set_vectors(self._sidecar.read_new())
                self._sidecar.append(fresh)
        except (OSError, LockTimeout) as exc:
            # The sidecar is only a cache: searching still works, the next call retries.
            warnings.warn(
                f"could not cache episode vectors in {self._sidecar.path}: {exc}",
                RuntimeWarning,
                stacklevel=4,
            )

    def _rank(
        self, situation: str, rows: list[int], scope: str | None, k: int, min_score: float | None
    ) -> list[int]:
        """The k best rows by the shared ranker's relevance, newest first among equals.

        Rows sharing no word with the situation and not close in meaning are dropped, and so
        are rows below `min_score`.
        """
        episodes = self._index.episodes
        scores, best = self._index.lexical_scores(scope, tokenize(situation))
        lexical = lexical_share(np.array(scores, dtype=np.float64), best)
        query = self.embedder.embed(situation)
        # einsum's own loop, not a BLAS call: BLAS worker threads would then spin and slow
        # down the next embedding on a small machine, for a product that takes microseconds.
        dense = np.einsum("ij,j->i", self._index.vectors(rows), query).astype(np.float64)
        keep = np.nonzero((lexical > 0) | (dense >= MIN_COSINE))[0]
        kept = np.asarray(rows, dtype=np.int64)[keep]
        ts = np.array([episodes[row].ts for row in kept.tolist()], dtype=np.float64)
        ranked = rank(dense[keep], lexical[keep], k=k, fusion=Fusion(), newer=_newest_order(ts, kept))
        return [int(kept[i]) for i, score in ranked if min_score is None or score >= min_score]

    # -- forgetting --------------------------------------------------------------------

    def forget_scope(self, scope: str) -> int:
        """Rewrite the log (and its vector cache) without scope's episodes; returns how many."""
        checked = check_scope(scope)
        if checked is None:
            raise InvalidInput("forget_scope needs a scope; unscoped episodes are shared know-how")
        with self._mutex, self._lock.hold():
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                return 0
            kept, removed, dropped = _split_scope(data, checked)
            if removed or dropped:
                self._rewrite(kept, dropped)
            return removed

    def _rewrite(self, kept: list[bytes], dropped: int) -> None:
        """Replace log and sidecar under the lock; unreadable lines go too (they may hold the text)."""
        if dropped:
            warnings.warn(
                f"{self.path}: dropped {dropped} unreadable line(s) while forgetting",
                RuntimeWarning,
                stacklevel=4,
            )
        self._refresh()
        self._index.set_vectors(self._sidecar.read_new())
        vectors = self._index.known_vectors()
        self._snapshot_path.unlink(missing_ok=True)
        write_atomically(self.path, [line + b"\n" for line in kept])
        kept_ids = {decode_line(line).id for line in kept}
        self._sidecar.rewrite({i: v for i, v in vectors.items() if i in kept_ids})
        self._clear()


def _split_scope(data: bytes, scope: str) -> tuple[list[bytes], int, int]:
    """(lines to keep, episodes of scope removed, unreadable lines dropped)."""
    kept: list[bytes] = []
    removed = dropped = 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            ep = decode_line(line)
        except ValueError:
            dropped += 1
            continue
        if ep.scope == scope:
            removed += 1
        else:
            kept.append(line)
    return kept, removed, dropped


def _newest_order(ts: Floats, rows: npt.NDArray[np.int64]) -> Floats:
    """Each candidate's place from oldest to newest: by timestamp, then by row (log order)."""
    places = np.empty(len(rows), dtype=np.float64)
    places[np.lexsort((rows, ts))] = np.arange(len(rows), dtype=np.float64)
    return places
