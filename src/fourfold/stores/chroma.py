"""Chroma as fourfold's durable vector store: embedded on disk by default, or a server."""

from __future__ import annotations

import os
import sqlite3
import struct
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from fourfold._extras import require
from fourfold._files import narrow_tree, private_dir, private_file
from fourfold._locks import FileLock
from fourfold._manifest import COLLECTION
from fourfold.embeddings.base import Embedder
from fourfold.errors import EmbedderMismatch, FourfoldError, StoreUnavailable
from fourfold.stores.catalog import ScopeCatalog, catalog_path
from fourfold.stores.vector import VectorRecord, VectorStore, WriteTicket, chunked

__all__ = ["ChromaVectorStore"]

T = TypeVar("T")

_IDENTITY_KEY = "fourfold_embedder"
_CATALOG_FILE = "chroma.sqlite3"  # where embedded Chroma keeps its collections and records
_TENANT_PREFIX = "fourfold_t_"
_FORMAT_KEY = "fourfold_format"
_FORMAT = 1
_INCLUDE = ["embeddings", "documents", "metadatas"]
_READ_ATTEMPTS = 5
_IDS_PER_GET = 2_000  # Chroma binds one SQL variable per id
# fourfold never searches Chroma's vector index: it reads a scope's records (by id or by
# scope) and ranks them itself, exactly. Chroma still builds an HNSW graph on every add, so
# a small graph keeps writes cheap, in batches and one at a time. (A collection keeps the
# graph settings it was created with.)
_HNSW = {"space": "cosine", "ef_construction": 16, "max_neighbors": 4}
_RACE_MESSAGES = ("Error finding id", "Nothing found on disk", "hnsw segment reader", "torn read")
_SERVER_HINT = "Run `chroma run` and open the memory with chroma_url=... to share one store between processes."


def _chromadb() -> Any:
    # Chroma reads this at import; telemetry stays off even for users who import it first.
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    return require("chromadb", "chroma", what="the Chroma store")


def _settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


