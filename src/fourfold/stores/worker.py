"""Embedded Chroma in a child process: its calls never hold the caller's GIL.

Chroma's Rust bindings keep the Python GIL for the whole of an `add` (measured: about 5 ms
for a single record, 0.34 ms per record in batches). In a process that also serves reads,
every thread stalls for that long: in the service under load, Chroma's add held the GIL
about a fifth of the wall-clock time (py-spy). A `StoreWorker` runs the embedded stores
of one Chroma path in a child process instead, and `WorkerVectorStore` is the `VectorStore`
of one collection in it: the same store (`ChromaVectorStore.persistent`, with its
cross-process write lock, scope catalog and generation file), reached over a pipe.

The caller keeps ranking and caches, and only records cross the pipe. Given an embedder, the
child can embed too (`WorkerEmbedder`): a service embeds the memories it writes there and
keeps its own cores for the queries its readers wait on.

Three lanes, each a pipe served by its own thread in the child, one call at a time in the
order they arrive: reads, writes, and embeddings. With `niceness`, the write and embedding
threads run at that lower CPU priority (on Linux a thread's nice value is its own) while reads
keep the caller's, so a read never queues behind writes; it waits only for a Chroma call in
progress, which holds the child's GIL.

If the child dies, a read in flight is retried once on a new child, which reopens the
collections from disk (every acknowledged write is there). A write or an embedding in flight
raises `StoreUnavailable`: it may or may not have landed. A child found dead before a call is
replaced first.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import sys
import threading
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from fourfold import errors
from fourfold.embeddings.base import Embedder, Vectors
from fourfold.errors import EmbedderMismatch, FourfoldError, StoreUnavailable
from fourfold.stores.vector import VectorRecord, VectorStore, WriteTicket

__all__ = ["StoreWorker", "WorkerEmbedder", "WorkerVectorStore"]

log = logging.getLogger(__name__)

_LANES = ("read", "write", "embed")
#: Served on the read pipe, by a child thread at the caller's CPU priority.
_READS = frozenset({"existing", "get", "scan", "count", "scopes", "generation"})
_OPS = _READS | {"add", "delete", "delete_scope"}


class StoreWorker:
    """A child process that owns the embedded Chroma at `path`; one per path and process.

    `niceness` lowers the CPU priority of the child's writes and embeddings (0 keeps the
    caller's): a service that would rather answer reads than finish writes sooner gives its
    writes the CPU that reads leave over. Reads keep the caller's priority.
    `embedder`, if given and picklable, is copied into the child for `WorkerEmbedder`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lock_timeout: float = 30.0,
        niceness: int = 0,
        embedder: Embedder | None = None,
    ) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self.niceness = niceness
        self._embedder_state: bytes | None = None
        if embedder is not None:
            try:
                self._embedder_state = pickle.dumps(embedder)
            except Exception as exc:  # an embedder holding a live client, say: it embeds here
                log.info("the store worker cannot embed with %s (%s); embedding stays in this process", embedder.identity, exc)
        self.embedder_identity = embedder.identity if embedder is not None and self._embedder_state else None
        self._lanes = {lane: threading.Lock() for lane in _LANES}  # one request at a time per pipe
        self._start_lock = threading.Lock()
        self._conns: dict[str, Connection] = {}
        self._process: Any = None
        self._opened: dict[str, str] = {}  # collection -> embedder identity, replayed on restart
        self._closed = False

    def store(self, collection: str, embedder_identity: str) -> WorkerVectorStore:
        """The collection's store, created (and checked against the embedder) in the child."""
        self.call("open", collection, embedder_identity)
        return WorkerVectorStore(self, collection, embedder_identity)

    def call(self, op: str, collection: str, *args: Any) -> Any:
        """Run `op` in the child: reads, writes and embeddings each have a pipe and a thread.

        If the child has died, a read is retried once on a new child. A write is not: it may
        or may not have reached the disk, so its caller gets `StoreUnavailable` and decides.
        """
        lane = "read" if op in _READS else "embed" if op == "embed" else "write"
        attempts = 2 if lane == "read" else 1
        for attempt in range(attempts):
            with self._lanes[lane]:
                process, conns = self._running()
                try:
                    conns[lane].send((op, collection, args))
                    status, value = conns[lane].recv()
                except (EOFError, OSError) as exc:
                    with self._start_lock:
                        if self._process is process:
                            self._stop()
                    if attempt + 1 < attempts:
                        continue
                    raise StoreUnavailable(
                        f"the store worker for {self.path} exited ({type(exc).__name__}); the next call starts a new one"
                    ) from None
            if status == "error":
                raise _error(*value)
            if op == "open":
                self._opened[collection] = args[0]
            elif op == "close":
                self._opened.pop(collection, None)
            return value
        raise AssertionError("unreachable")

    def _running(self) -> tuple[Any, dict[str, Connection]]:
        """The child and its pipes, started (again) if it is not running."""
        with self._start_lock:
            if self._closed:
                raise StoreUnavailable(f"the store worker for {self.path} is closed")
            if self._process is not None and self._process.is_alive():
                return self._process, self._conns
            self._stop()
            context = multiprocessing.get_context("spawn")  # no fork: the caller has threads
            pipes = {lane: context.Pipe() for lane in _LANES}
            process = context.Process(
                target=_serve,
                args=({lane: child for lane, (_, child) in pipes.items()}, str(self.path), self.lock_timeout,
                      self.niceness, self._embedder_state),
                name="fourfold-store-worker", daemon=True,
            )
            process.start()
            for _, child in pipes.values():
                child.close()
            self._process, self._conns = process, {lane: parent for lane, (parent, _) in pipes.items()}
            write = self._conns["write"]
            for collection, identity in self._opened.items():  # a restarted child reopens them
                write.send(("open", collection, (identity,)))
                status, value = write.recv()
                if status == "error":
                    raise _error(*value)
            return process, self._conns

    def _stop(self) -> None:
        conns, process, self._conns, self._process = self._conns, self._process, {}, None
        for conn in conns.values():
            conn.close()  # the child sees EOF, closes its stores and exits
        if process is not None:
            process.join(10)
            if process.is_alive():
                process.kill()
                process.join(5)

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        process = self._process
        return process.pid if process is not None and process.is_alive() else None

    def close(self) -> None:
        """Stop the child (its stores close first); later calls raise `StoreUnavailable`."""
        with self._start_lock:
            self._closed = True
            self._stop()


