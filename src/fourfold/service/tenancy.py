"""Tenants: every API key's tenant gets a complete library `Memory` of its own.

Layout of a served data dir::

    <data_dir>/                 the `default` tenant: exactly `Memory.open(data_dir)`, so the
                                CLI and embedded agents see the same data as that tenant
    <data_dir>/tenants/<name>/  another tenant's episode log, facts and conversations
    <data_dir>/vectors/         one Chroma, one collection per tenant (`fourfold_t_<name>`),
                                run by a child process (`stores.worker`) so that Chroma's
                                writes never hold the serving process's GIL
    <data_dir>/keys.sqlite3     API keys (HMAC digests only)

A tenant is a whole `Memory`, not a scope prefix, so the library's semantics hold per tenant
unchanged: scope=None is the tenant's own unscoped space, unscoped episodes are shared only
within the tenant, and `lookup_policy` lists only the tenant's facts.
"""

from __future__ import annotations

import fcntl
import os
import re
import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from fourfold._manifest import check_manifest
from fourfold.embeddings.asymmetric import AsymmetricEmbedder
from fourfold.embeddings.coalescing import CoalescingEmbedder, for_reader
from fourfold.errors import InvalidInput, StoreUnavailable
from fourfold.stores.vector import VectorRecord, VectorStore, WriteTicket
from fourfold.stores.worker import StoreWorker, WorkerEmbedder

if TYPE_CHECKING:
    from fourfold.config import MemoryConfig
    from fourfold.embeddings.base import Embedder
    from fourfold.memory import Memory

__all__ = ["DEFAULT_TENANT", "SERVICE_LOCK", "SingleWriterStore", "Tenants", "check_tenant"]

#: The tenant whose memory is the data dir itself (and the one served when auth is off).
DEFAULT_TENANT = "default"
#: Held (flock) by the process serving a data dir: one writer per data dir.
SERVICE_LOCK = ".fourfold-service.lock"
_TENANT = re.compile(r"[a-z0-9](?:[a-z0-9_-]{0,46}[a-z0-9])?")

#: CPU priority (`nice`) of the store worker's writes: Chroma's adds and the embedding of
#: written memories. 19 is the lowest: writes get the CPU that reads leave over.
WORKER_NICENESS = 19
#: Query batches embedded at once in the serving process (see `CoalescingEmbedder.lanes`).
QUERY_LANES = 3
#: Builds the vector store of one tenant (tests inject an in-memory one).
VectorStoreFactory = Callable[[str], "VectorStore"]


def check_tenant(name: object) -> str:
    """A tenant name: 1-48 lowercase letters, digits, '-' or '_', starting and ending alphanumeric."""
    if not isinstance(name, str) or not _TENANT.fullmatch(name):
        raise InvalidInput(
            f"a tenant name is 1-48 lowercase letters, digits, '-' or '_' (starting and ending "
            f"with a letter or digit), got {name!r:.60}"
        )
    return name