class _EmbedderFunction:
    """Chroma's embedding-function protocol over our embedder, so Chroma never embeds by itself."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def __call__(self, input: Sequence[str]) -> list[Any]:
        return list(self._embedder.embed_many(list(input)))

    def embed_query(self, input: Sequence[str]) -> list[Any]:
        return self(input)

    def embed_documents(self, input: Sequence[str]) -> list[Any]:
        return self(input)

    @staticmethod
    def name() -> str:
        return "fourfold"

    def get_config(self) -> dict[str, Any]:
        return {"identity": self._embedder.identity}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> _EmbedderFunction:
        # Chroma rebuilds this when it reopens a collection; fourfold always passes its own
        # embedder and never lets Chroma embed, so a stand-in that refuses is enough.
        return _EmbedderFunction(StandInEmbedder(str(config.get("identity", "unknown:0"))))

    def is_legacy(self) -> bool:
        return False

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine"]

    def validate_config(self, config: dict[str, Any]) -> None:
        return None

    def validate_config_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        return None


class StandInEmbedder(Embedder):
    """Stands in for the embedder that built a collection when Chroma reopens it alone."""

    def __init__(self, identity: str) -> None:
        self.name, _, dim = identity.rpartition(":")
        self.dimension = int(dim) if dim.isdigit() else 0

    def embed_batch(self, texts: Sequence[str]) -> Any:
        raise StoreUnavailable(f"this collection was built by fourfold with {self.identity}; open it through fourfold")


@dataclass
class _PathState:
    """What this process knows of one embedded Chroma path, shared by its stores."""

    known: Hashable | None = None  # the generation our clients have seen
    epoch: int = 0  # bumped when the path's Chroma system is reopened
    lock: threading.Lock = field(default_factory=threading.Lock)


_PATHS: dict[str, _PathState] = {}
_PATHS_LOCK = threading.Lock()
#: Per thread: ids of the stores whose `writing()` block this thread is inside.
_WRITING = threading.local()


def _path_state(root: Path) -> _PathState:
    with _PATHS_LOCK:
        return _PATHS.setdefault(str(root.resolve()), _PathState())


class ChromaVectorStore(VectorStore):
    """A Chroma collection holding every scope, keyed by the `ff_scope` metadata field.

    Embedded mode caches the collection inside the process, so a process would not see
    records that another process wrote after it opened the store (and could damage the
    index writing on a stale view). Every operation first compares the path's generation
    file with what this process last saw, and reopens Chroma when another process wrote.
    """

    def __init__(
        self,
        client: Any,
        embedder: Embedder,
        *,
        collection: str = COLLECTION,
        lock: FileLock | None = None,
        generation_file: Path | None = None,
        where: str = "chroma",
    ) -> None:
        self.embedder_identity = embedder.identity
        self._embedder = embedder
        self._collection_name = collection
        self._root: Path | None = None
        self._epoch = 0
        self._client = client
        self._lock = lock
        self._generation_file = generation_file
        self._where = where
        #: Embedded mode: scope -> ids beside Chroma, so reading a scope is a fetch by id.
        self._catalog: ScopeCatalog | None = None
        self._collection = self._call(
            lambda: client.get_or_create_collection(
                name=collection,
                configuration={"hnsw": _HNSW},
                metadata={_IDENTITY_KEY: embedder.identity, _FORMAT_KEY: _FORMAT},
                embedding_function=_EmbedderFunction(embedder),
            )
        )
        built_with = (self._collection.metadata or {}).get(_IDENTITY_KEY)
        if built_with != embedder.identity:
            raise EmbedderMismatch(
                f"{where} was built with embedder {built_with!r}, not {embedder.identity!r}: "
                "open it with the embedder that built it, or move it to the new one: `fourfold export` it, "
                "then `fourfold --data-dir NEW_DIR --embedder SPEC import --reembed` the file"
            )
        self._max_batch = int(self._call(client.get_max_batch_size))

    @staticmethod
    def catalog_file(path: str | os.PathLike[str]) -> Path:
        """The SQLite file embedded Chroma keeps under `path` (a doctor checks it without opening Chroma)."""
        return Path(path) / _CATALOG_FILE

    @staticmethod
    def tenant_collection(tenant: str) -> str:
        """The collection a service tenant's memories live in, beside the default tenant's."""
        return f"{_TENANT_PREFIX}{tenant}"

    @staticmethod
    def recorded_identity(path: str | os.PathLike[str]) -> str | None:
        """The embedder identity the collections under `path` record, read without opening Chroma.

        None when the store is missing or unreadable, or when its collections disagree.
        """
        catalog = ChromaVectorStore.catalog_file(path)
        if not catalog.exists():
            return None
        try:
            with closing(sqlite3.connect(f"{catalog.resolve().as_uri()}?mode=ro", uri=True)) as db:
                rows = db.execute("SELECT str_value FROM collection_metadata WHERE key = ?", (_IDENTITY_KEY,)).fetchall()
        except sqlite3.Error:
            return None
        values = {r[0] for r in rows if r[0]}
        return values.pop() if len(values) == 1 else None

    @classmethod
    def persistent(
        cls, path: str | os.PathLike[str], embedder: Embedder, *, collection: str = COLLECTION, lock_timeout: float = 30.0
    ) -> ChromaVectorStore:
        """Embedded Chroma on disk; writes from several processes are serialized by a file lock."""
        chromadb = _chromadb()
        root = private_dir(path)
        lock = FileLock(root / ".fourfold-write.lock", timeout=lock_timeout, hint=_SERVER_HINT)
        with lock.hold():  # creating the collection is a write too
            state = _path_state(root)
            with state.lock:
                client = _call_chroma(lambda: chromadb.PersistentClient(path=str(root), settings=_settings()), str(root))
                store = cls(
                    client, embedder, collection=collection, lock=lock,
                    generation_file=root / ".fourfold-generation", where=str(root),
                )
                store._root, store._epoch = root, state.epoch
                if state.known is None:
                    state.known = store.generation()
            store._catalog = ScopeCatalog.open(
                catalog_path(root, collection), store_is_empty=lambda: store.count() == 0, timeout=lock_timeout
            )
            narrow_tree(root)  # the files Chroma and the catalog just created
            return store

    @classmethod
    def http(
        cls, url: str, embedder: Embedder, *, collection: str = COLLECTION, headers: dict[str, str] | None = None
    ) -> ChromaVectorStore:
        """A Chroma server (`chroma run`): the path when one process or machine is not enough."""
        from urllib.parse import urlparse

        chromadb = _chromadb()
        parsed = urlparse(url if "://" in url else f"http://{url}")
        host, port = parsed.hostname or "127.0.0.1", parsed.port or 8000
        client = _call_chroma(
            lambda: chromadb.HttpClient(
                host=host, port=port, ssl=parsed.scheme == "https", headers=headers or {}, settings=_settings()
            ),
            url,
        )
        return cls(client, embedder, collection=collection, where=url)

    # -- writes ---------------------------------------------------------------------------

    @contextmanager
    def writing(self) -> Iterator[WriteTicket]:
        """Hold the cross-process write lock (embedded mode) and bump the generation after.

        A block nested in another on the same thread (`add` inside a caller's write) joins
        it: the view was made fresh and the generation is bumped once, by the outer block,
        whose ticket carries it (a nested block's ticket stays empty).
        """
        ticket = WriteTicket()
        if self._lock is None:
            yield ticket
            return
        inside: set[int] = _WRITING.__dict__.setdefault("stores", set())
        if id(self) in inside:
            yield ticket
            return
        with self._lock.hold():
            self._ensure_fresh()
            ticket.before = self.generation()
            inside.add(id(self))
            try:
                yield ticket
            finally:
                inside.discard(id(self))
                ticket.generation = self._bump_generation()
                assert self._root is not None
                _path_state(self._root).known = ticket.generation
                narrow_tree(self._root)  # Chroma creates its files with the umask's modes

    def _in_write(self) -> bool:
        """Whether this thread holds this store's write block (its view is fresh and stays so)."""
        return id(self) in _WRITING.__dict__.get("stores", ())

    def add(self, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        with self.writing():
            if self._catalog is not None:  # listed first: the catalog stays a superset of Chroma
                self._catalog.add((r.scope, r.id) for r in records)
            for part in chunked(records, self._max_batch):
                self._call(partial(self._add_part, part))

    def _ensure_fresh(self) -> None:
        """Reopen embedded Chroma if another process wrote since this process last looked."""
        if self._root is None:
            return
        state = _path_state(self._root)
        generation = self.generation()
        with state.lock:
            if generation != state.known:
                _drop_shared_system(self._client)
                state.epoch += 1
                state.known = generation
            if self._epoch != state.epoch:
                chromadb = _chromadb()
                root = str(self._root)
                self._client = _call_chroma(lambda: chromadb.PersistentClient(path=root, settings=_settings()), root)
                self._collection = self._call(
                    lambda: self._client.get_collection(
                        self._collection_name, embedding_function=_EmbedderFunction(self._embedder)
                    )
                )
                self._epoch = state.epoch

    def _scrub(self) -> None:
        """Make deleted text unrecoverable from Chroma's files (its log, full-text index, free pages)."""
        if self._root is None:
            return
        try:
            with closing(sqlite3.connect(self.catalog_file(self._root), timeout=60)) as db:
                db.execute(
                    "UPDATE embeddings_queue SET metadata = NULL "
                    "WHERE operation != 3 AND metadata IS NOT NULL AND id NOT IN (SELECT embedding_id FROM embeddings)"
                )
                db.execute("INSERT INTO embedding_fulltext_search(embedding_fulltext_search) VALUES('optimize')")
                db.commit()
                db.execute("VACUUM")
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"vector store at {self._where}: could not erase deleted text: {exc}") from exc

    def _add_part(self, part: Sequence[VectorRecord]) -> None:
        self._collection.add(
            ids=[r.id for r in part],
            embeddings=np.stack([r.embedding for r in part]),
            documents=[r.text for r in part],
            metadatas=[_stored_metadata(r) for r in part],
        )

    def update_metadata(self, records: Sequence[VectorRecord]) -> None:
        # Chroma merges the keys given into a record's metadata: only the user metadata's key
        # changes, and no delete (with its scrub of the files) is needed.
        if not records:
            return
        with self.writing():
            for part in chunked(list(records), self._max_batch):
                metadatas = [{"ff_meta": r.flat_metadata()["ff_meta"]} for r in part]
                self._call(partial(self._collection.update, ids=[r.id for r in part], metadatas=metadatas))

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self.writing():
            for part in chunked(list(ids), self._max_batch):
                self._call(partial(self._collection.delete, ids=list(part)))
            if self._catalog is not None:
                self._catalog.remove(list(ids))
            self._scrub()

    def delete_scope(self, scope: str) -> int:
        with self.writing():
            ids = self._read(lambda c: c.get(where={"ff_scope": scope}, include=[]))["ids"]
            self.delete(ids)
            if self._catalog is not None:  # `delete` removed the ids; this also drops ids a crash left
                self._catalog.remove_scope(scope)
            return len(ids)

    # -- reads ----------------------------------------------------------------------------

    def existing(self, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        if self._catalog is not None:
            listed = self._catalog.listed(ids)
            if listed is not None:  # ids it does not list are not stored: ask Chroma about the rest only
                if not listed:
                    return set()
                ids = [i for i in ids if i in listed]
        found: set[str] = set()
        # Inside this thread's write block the view is fresh and no other process writes:
        # no second freshness check, and no race to retry.
        fresh = self._in_write()
        for part in chunked(list(ids), self._max_batch):
            read = partial(_get_ids, ids=list(part))
            got = self._call(partial(read, self._collection)) if fresh else self._read(read)
            found.update(got["ids"])
        return found

    def get(self, ids: Sequence[str]) -> list[VectorRecord]:
        if not ids:
            return []
        got = self._read(lambda c: c.get(ids=list(ids), include=_INCLUDE))
        return _records(got)

    def scan(self, scope: str | None) -> list[VectorRecord]:
        if self._catalog is None:
            return self._scan_where(scope)
        ids = self._catalog.ids(scope)
        if ids is None:  # a scope of a store older than its catalog: list it once
            assert self._lock is not None
            with self._lock.hold():  # no write happens, so the generation stays put
                records = self._scan_where(scope)
                self._catalog.fill(scope, [r.id for r in records])
            return records
        records = []
        for part in chunked(ids, _IDS_PER_GET):
            records += _records(self._read(partial(_get_records, ids=list(part))))
        return [r for r in records if r.scope == scope]  # ids are digests of (scope, text): a guard only

    def last_written(self, scopes: Iterable[str | None]) -> dict[str | None, float]:
        """Each scope's write times from its metadata alone (no vectors, no documents)."""
        found: dict[str | None, float] = {}
        for scope in dict.fromkeys(scopes):
            where = {"ff_scope": "" if scope is None else scope}
            got = self._read(partial(_get_metadatas, where=where))
            times = [float(m["ff_created"]) for m in got["metadatas"] or () if m and "ff_created" in m]
            if times:
                found[scope] = max(times)
        return found

    def _scan_where(self, scope: str | None) -> list[VectorRecord]:
        key = "" if scope is None else scope
        return _records(self._read(lambda c: c.get(where={"ff_scope": key}, include=_INCLUDE)))

    def count(self) -> int:
        return int(self._read(lambda c: c.count()))

    def scopes(self) -> list[str | None]:
        # Paged: one unbounded get of ~100k rows fails inside Chroma ("too many SQL variables").
        keys: set[str] = set()
        offset, page = 0, max(1, min(self._max_batch, 10_000))
        while True:
            got = self._read(partial(_get_page, limit=page, offset=offset))
            metadatas = got["metadatas"] or []
            keys.update(str(m.get("ff_scope", "")) for m in metadatas if m)
            if len(got["ids"]) < page:
                break
            offset += len(got["ids"])
        return [None if k == "" else k for k in keys]

    def generation(self) -> Hashable | None:
        if self._generation_file is None:
            return None
        try:
            return self._generation_file.read_bytes()
        except FileNotFoundError:
            return b""

    def _bump_generation(self) -> bytes:
        """Count one more write: the file's 8 bytes are rewritten in place.

        Not a new file renamed over it: on ext4 that rename waits for the new file's data to
        reach the disk on every write, and the count needs no durability, it only
        tells other processes to reopen. A reader racing the write that saw a mix of old and
        new bytes would only reopen once more.
        """
        assert self._generation_file is not None
        fd = private_file(self._generation_file)
        try:
            old = os.pread(fd, 16, 0)
            current = struct.unpack("<Q", old)[0] if len(old) == 8 else 0
            new = struct.pack("<Q", current + 1)
            os.pwrite(fd, new, 0)
            if len(old) > 8:
                os.ftruncate(fd, 8)
        finally:
            os.close(fd)
        return new

    def close(self) -> None:
        self._client = None
        if self._catalog is not None:
            self._catalog.close()

    def _call(self, fn: Callable[[], T]) -> T:
        return _call_chroma(fn, self._where)

    def _read(self, fn: Callable[[Any], T]) -> T:
        """A read on a fresh view; retried when it raced a write by another process.

        Chroma answers such a race with "Error finding id" (embedded) or "Nothing found on
        disk" (a server's new segment); both pass once the view is current again.
        """
        for attempt in range(_READ_ATTEMPTS):
            self._ensure_fresh()
            try:
                got = self._call(lambda: fn(self._collection))
                _check_whole(got, self._where)
                return got
            except StoreUnavailable as exc:
                if attempt == _READ_ATTEMPTS - 1 or not any(m in str(exc) for m in _RACE_MESSAGES):
                    raise
                if self._root is not None:
                    _path_state(self._root).known = None  # force a reopen
                time.sleep(0.02 * (attempt + 1))
        raise AssertionError("unreachable")


def _get_records(collection: Any, *, ids: list[str]) -> Any:
    return collection.get(ids=ids, include=_INCLUDE)


#: What a record reads back as for each metadata key it lacks (`VectorRecord.from_flat`).
_READ_DEFAULTS = VectorRecord.from_flat("", "", [], {}).flat_metadata()


def _stored_metadata(record: VectorRecord) -> dict[str, Any]:
    """The record's flat metadata without keys that hold what reading would default to.

    Chroma keeps a row per metadata key, so a plain note stores 2 keys instead of 6, and
    writes fewer rows; `ff_scope` stays, every read filters on it.
    """
    flat = record.flat_metadata()
    return {k: v for k, v in flat.items() if k == "ff_scope" or v != _READ_DEFAULTS.get(k)}


def _get_ids(collection: Any, *, ids: list[str]) -> Any:
    return collection.get(ids=ids, include=[])


def _get_page(collection: Any, *, limit: int, offset: int) -> Any:
    return collection.get(include=["metadatas"], limit=limit, offset=offset)


def _drop_shared_system(client: Any) -> None:
    """Forget Chroma's in-process system for this client's path, so the next client rereads disk."""
    from chromadb.api.shared_system_client import SharedSystemClient

    identifier = getattr(client, "_identifier", None)
    if identifier is not None:
        SharedSystemClient._identifier_to_system.pop(identifier, None)
        SharedSystemClient._identifier_to_refcount.pop(identifier, None)


def _call_chroma(fn: Callable[[], T], where: str) -> T:
    """Run a Chroma call, turning its exceptions into ours (never a dependency's traceback)."""
    try:
        return fn()
    except FourfoldError:
        raise
    except Exception as exc:  # Chroma raises many unrelated types; all mean the store failed
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreUnavailable(f"vector store at {where} failed: {first}") from exc


def _check_whole(got: Any, where: str) -> None:
    """A `get` whose columns differ in length raced a write (seen from a Chroma server under
    concurrent writes: one embedding fewer than ids); `_read` retries it."""
    if not isinstance(got, Mapping) or "ids" not in got:
        return
    size = len(got["ids"])
    for column in ("documents", "embeddings", "metadatas"):
        values = got.get(column)
        if values is not None and len(values) != size:
            raise StoreUnavailable(
                f"vector store at {where} failed: torn read ({len(values)} {column} for {size} ids)"
            )


def _records(got: Any) -> list[VectorRecord]:
    embeddings = got.get("embeddings")
    if embeddings is None:
        embeddings = [np.zeros(0, dtype=np.float32)] * len(got["ids"])
    return [
        VectorRecord.from_flat(i, doc or "", emb, meta or {})
        for i, doc, emb, meta in zip(got["ids"], got["documents"], embeddings, got["metadatas"], strict=True)
    ]


def _get_metadatas(collection: Any, *, where: dict[str, str]) -> Any:
    return collection.get(where=where, include=["metadatas"])
