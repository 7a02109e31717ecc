"""The service under concurrent requests: enough worker threads, and shared embedding batches."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fastapi.testclient import TestClient

from fourfold.embeddings import CoalescingEmbedder, HashEmbedder
from fourfold.service.app import create_app
from fourfold.service.keys import KeyStore
from fourfold.service.tenancy import Tenants
from fourfold.stores import InMemoryVectorStore
from fourfold.stores.vector import VectorRecord

EMBEDDER = HashEmbedder()
IN_FLIGHT = 60  # more than anyio's default of 40 worker threads


class _Rendezvous(InMemoryVectorStore):
    """A store whose scans return only once IN_FLIGHT of them are running at the same time."""

    def __init__(self) -> None:
        super().__init__(embedder_identity=EMBEDDER.identity)
        self.barrier = threading.Barrier(IN_FLIGHT, timeout=20)

    def scan(self, scope: str | None) -> list[VectorRecord]:
        self.barrier.wait()
        return super().scan(scope)


def test_slow_requests_beyond_anyios_default_thread_count_run_at_once(tmp_path: Path) -> None:
    store = _Rendezvous()
    tenants = Tenants(tmp_path, embedder=EMBEDDER, vector_store=lambda _: store)
    keys = KeyStore(tmp_path / "fourfold.sqlite3")
    headers = {"Authorization": f"Bearer {keys.create('acme')[1]}"}
    try:
        with TestClient(create_app(tenants, keys, mount_mcp=False), raise_server_exceptions=False) as client:

            def recall(i: int) -> int:
                body = {"query": "parcel", "scope": f"customer:{i}"}
                return client.post("/v1/memories/search", json=body, headers=headers).status_code

            with ThreadPoolExecutor(IN_FLIGHT) as pool:
                statuses = list(pool.map(recall, range(IN_FLIGHT)))
        assert statuses == [200] * IN_FLIGHT  # with 40 threads the rendezvous never happens: 500s
    finally:
        tenants.close()
        keys.close()


def test_tenants_share_one_coalescing_embedder(tmp_path: Path) -> None:
    tenants = Tenants(tmp_path, embedder=EMBEDDER, vector_store=lambda _: InMemoryVectorStore(embedder_identity=EMBEDDER.identity))
    try:
        a, b = tenants.get("a"), tenants.get("b")
        assert isinstance(a.long_term.embedder, CoalescingEmbedder)
        assert a.long_term.embedder is b.long_term.embedder is a.episodes.embedder
        assert a.long_term.embedder.identity == EMBEDDER.identity
    finally:
        tenants.close()
