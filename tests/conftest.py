"""Shared fixtures: the fast hash embedder, a `Memory` on it, the database engines, and
vector-store backends for the conformance suite."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from fourfold.embeddings import HashEmbedder

if TYPE_CHECKING:
    from fourfold import Memory
    from fourfold.testing.postgres import PostgresServer


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()


#: `open_memory(target=None, **options)`: what the `open_memory` fixture hands a test.
OpenMemory = Callable[..., "Memory"]


@pytest.fixture
def open_memory(tmp_path: Path) -> Iterator[OpenMemory]:
    """Open `Memory` handles for the test, each closed after it.

    `open_memory()` opens the data dir `tmp_path / "data"` on the hash embedder; a target (another
    dir, a PostgreSQL URL, `memory_target`) and any `Memory.open` option (`store=`, `config=`,
    `embedder=`, ...) may be given. Calling it twice on one target gives two handles, as two
    processes would have. `with open_memory(...) as mem:` closes a handle early (before its files
    are read or damaged, or the target is reopened); closing it again at the end is harmless.
    """
    from fourfold import Memory

    opened: list[Memory] = []

    def open_(target: Path | str | None = None, /, **options: Any) -> Memory:
        options.setdefault("embedder", HashEmbedder())
        memory = Memory.open(tmp_path / "data" if target is None else target, **options)
        opened.append(memory)
        return memory

    yield open_
    for memory in reversed(opened):
        memory.close()


@pytest.fixture
def memory(open_memory: OpenMemory) -> Memory:
    """An embedded `Memory` on the hash embedder, in `tmp_path / "data"`, closed after the test."""
    return open_memory()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real `chroma run` on 127.0.0.1 for the whole session."""
    from fourfold.testing.chroma_server import ChromaServer

    with ChromaServer(tmp_path_factory.mktemp("chroma-server")) as server:
        yield server.url


#: Chromium's switches on this closed network: no sandbox (root), and none of the background
#: connections it would otherwise keep trying to outside hosts (see ../shared/FACTS.md).
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module: Debian's `chromium` driven by Playwright.

    Playwright's own browser downloads are never used (`executable_path`); each launch gets a
    fresh, empty profile of Playwright's making. `make test` installs chromium when it is missing.
    Module scope, not session: while Playwright's sync API runs, its event loop counts as running
    in this thread, and every later `asyncio.run` / `anyio.run` (the MCP and async client tests)
    would fail with "cannot be called from a running event loop".
    """
    import shutil

    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no chromium on this machine: apt-get install -y chromium (make test does it, as root)")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL 18 + pgvector on 127.0.0.1 for the whole session."""
    from fourfold.testing.postgres import PostgresServer

    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A URL naming a fresh schema of the session's PostgreSQL: a new, empty fourfold database."""
    return f"{postgres_server.url}?schema=t_{uuid.uuid4().hex[:12]}"


#: The database engines every store runs on.
ENGINES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_target(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Path | str:
    """Where a store opened by path keeps its data: a SQLite file, or a fresh PostgreSQL schema."""
    if engine == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return tmp_path / "fourfold.sqlite3"


@pytest.fixture
def memory_target(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Path | str:
    """What `Memory.open` opens: a data dir, or a fresh PostgreSQL schema."""
    if engine == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return tmp_path / "data"


def make_store(kind: str, tmp_path: Path, embedder: HashEmbedder, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    if kind == "memory":
        from fourfold.stores import InMemoryVectorStore

        return InMemoryVectorStore(embedder_identity=embedder.identity)
    if kind == "sqlite":
        from fourfold.stores.sqlite import SQLiteDatabase, SQLiteVectorStore

        db = SQLiteDatabase(tmp_path / "fourfold.sqlite3")
        request.addfinalizer(db.close)
        return SQLiteVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension)
    if kind == "postgres":
        from fourfold.stores.postgres import PostgresDatabase
        from fourfold.stores.sqlite import SQLiteVectorStore

        pg = PostgresDatabase(request.getfixturevalue("postgres_url"))
        request.addfinalizer(pg.close)
        return SQLiteVectorStore(pg, embedder_identity=embedder.identity, dimension=embedder.dimension)
    from fourfold.stores.chroma import ChromaVectorStore

    if kind == "chroma":
        return ChromaVectorStore.persistent(tmp_path / "vectors", embedder)
    url = request.getfixturevalue("chroma_server")
    # a fresh collection per test keeps server tests independent
    return ChromaVectorStore.http(url, embedder, collection=f"t_{uuid.uuid4().hex[:12]}")


BACKENDS = [
    "memory",
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    "chroma",
    pytest.param("chroma-server", marks=pytest.mark.server),
]


@pytest.fixture(params=BACKENDS)
def vector_store(request: pytest.FixtureRequest, tmp_path: Path, embedder: HashEmbedder):  # type: ignore[no-untyped-def]
    store = make_store(request.param, tmp_path, embedder, request)
    yield store
    store.close()