class Tenants:
    """Opens each tenant's `Memory` on first use and keeps it open; safe across threads.

    With `exclusive`, the data dir's service lock is taken for the lifetime of this object,
    so a second service (or `fourfold mcp`) on the same data dir is refused instead of
    silently damaging the embedded vector index.

    By default embedded Chroma runs in a store worker process (`fourfold.stores.worker`) that
    also embeds the memories being written, with its writes niced to `worker_niceness`; this
    process embeds only what readers wait on, up to `query_lanes` batches at once.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        embedder: Embedder | None = None,
        config: MemoryConfig | None = None,
        vector_store: VectorStoreFactory | None = None,
        memories: dict[str, Memory] | None = None,
        exclusive: bool = True,
        store_worker: bool = True,
        worker_niceness: int = WORKER_NICENESS,
        query_lanes: int = QUERY_LANES,
        query_embedder: Embedder | None = None,
    ) -> None:
        """`store_worker=False` runs embedded Chroma and all embedding in this process.

        With a `query_embedder` (an approximation of `embedder`, such as the int8 MiniLM),
        recall queries are embedded by it and everything that is stored by `embedder`
        (see `AsymmetricEmbedder`).
        """
        self.data_dir = Path(data_dir)
        self._config = config
        self._vector_store = vector_store
        self._memories: dict[str, Memory] = {check_tenant(k): v for k, v in (memories or {}).items()}
        self._lock = threading.Lock()
        self._lock_fd = _hold_service_lock(self.data_dir) if exclusive else None
        self._worker: StoreWorker | None = None
        if embedder is None:
            from fourfold.embeddings.minilm import default_embedder

            embedder = default_embedder()
        given = embedder if isinstance(embedder, CoalescingEmbedder) else None  # used as it is
        if store_worker and vector_store is None:
            # Chroma and the embedding of written memories run in a child process at a lower
            # CPU priority: reads are answered first, writes take what is left.
            from fourfold.config import MemoryConfig

            self._worker = StoreWorker(
                self.data_dir / "vectors", lock_timeout=(config or MemoryConfig()).lock_timeout,
                niceness=worker_niceness, embedder=None if given else embedder,
            )
        # Requests embed their queries on many threads at once: one model batch for all of
        # them costs about half as much per query as one call each (MiniLM on 2 cores).
        documents: Embedder
        if given is not None:
            documents = given
        else:
            bulk = WorkerEmbedder(self._worker, embedder) if self._worker and self._worker.embedder_identity else None
            # With a query model, the stored model here embeds only what a search must embed
            # before it can answer (episodes the background has not embedded yet): one lane.
            lanes = query_lanes if query_embedder is None else 1
            documents = CoalescingEmbedder(embedder, bulk=bulk, lanes=lanes)
        self.embedder: Embedder = documents
        if query_embedder is not None:
            self.embedder = AsymmetricEmbedder(documents, CoalescingEmbedder(query_embedder, lanes=query_lanes))

    def warm_up(self) -> None:
        """Load the embedding models now (here and in the store worker) and start the worker."""
        self.embedder.embed("warm up")  # the query model
        with for_reader(self.embedder):  # the stored model, here
            self.embedder.embed_many(["warm up the embedder of episodes a search waits on"])
        self.embedder.embed_many(["warm up the embedder of written memories"])  # in the worker

    def get(self, tenant: str) -> Memory:
        """The tenant's memory, opened (and created) on first use."""
        tenant = check_tenant(tenant)
        with self._lock:
            memory = self._memories.get(tenant)
            if memory is None:
                memory = self._open(tenant)
                self._memories[tenant] = memory
            return memory

    def _open(self, tenant: str) -> Memory:
        from fourfold.config import MemoryConfig
        from fourfold.memory import Memory

        config = self._config or MemoryConfig()
        home = self.data_dir if tenant == DEFAULT_TENANT else self.data_dir / "tenants" / tenant
        if self._vector_store is not None:
            store = self._vector_store(tenant)
        else:
            home.mkdir(parents=True, exist_ok=True)
            check_manifest(home, self.embedder.identity)  # before Chroma, as Memory.open does
            collection = config.collection if tenant == DEFAULT_TENANT else f"fourfold_t_{tenant}"
            vectors = self.data_dir / "vectors"
            inner: VectorStore
            if self._worker is not None:
                inner = self._worker.store(collection, self.embedder.identity)
            else:
                from fourfold.stores.chroma import ChromaVectorStore

                inner = ChromaVectorStore.persistent(
                    vectors, self.embedder, collection=collection, lock_timeout=config.lock_timeout
                )
            store = SingleWriterStore(inner)
        return Memory.open(home, embedder=self.embedder, vector_store=store, config=config)

    def close(self) -> None:
        """Close every open memory and release the data dir."""
        with self._lock:
            for memory in self._memories.values():
                memory.close()
            self._memories.clear()
            if self._worker is not None:
                self._worker.close()
                self._worker = None
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # closing the descriptor releases the flock
                self._lock_fd = None


class SingleWriterStore(VectorStore):
    """A tenant's vector store while the service holds the data dir: it is the only writer.

    The embedded store's generation token changes on every write by anyone, so each write
    made every cached scope index of every tenant be rebuilt from Chroma. With one writer,
    `LongTermMemory` already updates exactly the scopes it writes, so the token can stay put.
    """

    def __init__(self, inner: VectorStore) -> None:
        self.inner = inner
        self.embedder_identity = inner.embedder_identity

    def add(self, records: Sequence[VectorRecord]) -> None:
        self.inner.add(records)

    def existing(self, ids: Sequence[str]) -> set[str]:
        return self.inner.existing(ids)

    def get(self, ids: Sequence[str]) -> list[VectorRecord]:
        return self.inner.get(ids)

    def scan(self, scope: str | None) -> list[VectorRecord]:
        return self.inner.scan(scope)

    def delete(self, ids: Sequence[str]) -> None:
        self.inner.delete(ids)

    def delete_scope(self, scope: str) -> int:
        return self.inner.delete_scope(scope)

    def count(self) -> int:
        return self.inner.count()

    def scopes(self) -> list[str | None]:
        return self.inner.scopes()

    @contextmanager
    def writing(self) -> Iterator[WriteTicket]:
        with self.inner.writing():
            yield WriteTicket(generation=self.generation())

    def generation(self) -> Hashable | None:
        return "single-writer"

    def close(self) -> None:
        self.inner.close()


def _hold_service_lock(data_dir: Path) -> int:
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(data_dir / SERVICE_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StoreUnavailable(f"cannot use the data dir {data_dir}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreUnavailable(
            f"another fourfold service is already serving {data_dir}: one writer per data dir. "
            "Connect to it instead (RemoteMemory, or its /mcp endpoint)."
        ) from None
    return fd
