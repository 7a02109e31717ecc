"""Coalescing: concurrent embedding calls from many threads share one batch of the inner embedder.

A model embeds a batch far cheaper per text than one text at a time. A service embeds one
query per request on many threads. So every call is queued, and a small pool of embedding
threads drains the queue: a thread takes whatever is waiting (up to `max_batch` texts),
embeds it as one batch and hands each caller its own rows through the caller's future. While
the pool is busy, new calls pile up and are embedded together next. Nobody waits on a timer:
a call that finds a thread idle is embedded at once, alone.

Queries come first. A query (`embed`, or anything embedded inside `urgent()`: a reader waits
on it) is taken before bulk work (`embed_batch`/`embed_many`: memories being written), and
bulk work is queued in chunks of at most `bulk_chunk` texts, so a query waits for at most the
chunk a thread is embedding. Bulk work is never starved: after `urgent_streak` query batches
in a row, one bulk chunk is taken.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field

import numpy as np

from fourfold.embeddings.base import Embedder, Vectors
from fourfold.errors import InvalidInput, ModelError

__all__ = ["CoalescingEmbedder", "for_reader"]

#: Texts share an inner batch while the longest is at most this many times the shortest.
_LENGTH_SPREAD = 2
#: Bulk texts per inner batch: small enough that a query waiting behind one is not held long.
DEFAULT_BULK_CHUNK = 8
#: Query batches that may be taken in a row while bulk work waits.
DEFAULT_URGENT_STREAK = 4


@dataclass(eq=False)
class _Call:
    """Texts of one caller (at most one batch's worth) and the future it waits on."""

    texts: list[str]
    future: Future[Vectors] = field(default_factory=Future)


class CoalescingEmbedder(Embedder):
    """Wraps an embedder so that concurrent `embed_batch` calls run as one inner batch.

    Vectors, name and dimension are the inner embedder's, so stores accept either. `threads`
    embedding threads (started on first use) run at most that many inner batches at once.
    Batches hold at most `max_batch` texts (a larger call is queued in parts) and are split
    by text length so short queries are not padded to long notes; `embed`'s query cache
    works as for any embedder. If a shared batch fails, each of its calls is embedded again
    alone, so an error reaches exactly the callers whose texts cause it. `close()` ends the
    threads; a closed coalescer embeds on the caller's thread.
    """

    def __init__(
        self,
        inner: Embedder,
        *,
        max_batch: int | None = None,
        bulk_chunk: int = DEFAULT_BULK_CHUNK,
        urgent_streak: int = DEFAULT_URGENT_STREAK,
        threads: int = 1,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.batch_size = inner.batch_size
        self.query_cache_size = inner.query_cache_size
        self.approximates = inner.approximates
        self.max_batch = max_batch or inner.batch_size
        self.bulk_chunk = bulk_chunk
        self.urgent_streak = urgent_streak
        self.threads = threads
        for name in ("max_batch", "bulk_chunk", "urgent_streak", "threads"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidInput(f"{name} must be a whole number of at least 1, got {value!r:.40}")
        self._cond = threading.Condition()
        self._urgent: deque[_Call] = deque()  # queries
        self._bulk: deque[_Call] = deque()  # bulk work
        self._streak = 0  # query batches taken in a row while bulk work waited
        self._workers: list[threading.Thread] = []
        self._closed = False
        self._lane = threading.local()  # per caller thread: whether a reader waits on it

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
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        urgent = getattr(self._lane, "urgent", False)
        step = self.max_batch if urgent else self.bulk_chunk
        calls = [_Call(texts[i : i + step]) for i in range(0, len(texts), step)]
        with self._cond:
            closed = self._closed
            if not closed:
                if not self._workers:
                    self._start()
                (self._urgent if urgent else self._bulk).extend(calls)
                self._cond.notify(len(calls))
        if closed:
            return self._embed(texts)
        vectors = [call.future.result() for call in calls]  # the embedding thread's error, if any
        return vectors[0] if len(vectors) == 1 else np.concatenate(vectors)

    def close(self) -> None:
        """Embed what is queued, then end the threads; later calls run on the caller's thread."""
        with self._cond:
            self._closed = True
            workers, self._workers = self._workers, []
            self._cond.notify_all()
        for worker in workers:
            worker.join()

    def _start(self) -> None:
        for n in range(self.threads):
            worker = threading.Thread(target=self._work, name=f"fourfold-embed-{n}", daemon=True)
            worker.start()
            self._workers.append(worker)

    def _work(self) -> None:
        while True:
            with self._cond:
                while not (self._urgent or self._bulk or self._closed):
                    self._cond.wait()
                if not (self._urgent or self._bulk):
                    return  # closed, and nothing left to embed
                batch = self._take()
                if self._urgent or self._bulk:
                    self._cond.notify()  # more than one batch waits: an idle thread takes the next
            self._run(batch)

    def _take(self) -> list[_Call]:
        """The next batch: queued queries first, else (or when bulk work has waited
        `urgent_streak` query batches) the oldest bulk calls, up to `bulk_chunk` texts."""
        if self._urgent and not (self._bulk and self._streak >= self.urgent_streak):
            self._streak = self._streak + 1 if self._bulk else 0
            queue, limit = self._urgent, self.max_batch
        else:
            self._streak = 0
            queue, limit = self._bulk, self.bulk_chunk
        batch = [queue.popleft()]
        size = len(batch[0].texts)
        while queue and size + len(queue[0].texts) <= limit:
            size += len(queue[0].texts)
            batch.append(queue.popleft())
        return batch

    def _run(self, batch: list[_Call]) -> None:
        """Embed the batch and settle every future in it, whatever happens."""
        try:
            vectors = self._embed([text for call in batch for text in call.texts])
        except Exception as exc:
            if len(batch) == 1:
                batch[0].future.set_exception(exc)
            else:
                for call in batch:
                    self._run([call])
        else:
            start = 0
            for call in batch:
                call.future.set_result(vectors[start : start + len(call.texts)])
                start += len(call.texts)
        finally:
            for call in batch:  # interrupted (SystemExit...): no caller may wait for ever
                if not call.future.done():
                    call.future.set_exception(ModelError("the embedding thread stopped"))

    def _embed(self, texts: list[str]) -> Vectors:
        """One inner batch per group of similar lengths, rows back in input order.

        A model batch is padded to its longest text: a 6-word query sharing a batch with
        20-word notes costs as much as a note, so mixed lengths cost more together than
        as two batches.
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


def for_reader(embedder: Embedder) -> AbstractContextManager[None]:
    """A block whose embeddings a reader waits on (see `CoalescingEmbedder.urgent`); a no-op
    for an embedder without priorities."""
    urgent = getattr(embedder, "urgent", None)
    return urgent() if callable(urgent) else nullcontext()
