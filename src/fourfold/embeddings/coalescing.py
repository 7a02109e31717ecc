"""Coalescing: concurrent embedding calls from many threads share one batch of the inner embedder.

A model embeds a batch far cheaper per text than one text at a time (MiniLM on ONNX Runtime,
2 cores: ~5 ms for one short query, ~2 ms per query in a batch of 16). A service embeds one
query per request on many threads, so while one batch runs, the calls that arrive queue up
and the next caller to find the model free embeds all of them at once. Nobody waits on a
timer: a call that finds the model idle runs at once, alone.

Queries come first. A query (`embed`, one text a reader waits on) is served before bulk work
(`embed_batch`/`embed_many`: memories being written), and bulk work runs in chunks of at most
`bulk_chunk` texts, so a query waits for at most one chunk instead of a whole write. Bulk
work is never starved: after `urgent_streak` query batches in a row, one bulk chunk runs.
Given a `bulk` embedder (the same model elsewhere, such as a service's lower-priority store
worker), bulk work goes there instead and the model here embeds only queries.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass

import numpy as np

from fourfold.embeddings.base import Embedder, Vectors
from fourfold.errors import InvalidInput, ModelError

__all__ = ["CoalescingEmbedder", "for_reader"]

#: Texts share an inner batch while the longest is at most this many times the shortest.
_LENGTH_SPREAD = 2
#: Bulk texts per inner batch (about 10 ms of MiniLM on 2 cores for 20-word notes).
DEFAULT_BULK_CHUNK = 8
#: Query batches that may run in a row while bulk work waits.
DEFAULT_URGENT_STREAK = 4


@dataclass
class _Call:
    texts: Sequence[str]
    #: Signalled (under the coalescer's lock) when the call is done or made the leader.
    wake: threading.Condition
    vectors: Vectors | None = None
    error: Exception | None = None
    #: The shared batch failed: the caller embeds its own texts alone, so an error reaches
    #: exactly the callers whose texts cause it.
    retry_alone: bool = False
    lead: bool = False
    done: bool = False


class CoalescingEmbedder(Embedder):
    """Wraps an embedder so that concurrent `embed_batch` calls run as one inner batch.

    Vectors, name and dimension are the inner embedder's, so stores accept either. Batches
    hold at most `max_batch` texts (a single larger call runs alone) and are split by text
    length so short queries are not padded to long notes; `embed`'s query cache works as
    for any embedder. The inner embedder must be safe to call from several threads
    (every embedder fourfold ships is), since a failed batch is retried call by call.
    """

    def __init__(
        self,
        inner: Embedder,
        *,
        max_batch: int | None = None,
        bulk_chunk: int = DEFAULT_BULK_CHUNK,
        urgent_streak: int = DEFAULT_URGENT_STREAK,
        bulk: Embedder | None = None,
        lanes: int = 1,
    ) -> None:
        if bulk is not None and bulk.identity != inner.identity:
            raise InvalidInput(f"the bulk embedder is {bulk.identity}, not {inner.identity}")
        self.inner = inner
        self.bulk = bulk
        self.name = inner.name
        self.dimension = inner.dimension
        self.batch_size = inner.batch_size
        self.query_cache_size = inner.query_cache_size
        self.approximates = inner.approximates
        self.max_batch = max_batch or inner.batch_size
        self.bulk_chunk = bulk_chunk
        self.urgent_streak = urgent_streak
        self.lanes = lanes
        for name in ("max_batch", "bulk_chunk", "urgent_streak", "lanes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidInput(f"{name} must be a whole number of at least 1, got {value!r:.40}")
        self._lock = threading.Lock()
        self._urgent: list[_Call] = []  # queries
        self._queue: list[_Call] = []  # bulk work
        self._streak = 0  # query batches run in a row while bulk work waited
        self._leaders = 0  # batches being embedded right now (at most `lanes`)
        self._lane = threading.local()

    def embed(self, text: str) -> Vectors:
        """Embed one query, ahead of queued bulk work (see the module's docstring)."""
        with self.urgent():
            return super().embed(text)

    @contextmanager
    def urgent(self) -> Iterator[None]:
        """Embeddings made in this block on this thread are served as queries: a reader waits on them."""
        before = getattr(self._lane, "urgent", False)
        self._lane.urgent = True
        try:
            yield
        finally:
            self._lane.urgent = before

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        texts = list(texts)
        if getattr(self._lane, "urgent", False):
            return self._submit(texts, urgent=True)
        if self.bulk is not None:
            return np.asarray(self.bulk.embed_batch(texts), dtype=np.float32)
        if len(texts) <= self.bulk_chunk:
            return self._submit(texts, urgent=False)
        step = self.bulk_chunk  # one chunk at a time, so queries can run in between
        parts = [self._submit(texts[i : i + step], urgent=False) for i in range(0, len(texts), step)]
        return np.concatenate(parts).astype(np.float32, copy=False)

    def _submit(self, texts: list[str], *, urgent: bool) -> Vectors:
        call = _Call(texts, threading.Condition(self._lock))
        if not call.texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            (self._urgent if urgent else self._queue).append(call)
            if self._leaders < self.lanes:  # a lane is idle: this thread leads
                self._leaders += 1
                call.lead = True
            while not call.done:
                if not call.lead:
                    call.wake.wait()  # woken only when its batch is done or it is made leader
                    continue
                if not (self._urgent or self._queue):  # another lane took its call: wait for it
                    self._hand_off(call)  # instead of spinning on empty queues while holding a lane
                    continue
                batch = self._take()  # the leader embeds what the policy picks, its own or not
                self._lock.release()
                try:
                    self._run(batch)
                except BaseException:  # interrupted (KeyboardInterrupt...): nobody may wait on it
                    self._lock.acquire()
                    self._finish(batch, call)
                    for queue in (self._urgent, self._queue):
                        if call in queue:
                            queue.remove(call)
                    call.done = True
                    self._hand_off(call)
                    raise
                self._lock.acquire()
                self._finish(batch, call)
            if call.lead:  # done: by its own batch, or by another lane's after it was made leader
                self._hand_off(call)
        if call.error is not None:
            raise call.error
        if call.retry_alone:
            return np.asarray(self.inner.embed_batch(call.texts), dtype=np.float32)
        if call.vectors is None:  # the leader was interrupted (KeyboardInterrupt, SystemExit)
            raise ModelError("the shared embedding batch was interrupted")
        return call.vectors

    @staticmethod
    def _finish(batch: list[_Call], leader: _Call) -> None:
        for queued in batch:
            queued.done = True
            if queued is not leader:
                queued.wake.notify()

    def _hand_off(self, leader: _Call) -> None:
        """The leader is done: one waiting caller leads next, or the model goes idle."""
        leader.lead = False
        for waiting in (*self._urgent, *self._queue):
            if not waiting.lead:
                waiting.lead = True
                waiting.wake.notify()
                return
        self._leaders -= 1

    def _take(self) -> list[_Call]:
        """The next batch: queued queries first, else (or when bulk work has waited
        `urgent_streak` query batches) the oldest bulk calls, up to `bulk_chunk` texts."""
        if self._urgent and not (self._queue and self._streak >= self.urgent_streak):
            self._streak = self._streak + 1 if self._queue else 0
            batch, self._urgent = _oldest(self._urgent, self.max_batch)
            return batch
        self._streak = 0
        batch, self._queue = _oldest(self._queue, self.bulk_chunk)
        return batch

    def _run(self, batch: list[_Call]) -> None:
        texts = [text for call in batch for text in call.texts]
        try:
            vectors = self._embed(texts)
        except Exception as exc:
            if len(batch) == 1:
                batch[0].error = exc  # its own texts failed: raised in its caller's thread
            for call in batch:
                call.retry_alone = len(batch) > 1
            return
        start = 0
        for call in batch:
            call.vectors = vectors[start : start + len(call.texts)]
            start += len(call.texts)

    def _embed(self, texts: list[str]) -> Vectors:
        """One inner batch per group of similar lengths, rows back in input order.

        A model batch is padded to its longest text: a 6-word query sharing a batch with
        20-word notes costs as much as a note (measured: 16 queries + 4 notes cost 1.8x
        more together than as two batches).
        """
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        start = 0
        while start < len(order):
            limit = _LENGTH_SPREAD * max(1, len(texts[order[start]]))
            end = start + 1
            while end < len(order) and len(texts[order[end]]) <= limit:
                end += 1
            group = order[start:end]
            vectors = np.asarray(self.inner.embed_batch([texts[i] for i in group]), dtype=np.float32)
            if vectors.shape != (len(group), self.dimension):
                raise ModelError(f"the embedder returned shape {vectors.shape} for {len(group)} texts")
            out[group] = vectors
            start = end
        return out


def _oldest(queue: list[_Call], limit: int) -> tuple[list[_Call], list[_Call]]:
    """(the oldest calls holding at most `limit` texts, but always one; the rest)."""
    size, count = 0, 0
    for queued in queue:
        if count and size + len(queued.texts) > limit:
            break
        size += len(queued.texts)
        count += 1
    return queue[:count], queue[count:]


def for_reader(embedder: Embedder) -> AbstractContextManager[None]:
    """A block whose embeddings a reader waits on (see `CoalescingEmbedder.urgent`); a no-op
    for an embedder without priorities."""
    urgent = getattr(embedder, "urgent", None)
    return urgent() if callable(urgent) else nullcontext()
