"""Shared fixtures: the fast hash embedder, and vector-store backends for the conformance suite."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from fourfold.embeddings import HashEmbedder


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real `chroma run` on 127.0.0.1 for the whole session."""
    from fourfold.testing.chroma_server import ChromaServer

    with ChromaServer(tmp_path_factory.mktemp("chroma-server")) as server:
        yield server.url


def make_store(kind: str, tmp_path: Path, embedder: HashEmbedder, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    if kind == "memory":
        from fourfold.stores import InMemoryVectorStore

        return InMemoryVectorStore(embedder_identity=embedder.identity)
    if kind == "sqlite":
        from fourfold.stores.sqlite import SQLiteDatabase, SQLiteVectorStore

        db = SQLiteDatabase(tmp_path / "fourfold.sqlite3")
        request.addfinalizer(db.close)
        return SQLiteVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension)
    from fourfold.stores.chroma import ChromaVectorStore

    if kind == "chroma":
        return ChromaVectorStore.persistent(tmp_path / "vectors", embedder)
    url = request.getfixturevalue("chroma_server")
    # a fresh collection per test keeps server tests independent
    return ChromaVectorStore.http(url, embedder, collection=f"t_{uuid.uuid4().hex[:12]}")


BACKENDS = ["memory", "sqlite", "chroma", pytest.param("chroma-server", marks=pytest.mark.server)]


@pytest.fixture(params=BACKENDS)
def vector_store(request: pytest.FixtureRequest, tmp_path: Path, embedder: HashEmbedder):  # type: ignore[no-untyped-def]
    store = make_store(request.param, tmp_path, embedder, request)
    yield store
    store.close()
