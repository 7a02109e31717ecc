"""Tenants: every API key's tenant gets a complete library `Memory` of its own.

Layout of a served data dir::

    <data_dir>/                 the `default` tenant: exactly `Memory.open(data_dir)`, so the
                                CLI and embedded agents see the same data as that tenant
    <data_dir>/tenants/<name>/  another tenant's data dir (its own SQLite file)
    <data_dir>/keys.sqlite3     API keys (HMAC digests only)

A tenant is a whole `Memory`, not a scope prefix, so the library's semantics hold per tenant
unchanged: scope=None is the tenant's own unscoped space, unscoped episodes are shared only
within the tenant, and `lookup_policy` lists only the tenant's facts.

On PostgreSQL (`Tenants("postgresql://...")`) each tenant is a PostgreSQL *schema* of one
database: `fourfold` (or the URL's `?schema=`) for `default`, `<that>_t_<name>` for another
tenant; API keys live in the default tenant's schema. A schema rather than a tenant column,
because the stores' SQL then stays tenant-unaware (no query can forget a tenant predicate),
each tenant has its own clock row (one tenant's writes never wait on another's), and a whole
tenant is erased with one DROP SCHEMA. The cost, a dozen tables per tenant in the catalog, is
small for the hundreds to thousands of tenants a deployment serves.

On SQLite (the default) any number of processes may serve, and use from the CLI, one data dir
at once. A data dir that keeps long-term memory on embedded Chroma (fourfold 0.1's layout)
has one Chroma under `vectors/`, a collection per tenant, and one writer: the service lock.
"""

from __future__ import annotations

import fcntl
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from fourfold._files import private_dir, private_file
from fourfold._manifest import MANIFEST, VECTORS, check_manifest, store_kind
from fourfold._validate import check_name
from fourfold.embeddings.asymmetric import AsymmetricEmbedder
from fourfold.embeddings.coalescing import CoalescingEmbedder, for_reader
from fourfold.errors import FourfoldError, StoreUnavailable
from fourfold.stores.vector import VectorStore

if TYPE_CHECKING:
    from fourfold.config import MemoryConfig
    from fourfold.embeddings.base import Embedder
    from fourfold.memory import Memory

__all__ = ["DEFAULT_TENANT", "SERVICE_LOCK", "Tenants", "check_tenant", "on_chroma"]

#: The tenant whose memory is the data dir itself (and the one served when auth is off).
DEFAULT_TENANT = "default"
#: Held (flock) by the process serving a data dir on embedded Chroma: one writer there.
SERVICE_LOCK = ".fourfold-service.lock"
_TENANT = re.compile(r"[a-z0-9](?:[a-z0-9_-]{0,46}[a-z0-9])?")

#: Embedding threads for queries in the serving process (see `CoalescingEmbedder.threads`).
#: One: queries that arrive while it embeds wait and share its next batch. More threads split
#: the queue into smaller batches, and a batch's fixed cost is paid more often, so more
#: threads cost more service CPU per request (`benchmarks/service.py` compares them).
QUERY_THREADS = 1
#: Builds the vector store of one tenant (tests inject an in-memory one).
VectorStoreFactory = Callable[[str], "VectorStore"]


def check_tenant(name: object) -> str:
    """A tenant name: 1-48 lowercase letters, digits, '-' or '_', starting and ending alphanumeric."""
    return check_name(name, _TENANT, "a tenant name is 1-48 lowercase letters, digits, '-' or '_' "
                      "(starting and ending with a letter or digit)")