class WorkerEmbedder(Embedder):
    """Embeds in a `StoreWorker`'s child, with the embedder the worker was given.

    Same vectors and identity as that embedder. There is no query cache here: it is meant
    for bulk work (memories being written), while queries are embedded in the caller.
    """

    query_cache_size = 0

    def __init__(self, worker: StoreWorker, like: Embedder) -> None:
        if worker.embedder_identity != like.identity:
            raise StoreUnavailable(f"the store worker was not given the embedder {like.identity}")
        self.worker = worker
        self.name, self.dimension, self.batch_size = like.name, like.dimension, like.batch_size

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors: Vectors = np.asarray(self.worker.call("embed", "", list(texts)), dtype=np.float32)
        return vectors


class WorkerVectorStore(VectorStore):
    """One collection of a `StoreWorker`'s embedded Chroma.

    `writing()` serializes this process's writers (a nested block joins the outer one);
    each call is atomic in the child under the store's cross-process write lock. It does
    not hold that lock across calls, so a caller that needs a check-then-write to be atomic
    against other processes must be their only writer, as the service is.
    """

    def __init__(self, worker: StoreWorker, collection: str, embedder_identity: str) -> None:
        self.worker = worker
        self.collection = collection
        self.embedder_identity = embedder_identity
        self._writing = threading.RLock()

    def _call(self, op: str, *args: Any) -> Any:
        return self.worker.call(op, self.collection, *args)

    def add(self, records: Sequence[VectorRecord]) -> None:
        if records:
            with self._writing:
                self._call("add", list(records))

    def existing(self, ids: Sequence[str]) -> set[str]:
        return set(self._call("existing", list(ids))) if ids else set()

    def get(self, ids: Sequence[str]) -> list[VectorRecord]:
        return list(self._call("get", list(ids))) if ids else []

    def scan(self, scope: str | None) -> list[VectorRecord]:
        return list(self._call("scan", scope))

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            with self._writing:
                self._call("delete", list(ids))

    def delete_scope(self, scope: str) -> int:
        with self._writing:
            return int(self._call("delete_scope", scope))

    def count(self) -> int:
        return int(self._call("count"))

    def scopes(self) -> list[str | None]:
        return list(self._call("scopes"))

    @contextmanager
    def writing(self) -> Iterator[WriteTicket]:
        ticket = WriteTicket()
        with self._writing:
            yield ticket
            ticket.generation = self.generation()

    def generation(self) -> Hashable | None:
        value: Hashable | None = self._call("generation")
        return value

    def close(self) -> None:
        try:
            self._call("close")
        except StoreUnavailable:
            pass  # the worker is gone: nothing of this collection is left open


