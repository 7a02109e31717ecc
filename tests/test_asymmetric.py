"""AsymmetricEmbedder: stored vectors come from the exact model, only queries from its approximation."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from conftest import OpenMemory
from fourfold.embeddings import CoalescingEmbedder, HashEmbedder, Vectors
from fourfold.embeddings.asymmetric import AsymmetricEmbedder
from fourfold.embeddings.coalescing import for_reader
from fourfold.errors import InvalidInput


class _Model(HashEmbedder):
    """A hash embedder that records what it embedded."""

    def __init__(self, name: str, seed_text: str = "") -> None:
        super().__init__(64)
        self.name = name
        self.seed_text = seed_text
        self.texts: list[str] = []
        self._lock = threading.Lock()

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            self.texts += list(texts)
        # a slightly different model: the same space, other vectors
        return super().embed_batch([self.seed_text + t for t in texts])


class _Approximation(_Model):
    approximates = "exact:64"

    def __init__(self) -> None:
        super().__init__("approx", seed_text="approximately ")


def test_queries_go_to_the_approximation_and_everything_stored_to_the_exact_model() -> None:
    exact, approx = _Model("exact"), _Approximation()
    both = AsymmetricEmbedder(exact, approx)
    assert both.identity == exact.identity  # stores record the exact model
    np.testing.assert_array_equal(both.embed("refund window"), approx.embed("refund window"))
    np.testing.assert_array_equal(both.embed_many(["a note", "another"]), exact.embed_many(["a note", "another"]))
    np.testing.assert_array_equal(both.embed_batch(["a note"]), exact.embed_batch(["a note"]))
    assert "refund window" not in exact.texts and "a note" not in approx.texts


def test_a_query_model_that_does_not_approximate_the_stored_one_is_refused() -> None:
    with pytest.raises(InvalidInput, match="not an approximation"):
        AsymmetricEmbedder(_Model("exact"), _Model("other"))
    with pytest.raises(InvalidInput):
        AsymmetricEmbedder(_Model("exact"), HashEmbedder(32))
    AsymmetricEmbedder(_Model("exact"), _Model("exact"))  # the same model is fine
    AsymmetricEmbedder(_Model("exact"), CoalescingEmbedder(_Approximation()))  # seen through the coalescer


def test_memory_stores_exact_vectors_and_recalls_with_query_vectors(open_memory: OpenMemory) -> None:
    exact, approx = _Model("exact"), _Approximation()
    mem = open_memory(embedder=AsymmetricEmbedder(exact, approx))
    mem.long_term.remember("Prefers email over phone.", scope="user:1")
    mem.episodes.record(goal="refund a damaged parcel", actions=["checked photos"], outcome="refunded",
                        success=True, scope="user:1")
    assert [r.text for r in mem.long_term.recall("contact preference", scope="user:1")] == [
        "Prefers email over phone."
    ]
    mem.episodes.similar_successes("parcel arrived damaged", scope="user:1")
    assert any("Prefers email over phone." in t for t in exact.texts)
    assert any("refund a damaged parcel" in t for t in exact.texts)  # the episode, embedded exactly
    assert approx.texts == ["contact preference", "parcel arrived damaged"]  # only the queries


def test_a_reader_waiting_on_stored_vectors_gets_the_exact_model_first() -> None:
    exact = CoalescingEmbedder(_Model("exact"))
    both = AsymmetricEmbedder(exact, _Approximation())
    with for_reader(both):
        assert getattr(exact._lane, "urgent", False)  # documents a reader waits on jump the queue
        both.embed_many(["an episode a search needs"])
    assert not getattr(exact._lane, "urgent", False)


def test_a_service_with_a_query_model_stores_exact_vectors(tmp_path: Path) -> None:
    from fourfold.service.tenancy import Tenants
    from fourfold.stores import InMemoryVectorStore

    exact, approx = _Model("exact"), _Approximation()
    stores: dict[str, InMemoryVectorStore] = {}

    def store(tenant: str) -> InMemoryVectorStore:
        return stores.setdefault(tenant, InMemoryVectorStore(embedder_identity=exact.identity))

    tenants = Tenants(tmp_path, embedder=exact, query_embedder=approx, vector_store=store)
    try:
        tenants.warm_up()
        memory = tenants.get("acme")
        memory.long_term.remember("Prefers email over phone.", scope="user:1")
        assert [r.text for r in memory.long_term.recall("contact preference", scope="user:1")] == [
            "Prefers email over phone."
        ]
        [record] = stores["acme"].scan("user:1")
        embedded = [t for t in exact.texts if t.startswith(record.text)]  # the text plus its enrichment
        assert embedded and any(
            np.array_equal(record.embedding, _Model("exact").embed_many([t])[0]) for t in embedded
        )
        assert not any(np.array_equal(record.embedding, _Approximation().embed_many([t])[0]) for t in embedded)
        assert "contact preference" in approx.texts and "contact preference" not in exact.texts
        with pytest.raises(InvalidInput):
            Tenants(tmp_path / "other", embedder=exact, query_embedder=HashEmbedder(64), vector_store=store)
    finally:
        tenants.close()


def test_a_query_model_is_used_with_a_coalescer_given_to_the_service_too(tmp_path: Path) -> None:
    from fourfold.service.tenancy import Tenants
    from fourfold.stores import InMemoryVectorStore

    exact, approx = _Model("exact"), _Approximation()
    tenants = Tenants(tmp_path, embedder=CoalescingEmbedder(exact), query_embedder=approx,
                      vector_store=lambda _: InMemoryVectorStore(embedder_identity=exact.identity))
    try:
        memory = tenants.get("acme")
        memory.long_term.remember("Prefers email over phone.", scope="user:1")
        memory.long_term.recall("contact preference", scope="user:1")
        assert approx.texts == ["contact preference"]
    finally:
        tenants.close()


def test_a_service_given_a_pair_coalesces_each_model_apart(tmp_path: Path) -> None:
    """A coalescer around the pair would batch queries to the stored model: the pair is split."""
    from fourfold.service.tenancy import Tenants
    from fourfold.stores import InMemoryVectorStore

    exact, approx = _Model("exact"), _Approximation()
    tenants = Tenants(tmp_path, embedder=AsymmetricEmbedder(exact, approx),
                      vector_store=lambda _: InMemoryVectorStore(embedder_identity=exact.identity))
    try:
        memory = tenants.get("acme")
        memory.long_term.remember("Prefers email over phone.", scope="user:1")
        memory.long_term.recall("contact preference", scope="user:1")
        assert approx.texts == ["contact preference"] and "contact preference" not in exact.texts
        assert any(t.startswith("Prefers email over phone.") for t in exact.texts)
    finally:
        tenants.close()
