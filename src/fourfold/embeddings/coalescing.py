"""Coalescing: concurrent embedding calls from many threads share one batch of the inner embedder.

A model embeds a batch far cheaper per text than one text at a time (MiniLM on ONNX Runtime,
2 cores: ~5 ms for one short query, ~2 ms per query in a batch of 16). A service embeds one
query per request on many threads, so while one batch runs, the calls that arrive queue up
and the next caller to find the model free embeds all of them at once. Nobody waits on a
timer: a call that finds the model idle runs at once, alone.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fourfold.embeddings.base import Embedder, Vectors
from fourfold.errors import InvalidInput, ModelError

__all__ = ["CoalescingEmbedder"]

#: Texts share an inner batch while the longest is at most this many times the shortest.
_LENGTH_SPREAD = 2


@dataclass
class _Call:
    texts: Sequence[str]
    vectors: Vectors | None = None
    error: Exception | None = None
    #: The shared batch failed: the caller embeds its own texts alone, so an error reaches
    #: exactly the callers whose texts cause it.
    retry_alone: bool = False
    done: bool = False


class CoalescingEmbedder(Embedder):
    """Wraps an embedder so that concurrent `embed_batch` calls run as one inner batch.

    Vectors, name and dimension are the inner embedder's, so stores accept either. Batches
    hold at most `max_batch` texts (a single larger call runs alone) and are split by text
    length so short queries are not padded to long notes; `embed`'s query cache works as
    for any embedder. The inner embedder must be safe to call from several threads
    (every embedder fourfold ships is), since a failed batch is retried call by call.
    """

    def __init__(self, inner: Embedder, *, max_batch: int | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.batch_size = inner.batch_size
        self.query_cache_size = inner.query_cache_size
        self.max_batch = max_batch or inner.batch_size
        if self.max_batch < 1:
            raise InvalidInput("max_batch must be at least 1")
        self._cond = threading.Condition()
        self._queue: list[_Call] = []
        self._busy = False

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        call = _Call(list(texts))
        if not call.texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._cond:
            self._queue.append(call)
            while True:
                while self._busy and not call.done:
                    self._cond.wait()
                if call.done:
                    break
                self._busy = True  # this thread leads: it embeds what has queued so far
                batch = self._take()
                self._cond.release()
                try:
                    self._run(batch)
                finally:
                    self._cond.acquire()
                    self._busy = False
                    for queued in batch:
                        queued.done = True
                    self._cond.notify_all()
        if call.error is not None:
            raise call.error
        if call.retry_alone:
            return np.asarray(self.inner.embed_batch(call.texts), dtype=np.float32)
        if call.vectors is None:  # the leader was interrupted (KeyboardInterrupt, SystemExit)
            raise ModelError("the shared embedding batch was interrupted")
        return call.vectors

    def _take(self) -> list[_Call]:
        """The oldest queued calls, up to `max_batch` texts (always at least one call)."""
        size, count = 0, 0
        for queued in self._queue:
            if count and size + len(queued.texts) > self.max_batch:
                break
            size += len(queued.texts)
            count += 1
        batch, self._queue = self._queue[:count], self._queue[count:]
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
