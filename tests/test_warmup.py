"""warm_up: an embedder's model loads in a background thread, once, and errors wait for the caller."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from fourfold.embeddings import HashEmbedder
from fourfold.embeddings.base import Embedder, Vectors
from fourfold.embeddings.warmup import warm_up
from fourfold.errors import ModelError


class SlowLoading(Embedder):
    """Loads lazily under a lock, like the ONNX embedder; counts loads and remembers the thread."""

    name = "slow-loading"
    dimension = 4

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.loads = 0
        self.loaded_on: str | None = None
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._ready = False

    def load(self) -> None:
        with self._lock:
            if self._ready:
                return
            self.release.wait(5)
            self.loads += 1
            self.loaded_on = threading.current_thread().name
            if self.fail:
                raise ModelError("the model file is damaged")
            self._ready = True

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.load()
        return np.ones((len(texts), self.dimension), dtype=np.float32) / 2


def test_the_model_loads_on_another_thread_and_once() -> None:
    embedder = SlowLoading()
    thread = warm_up(embedder)
    assert thread is not None and thread.is_alive()  # the caller goes on while it loads
    embedder.release.set()
    vector = embedder.embed("first query")  # waits for the same load, does not start another
    thread.join(5)
    assert embedder.loads == 1
    assert embedder.loaded_on == thread.name != threading.current_thread().name
    assert vector.shape == (4,)


def test_a_failed_warm_up_is_raised_by_the_first_embed_not_lost() -> None:
    embedder = SlowLoading(fail=True)
    embedder.release.set()
    thread = warm_up(embedder)
    assert thread is not None
    thread.join(5)
    with pytest.raises(ModelError, match="damaged"):
        embedder.embed("a query")


def test_embedders_without_a_model_to_load_start_no_thread() -> None:
    assert warm_up(HashEmbedder()) is None
