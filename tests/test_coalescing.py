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
    calls += [lambda: _for_reader_many(coalescer, ["query a reader waits on"])]
    results = _run_concurrently(calls, inner.gate)

    for b, got in zip(bulk, results[1:5], strict=True):
        np.testing.assert_array_equal(got, HashEmbedder(64).embed_batch(b))
    for i, got in enumerate(results[5:9]):
        np.testing.assert_array_equal(got, HashEmbedder(64).embed(f"query {i}"))
    np.testing.assert_array_equal(results[9], HashEmbedder(64).embed_many(["query a reader waits on"]))
    # Every query was embedded before any of the bulk work that queued with them.
    last_query = max(i for i, batch in enumerate(inner.batches) if any(t.startswith("query") for t in batch))
    assert last_query < _first_batch_with(inner.batches, "bulk")


def _for_reader_many(embedder: CoalescingEmbedder, texts: list[str]) -> Vectors:
    with for_reader(embedder):  # bulk-looking work a reader waits on counts as a query
        return embedder.embed_many(texts)


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


def test_for_reader_is_a_no_op_for_other_embedders_and_nests() -> None:
    with for_reader(HashEmbedder()):  # no priorities there: nothing changes
        pass
    coalescer = CoalescingEmbedder(HashEmbedder(64))
    with for_reader(coalescer):
        with for_reader(coalescer):
            assert coalescer._lane.urgent
        assert coalescer._lane.urgent  # the inner block does not end the outer one
    assert not coalescer._lane.urgent
    coalescer.close()


@pytest.mark.parametrize("threads", [1, 2])
def test_threads_bound_how_many_batches_run_at_once(threads: int) -> None:
    inner = _Recording(linger=0.5 if threads == 2 else 0.05)
    coalescer = CoalescingEmbedder(inner, threads=threads, max_batch=1)
    callers = [threading.Thread(target=coalescer.embed, args=(f"query {i}",)) for i in range(8)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(10)
    assert sorted(t for b in inner.batches for t in b) == sorted(f"query {i}" for i in range(8))
    assert inner.most <= threads
    if threads == 2:
        assert inner.most == 2
    coalescer.close()


def _embedding_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("fourfold-embed-")]


def test_close_embeds_what_is_queued_then_ends_the_threads() -> None:
    before = len(_embedding_threads())
    inner = _Gated()
    coalescer = CoalescingEmbedder(inner, threads=1)
    assert len(_embedding_threads()) == before  # no thread until the first call
    results: list[object] = []
    callers = [threading.Thread(target=lambda i=i: results.append(coalescer.embed(f"queued {i}"))) for i in range(6)]
    for caller in callers:
        caller.start()
    while len(inner.batches) < 1:  # the thread holds the gate
        threading.Event().wait(0.01)
    threading.Event().wait(0.2)  # let the other callers queue up behind it
    assert len(_embedding_threads()) == before + 1
    closer = threading.Thread(target=coalescer.close)
    closer.start()
    inner.gate.set()
    closer.join(10)
    for caller in callers:
        caller.join(10)
    assert not closer.is_alive() and len(results) == 6  # nothing queued was dropped
    assert len(_embedding_threads()) == before
    # A closed coalescer still embeds, on the caller's thread, and starts no thread again.
    np.testing.assert_array_equal(coalescer.embed_batch(["after close"]), HashEmbedder(64).embed_batch(["after close"]))
    assert threading.current_thread().name == "MainThread" and len(_embedding_threads()) == before


def test_the_tenants_close_the_coalescers_they_made(tmp_path: Any) -> None:
    from fourfold.service.tenancy import Tenants

    before = len(_embedding_threads())
    tenants = Tenants(tmp_path, embedder=HashEmbedder(64), query_embedder=HashEmbedder(64))
    tenants.warm_up()
    assert len(_embedding_threads()) > before
    tenants.close()
    assert len(_embedding_threads()) == before


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


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_under_a_storm_of_callers_every_call_completes_with_its_own_rows(threads: int) -> None:
    coalescer = CoalescingEmbedder(_Jittery(), threads=threads, max_batch=2, bulk_chunk=2, urgent_streak=1)
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

    callers = [threading.Thread(target=worker, args=(w,)) for w in range(16)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(60)
    assert not any(caller.is_alive() for caller in callers)  # no call was left waiting
    assert failures == []
    coalescer.close()
