"""CoalescingEmbedder: concurrent calls share inner batches, and each caller gets exactly its own answer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from fourfold.embeddings import CoalescingEmbedder, HashEmbedder, Vectors
from fourfold.embeddings.coalescing import for_reader
from fourfold.errors import InvalidInput, ModelError


class _Gated(HashEmbedder):
    """Records every batch; the first one waits for `gate`, so calls pile up behind it."""

    def __init__(self, *, fail_on: str | None = None) -> None:
        super().__init__(64)
        self.batch_size = 16
        self.gate = threading.Event()
        self.fail_on = fail_on
        self.batches: list[list[str]] = []
        self._lock = threading.Lock()

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            first = not self.batches
            self.batches.append(list(texts))
        if first:
            assert self.gate.wait(10)
        if self.fail_on is not None and any(self.fail_on in t for t in texts):
            raise ModelError(f"cannot embed {self.fail_on!r}")
        return super().embed_batch(texts)


def _run_concurrently(calls: list[Callable[[], object]], release: threading.Event) -> list[object]:
    """Run each call on its own thread; the first blocks the inner model until all have started."""
    results: list[object] = [None] * len(calls)
    started = [threading.Event() for _ in calls]

    def worker(i: int) -> None:
        started[i].set()
        try:
            results[i] = calls[i]()
        except Exception as exc:  # collected: the test checks who got which error
            results[i] = exc

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(calls))]
    threads[0].start()
    assert started[0].wait(5)
    for thread in threads[1:]:
        thread.start()
    for event in started:
        assert event.wait(5)
    threading.Event().wait(0.2)  # let the others reach the queue behind the first batch
    release.set()
    for thread in threads:
        thread.join(10)
    return results


def _texts(i: int) -> list[str]:
    return [f"caller {i} text {j} refund parcel" for j in range(1 + i % 3)]


def test_concurrent_calls_share_batches_and_get_their_own_rows() -> None:
    inner = _Gated()
    coalescer = CoalescingEmbedder(inner, max_batch=8)
    reference = HashEmbedder(64)
    n = 24
    results = _run_concurrently([lambda i=i: coalescer.embed_batch(_texts(i)) for i in range(n)], inner.gate)

    for i, got in enumerate(results):
        assert isinstance(got, np.ndarray), got
        np.testing.assert_array_equal(got, reference.embed_batch(_texts(i)))
    assert len(inner.batches) < n  # merged: fewer model calls than callers
    assert all(len(batch) <= 8 for batch in inner.batches)  # the cap holds
    assert sorted(t for batch in inner.batches for t in batch) == sorted(t for i in range(n) for t in _texts(i))
    assert coalescer.identity == inner.identity


def test_a_failing_batch_reaches_exactly_the_callers_it_concerns() -> None:
    inner = _Gated(fail_on="poison")
    coalescer = CoalescingEmbedder(inner)
    texts = [[f"caller {i} poison" if i % 4 == 1 else f"caller {i} fine"] for i in range(12)]
    results = _run_concurrently([lambda t=t: coalescer.embed_batch(t) for t in texts], inner.gate)

    for t, got in zip(texts, results, strict=True):
        if "poison" in t[0]:
            assert isinstance(got, ModelError) and "poison" in str(got)
        else:
            assert isinstance(got, np.ndarray)
            np.testing.assert_array_equal(got, HashEmbedder(64).embed_batch(t))


def test_when_the_model_is_down_every_caller_gets_the_error() -> None:
    inner = _Gated(fail_on="")  # every text contains the empty string
    coalescer = CoalescingEmbedder(inner)
    results = _run_concurrently([lambda i=i: coalescer.embed([f"q {i}"][0]) for i in range(8)], inner.gate)
    assert all(isinstance(got, ModelError) for got in results)
    with pytest.raises(ModelError):
        coalescer.embed("alone")  # a call that runs alone gets the model's own error


def test_the_query_cache_and_embed_many_work_through_the_coalescer() -> None:
    inner = _Gated()
    inner.gate.set()
    coalescer = CoalescingEmbedder(inner)
    first = coalescer.embed("refund window")
    again = coalescer.embed("refund window")
    assert len(inner.batches) == 1
    np.testing.assert_array_equal(first, again)
    many = [f"text number {i}" for i in range(40)]  # more than batch_size: split as usual
    np.testing.assert_allclose(coalescer.embed_many(many), HashEmbedder(64).embed_many(many), atol=1e-6)
    assert all(len(batch) <= 16 for batch in inner.batches)
    assert coalescer.embed_many([]).shape == (0, 64)


def test_short_queries_are_not_batched_with_long_notes() -> None:
    inner = _Gated()
    coalescer = CoalescingEmbedder(inner)
    short = [f"query {i}" for i in range(6)]
    long = [f"a much longer note number {i} about a parcel that arrived damaged" for i in range(6)]
    texts = [t for pair in zip(short, long, strict=True) for t in pair]
    results = _run_concurrently([lambda t=t: coalescer.embed_batch([t]) for t in texts], inner.gate)
    for text, got in zip(texts, results, strict=True):
        np.testing.assert_array_equal(got, HashEmbedder(64).embed_batch([text]))
    mixed = [batch for batch in inner.batches if max(map(len, batch)) > 2 * min(map(len, batch))]
    assert mixed == []
    assert len(inner.batches) < len(texts)


def test_a_batch_cap_below_one_is_refused_with_a_typed_error() -> None:
    with pytest.raises(InvalidInput):
        CoalescingEmbedder(HashEmbedder(), max_batch=-1)


class _Recording(HashEmbedder):
    """Counts how many of its batches run at once; with `linger`, each batch waits up to that
    long for another to run beside it."""

    def __init__(self, linger: float = 0.0) -> None:
        super().__init__(64)
        self.linger = linger
        self.overlap = threading.Event()
        self.running = 0
        self.most = 0
        self.batches: list[list[str]] = []
        self._lock = threading.Lock()

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.batches.append(list(texts))
            if self.running > 1:
                self.overlap.set()
        try:
            if self.linger:
                self.overlap.wait(self.linger)
            return super().embed_batch(texts)
        finally:
            with self._lock:
                self.running -= 1


def _first_batch_with(batches: list[list[str]], word: str) -> int:
    return next(i for i, batch in enumerate(batches) if any(word in t for t in batch))


def test_queries_run_before_queued_bulk_work() -> None:
    inner = _Gated()
    coalescer = CoalescingEmbedder(inner, bulk_chunk=8)
    bulk = [[f"bulk note {i}-{j} about a parcel" for j in range(8)] for i in range(4)]
    calls: list[Callable[[], object]] = [lambda: coalescer.embed_batch(["holder"])]
    calls += [lambda b=b: coalescer.embed_batch(b) for b in bulk]
    calls += [lambda i=i: coalescer.embed(f"query {i}") for i in range(4)]
    results = _run_concurrently(calls, inner.gate)

    for b, got in zip(bulk, results[1:5], strict=True):
        np.testing.assert_array_equal(got, HashEmbedder(64).embed_batch(b))
    for i, got in enumerate(results[5:]):
        np.testing.assert_array_equal(got, HashEmbedder(64).embed(f"query {i}"))
    # Every query was embedded before any of the bulk work that queued with them.
    last_query = max(i for i, batch in enumerate(inner.batches) if any(t.startswith("query") for t in batch))
    assert last_query < _first_batch_with(inner.batches, "bulk")


def test_bulk_work_runs_in_chunks_and_is_not_starved() -> None:
    inner = _Gated()
    inner.gate.set()
    coalescer = CoalescingEmbedder(inner, bulk_chunk=8)
    texts = [f"note {i} about a refund" for i in range(20)]
    np.testing.assert_array_equal(coalescer.embed_batch(texts), HashEmbedder(64).embed_batch(texts))
    assert [len(b) for b in inner.batches] == [8, 8, 4]

    inner = _Gated()
    coalescer = CoalescingEmbedder(inner, max_batch=1, urgent_streak=1)
    calls: list[Callable[[], object]] = [lambda: coalescer.embed_batch(["holder"])]
    calls += [lambda: coalescer.embed_batch(["bulk note"])]
    calls += [lambda i=i: coalescer.embed(f"query {i}") for i in range(5)]
    _run_concurrently(calls, inner.gate)
    # One query batch at most (urgent_streak=1) ran before the waiting bulk chunk.
    assert _first_batch_with(inner.batches, "bulk") <= 2


def test_a_bulk_embedder_takes_the_bulk_work_and_must_match() -> None:
    local, elsewhere = _Recording(), _Recording()
    coalescer = CoalescingEmbedder(local, bulk=elsewhere)
    coalescer.embed("a query")
    coalescer.embed_many(["a note", "another note"])
    assert local.batches == [["a query"]]
    assert elsewhere.batches == [["a note", "another note"]]
    with for_reader(coalescer):  # embeddings a reader waits on are served here, as queries
        coalescer.embed_many(["an episode a search needs"])
        coalescer.embed("nested query")
        coalescer.embed_many(["still for the reader"])
    coalescer.embed_many(["bulk again"])
    assert local.batches[1:] == [["an episode a search needs"], ["nested query"], ["still for the reader"]]
    assert elsewhere.batches[1:] == [["bulk again"]]
    with for_reader(HashEmbedder()):  # any other embedder: nothing changes
        pass
    with pytest.raises(InvalidInput):
        CoalescingEmbedder(HashEmbedder(64), bulk=HashEmbedder(32))


@pytest.mark.parametrize("lanes", [1, 2])
def test_lanes_bound_how_many_batches_run_at_once(lanes: int) -> None:
    inner = _Recording(linger=0.5 if lanes == 2 else 0.05)
    coalescer = CoalescingEmbedder(inner, lanes=lanes, max_batch=1)
    threads = [threading.Thread(target=coalescer.embed, args=(f"query {i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(t for b in inner.batches for t in b) == sorted(f"query {i}" for i in range(8))
    assert inner.most <= lanes
    if lanes == 2:
        assert inner.most == 2


class _Jittery(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(64)
        self.rng = __import__("random").Random(7)
        self._lock = threading.Lock()

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            pause = self.rng.random() * 0.002
        threading.Event().wait(pause)
        return super().embed_batch(texts)


class _CountingTakes(CoalescingEmbedder):
    """Counts the batches its leaders take that hold no call (a leader with nothing to do)."""

    empty_takes = 0

    def _take(self) -> list[Any]:
        batch = super()._take()
        if not batch:
            self.empty_takes += 1
        return batch


@pytest.mark.parametrize("lanes", [1, 2, 3])
def test_under_a_storm_of_callers_every_call_completes_and_no_lane_is_lost(lanes: int) -> None:
    coalescer = _CountingTakes(_Jittery(), lanes=lanes, max_batch=2, bulk_chunk=2, urgent_streak=1)
    reference = HashEmbedder(64)
    failures: list[str] = []

    def worker(w: int) -> None:
        for n in range(150):
            text = f"worker {w} text {n}"
            if (w + n) % 3:
                got, want = coalescer.embed(text), reference.embed(text)
            else:
                got, want = coalescer.embed_batch([text, text + " more"])[0], reference.embed_batch([text])[0]
            if not np.array_equal(got, want):
                failures.append(text)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    assert coalescer._leaders == 0  # every lane handed back: a leaked one would shrink the pool for good
    # A leader whose own call another lane took must stop leading, not spin on empty queues
    # (it did, over a million times in about 35 s of the service benchmark, holding the GIL).
    assert coalescer.empty_takes == 0