class Tenants:
    """Opens each tenant's `Memory` on first use and keeps it open; safe across threads.

    Queries from many request threads are embedded together (`CoalescingEmbedder`); with a
    `query_embedder` (an approximation of `embedder`, such as the int8 MiniLM), recall
    queries are embedded by it and everything that is stored by `embedder`.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        embedder: Embedder | None = None,
        config: MemoryConfig | None = None,
        vector_store: VectorStoreFactory | None = None,
        memories: dict[str, Memory] | None = None,
        query_threads: int = QUERY_THREADS,
        query_embedder: Embedder | None = None,
    ) -> None:
        from fourfold.stores.database import is_url

        #: The PostgreSQL URL of the default tenant, or None for a data dir.
        self.url: str | None = str(data_dir) if is_url(data_dir) else None
        self.data_dir = Path(data_dir) if self.url is None else Path()
        self.where = str(self.data_dir) if self.url is None else _redacted(self.url)
        self._config = config
        self._vector_store = vector_store
        self._memories: dict[str, Memory] = {check_tenant(k): v for k, v in (memories or {}).items()}
        self._lock = threading.Lock()
        self._chroma = vector_store is None and self.url is None and on_chroma(self.data_dir)
        # Embedded Chroma is damaged by two writers; SQLite serializes them itself.
        self._lock_fd = _hold_service_lock(self.data_dir) if self._chroma else None
        if embedder is None:
            from fourfold.embeddings.default import default_embedder

            embedder = default_embedder()
        if isinstance(embedder, AsymmetricEmbedder) and query_embedder is None:
            # Its two models, each behind a coalescer of its own: a coalescer around the pair
            # would embed queries in batches, which go to the stored model.
            query_embedder = embedder.queries
            embedder = embedder.documents
        #: The coalescers made here (closed with the tenants; one passed in is the caller's).
        self._pools: list[CoalescingEmbedder] = []
        documents: Embedder
        if isinstance(embedder, CoalescingEmbedder):
            documents = embedder  # used as it is
        else:
            # With a query model, the stored model embeds only writes and what a search must
            # embed before it can answer (episodes not embedded yet): one thread.
            documents = self._pool(embedder, query_threads if query_embedder is None else 1)
        self.embedder: Embedder = documents
        if query_embedder is not None:
            self.embedder = AsymmetricEmbedder(documents, self._pool(query_embedder, query_threads))

    def _pool(self, embedder: Embedder, threads: int) -> CoalescingEmbedder:
        pool = CoalescingEmbedder(embedder, threads=threads)
        self._pools.append(pool)
        return pool

    def warm_up(self) -> None:
        """Load the embedding models now, so the first request does not wait for them."""
        self.embedder.embed("warm up")  # the query model
        with for_reader(self.embedder):  # the stored model
            self.embedder.embed_many(["warm up the embedder of episodes a search waits on"])

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
        if self.url is not None:
            store = self._vector_store(tenant) if self._vector_store is not None else None
            return Memory.open(_tenant_url(self.url, tenant), embedder=self.embedder, vector_store=store, config=config)
        home = self.data_dir if tenant == DEFAULT_TENANT else self.data_dir / "tenants" / tenant
        if self._vector_store is not None:
            return Memory.open(home, embedder=self.embedder, vector_store=self._vector_store(tenant), config=config)
        if not self._chroma:
            return Memory.open(home, embedder=self.embedder, config=config, store="sqlite")
        from fourfold.stores.chroma import ChromaVectorStore

        private_dir(home)
        check_manifest(home, self.embedder.identity, store="chroma")  # before Chroma, as Memory.open does
        collection = config.collection if tenant == DEFAULT_TENANT else ChromaVectorStore.tenant_collection(tenant)
        store = ChromaVectorStore.persistent(
            self.data_dir / VECTORS, self.embedder, collection=collection, lock_timeout=config.lock_timeout
        )
        return Memory.open(home, embedder=self.embedder, vector_store=store, config=config, store="chroma")

    def degraded(self) -> dict[str, FourfoldError]:
        """The open tenants whose store refused their last write, with the error it gave."""
        with self._lock:
            found = {tenant: memory.database.degraded for tenant, memory in self._memories.items()}
        return {tenant: error for tenant, error in found.items() if error is not None}

    def close(self) -> None:
        """Close every open memory and release the data dir."""
        with self._lock:
            for memory in self._memories.values():
                memory.close()
            self._memories.clear()
            for pool in self._pools:
                pool.close()
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # closing the descriptor releases the flock
                self._lock_fd = None


def _tenant_url(url: str, tenant: str) -> str:
    """The URL of a tenant's schema: the URL's own schema for `default`, `<it>_t_<tenant>` else."""
    from fourfold.stores.postgres import DEFAULT_SCHEMA, split_schema, with_schema

    base = split_schema(url)[1] or DEFAULT_SCHEMA
    return url if tenant == DEFAULT_TENANT else with_schema(url, f"{base}_t_{tenant}")


def _redacted(url: str) -> str:
    from fourfold.stores.postgres import redact_url

    return redact_url(url)


def on_chroma(data_dir: Path) -> bool:
    """Whether the data dir keeps long-term memory on embedded Chroma (fourfold 0.1's layout)."""
    import json

    try:
        manifest = json.loads((data_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and store_kind(manifest) == "chroma"


def _hold_service_lock(data_dir: Path) -> int:
    try:
        private_dir(data_dir)
        fd = private_file(data_dir / SERVICE_LOCK)
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