def _error(kind: str, message: str) -> FourfoldError:
    """The child's error as the same typed error here (any other as StoreUnavailable)."""
    cls = getattr(errors, kind, None)
    if isinstance(cls, type) and issubclass(cls, FourfoldError):
        return cls(message)
    return StoreUnavailable(f"the store worker failed: {kind}: {message}")


def _serve(
    conns: dict[str, Connection], path: str, lock_timeout: float, niceness: int, embedder_state: bytes | None
) -> None:
    """The child: one thread per lane; the write and embedding threads run niced.

    On Linux a thread's nice value is its own, and threads inherit it from the one that starts
    them: ONNX's threads, started on the first embedding, share the embedding thread's.

    A read that arrives while a niced write is inside Chroma waits for it (the call holds
    this process's GIL), so a busy machine can slow a cold read. Measured in the service
    benchmark, niced writes still gave lower read latency than writes at normal priority.
    """
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    # The caller's stdout may be a protocol channel (`fourfold mcp` speaks MCP over it): anything
    # the child or a library in it prints goes to stderr instead.
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from fourfold.stores.chroma import ChromaVectorStore, IdentityOnly

    stores: dict[str, ChromaVectorStore] = {}
    embedder: Embedder | None = pickle.loads(embedder_state) if embedder_state is not None else None

    def handle(op: str, collection: str, args: tuple[Any, ...]) -> Any:
        if op == "embed":
            if embedder is None:
                raise StoreUnavailable("the store worker was given no embedder")
            return embedder.embed_batch(args[0])
        if op == "open":
            if collection in stores and stores[collection].embedder_identity != args[0]:
                raise EmbedderMismatch(
                    f"collection {collection!r} is open with embedder {stores[collection].embedder_identity!r}, "
                    f"not {args[0]!r}"
                )
            if collection not in stores:
                stores[collection] = ChromaVectorStore.persistent(
                    path, IdentityOnly(args[0]), collection=collection, lock_timeout=lock_timeout
                )
            return None
        if op == "close":
            store = stores.pop(collection, None)
            if store is not None:
                store.close()
            return None
        if op in _OPS and collection in stores:
            return getattr(stores[collection], op)(*args)
        raise StoreUnavailable(f"the store worker has no open collection {collection!r} for {op!r}")

    def loop(conn: Connection, nice: int = 0) -> None:
        if nice:
            os.nice(nice)  # this thread only
        while True:
            try:
                op, collection, args = conn.recv()
            except (EOFError, OSError):
                return
            try:
                value = handle(op, collection, args)
            except Exception as exc:  # sent back typed; the child keeps serving
                conn.send(("error", (type(exc).__name__, str(exc))))
            else:
                conn.send(("ok", value))

    threading.Thread(target=loop, args=(conns["read"],), name="fourfold-store-reads", daemon=True).start()
    threading.Thread(target=loop, args=(conns["embed"], niceness), name="fourfold-store-embed", daemon=True).start()
    try:
        loop(conns["write"], niceness)
    finally:
        for store in list(stores.values()):
            store.close()
