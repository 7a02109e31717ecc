"""`Memory`: one data dir holding the three durable stores, opened with embedded defaults."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fourfold._files import private_dir
from fourfold._hints import did_you_mean
from fourfold._lifecycle import Closing
from fourfold._manifest import MANIFEST, VECTORS, StoreKind, check_manifest, store_kind
from fourfold._validate import check_scope
from fourfold.config import MemoryConfig, default_data_dir
from fourfold.embeddings.base import Embedder
from fourfold.episodic import EpisodeLog
from fourfold.errors import InvalidInput, NotFound, StoreUnavailable
from fourfold.longterm import Enricher, LongTermMemory, MemoryInput
from fourfold.longterm.consolidate import Consolidator, ModelConsolidator, SimilarityConsolidator
from fourfold.longterm.extract import extract
from fourfold.longterm.store import DOC_KIND
from fourfold.models.base import ChatModel
from fourfold.semantic.docs import DocumentStore
from fourfold.semantic.facts import FactStore
from fourfold.shortterm.threads import ConversationStore
from fourfold.stores.database import Database, is_url
from fourfold.stores.sqlite import DATABASE, SQLiteDatabase, SQLiteVectorStore
from fourfold.stores.vector import VectorStore
from fourfold.types import Remembered

if TYPE_CHECKING:
    from fourfold.remote import RemoteMemory

__all__ = ["Memory"]


@dataclass(eq=False, repr=False)
class Memory(Closing):
    """Long-term, episodic and semantic memory of one agent (or one support desk)."""

    #: The data dir; None when everything lives in PostgreSQL.
    data_dir: Path | None
    _: KW_ONLY
    long_term: LongTermMemory
    episodes: EpisodeLog
    facts: FactStore
    config: MemoryConfig
    #: The database the stores share (the data dir's SQLite file, or a PostgreSQL schema).
    database: Database
    docs: DocumentStore = field(init=False)
    conversations: ConversationStore = field(init=False)

    def __post_init__(self) -> None:
        self.docs = DocumentStore(self.long_term)
        self.conversations = ConversationStore(self.database)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        vector_store: VectorStore | None = None,
        store: StoreKind | None = None,
        chroma_url: str | None = None,
        config: MemoryConfig | None = None,
        enricher: Enricher | None = None,
        create: bool = True,
    ) -> Memory:
        """Open (or create) a data dir: one SQLite file holds memories, episodes and facts.

        `create=False` opens only an existing data dir (`StoreUnavailable` otherwise), so a
        reader with a mistyped path gets an error instead of a new, empty store.

        A `postgresql://user:password@host/dbname` URL keeps all of it in PostgreSQL instead
        (in the schema `fourfold`, or the one `?schema=NAME` names), shared by any number of
        processes on any number of machines. `store="chroma"` keeps long-term memory (and documents) on embedded Chroma under
        `vectors/` instead, and `chroma_url` on a Chroma server; a data dir remembers the
        choice. `vector_store` injects any backend. The embedder defaults to the bundled
        all-MiniLM-L6-v2, whose int8 approximation embeds queries (`MemoryConfig.query_model`). A data dir of fourfold 0.1 must first be moved with `fourfold migrate`.
        """
        config = config or MemoryConfig()
        if not isinstance(config, MemoryConfig):
            raise InvalidInput(f"config must be a MemoryConfig, not {type(config).__name__}")
        if config.max_cached_records < 0:
            raise InvalidInput(f"max_cached_records must be 0 or more, not {config.max_cached_records}")
        if store not in (None, "sqlite", "chroma"):
            raise InvalidInput(f"store must be 'sqlite' or 'chroma', not {store!r}")
        if is_url(path):
            if store is not None or chroma_url is not None:
                raise InvalidInput("a PostgreSQL URL keeps everything in PostgreSQL: open it without store= or chroma_url=")
            return cls._open_database(str(path), embedder=embedder, vector_store=vector_store, config=config,
                                      enricher=enricher, create=create)
        data_dir = _data_dir(path, create=create)
        embedder = _embedder(embedder, config)
        manifest = check_manifest(data_dir, embedder.identity, create=False)
        if manifest is not None and int(manifest.get("format", 1)) < 2:  # type: ignore[call-overload]
            raise StoreUnavailable(
                f"{data_dir} was written by fourfold 0.1: run `fourfold migrate {data_dir}` once to move it "
                "into this version's single database (the old files are kept aside)"
            )
        recorded = store_kind(manifest)
        if store is not None and recorded is not None and store != recorded:
            raise InvalidInput(f"{data_dir} keeps long-term memory on {recorded}, not {store}: open it without store=")
        kind: StoreKind = store or recorded or ("chroma" if chroma_url else "sqlite")
        db = SQLiteDatabase(data_dir / DATABASE, timeout=config.lock_timeout)
        try:
            if vector_store is None and kind == "chroma":
                vector_store = _chroma_store(data_dir, embedder, chroma_url, config)
            elif vector_store is None:
                vector_store = SQLiteVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension)
            check_manifest(data_dir, embedder.identity, store=kind)  # written only once the stores agreed
            return cls._assemble(data_dir, db, vector_store, embedder, config, enricher)
        except BaseException:
            db.close()
            raise

    @classmethod
    def _assemble(
        cls, data_dir: Path | None, db: Database, vector_store: VectorStore, embedder: Embedder,
        config: MemoryConfig, enricher: Enricher | None,
    ) -> Memory:
        long_term = LongTermMemory(vector_store, embedder, max_chars=config.max_memory_chars, weights=config.weights,
                                   max_cached_records=config.max_cached_records, enricher=enricher,
                                   clock=config.clock)
        return cls(data_dir, long_term=long_term, episodes=EpisodeLog(db, embedder), facts=FactStore(db, embedder=embedder),
                   config=config, database=db)

    @classmethod
    def _open_database(
        cls,
        url: str,
        *,
        embedder: Embedder | None,
        vector_store: VectorStore | None,
        config: MemoryConfig,
        enricher: Enricher | None,
        create: bool,
    ) -> Memory:
        """Open every store in one PostgreSQL schema (created on first use, if `create`)."""
        from fourfold.stores.pgvector import PostgresVectorStore
        from fourfold.stores.postgres import PostgresDatabase

        embedder = _embedder(embedder, config)
        db = PostgresDatabase(url, timeout=config.lock_timeout, create=create)
        try:
            if vector_store is None:
                vector_store = PostgresVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension)
            return cls._assemble(None, db, vector_store, embedder, config, enricher)
        except BaseException:
            db.close()
            raise

    @staticmethod
    def connect(url: str, *, api_key: str | None = None, timeout: float = 30.0) -> RemoteMemory:
        """The same API over HTTP, served by `fourfold serve` (the key defaults to $FOURFOLD_API_KEY)."""
        from fourfold.remote import connect

        return connect(url, api_key=api_key, timeout=timeout)

    def scopes(self) -> dict[str, dict[str, int]]:
        """Every scope holding anything, with its counts: current memories, their old versions
        (kept in each memory's history until the scope is erased), document chunks, episodes
        and conversations. `memories` is what a scope's listing shows."""
        found: dict[str, dict[str, int]] = {}

        def counts(scope: str) -> dict[str, int]:
            return found.setdefault(
                scope, {"memories": 0, "old_versions": 0, "docs": 0, "episodes": 0, "conversations": 0}
            )

        for scope in self.long_term.store.scopes():
            if scope is not None:
                every = len(self.long_term.all(scope=scope, include_superseded=True))
                counts(scope)["memories"] = current = len(self.long_term.all(scope=scope))
                counts(scope)["old_versions"] = every - current
                counts(scope)["docs"] = len(self.long_term.all(scope=scope, kinds=(DOC_KIND,)))
        for episode in self.episodes.episodes():
            if episode.scope is not None:
                counts(episode.scope)["episodes"] += 1
        for scope in self.conversations.scopes():
            counts(scope)["conversations"] = 1
        return dict(sorted(found.items()))

    def add(
        self,
        messages: Iterable[Mapping[str, Any] | str],
        *,
        scope: str | None = None,
        model: ChatModel | None = None,
        consolidate: Consolidator | bool | None = None,
    ) -> list[Remembered]:
        """Keep what a conversation says that is worth remembering (Mem0's `add`).

        `messages` are chat messages ({"role", "content"}; only the user's are read) or plain
        strings. Offline, the rules keep stated preferences (keyed by kind, so a changed one
        replaces the old) and lasting facts about the speaker; with an LLM `model`, the model
        extracts them. What is kept is consolidated with the scope's current memories
        (`consolidate` as in `remember_many`; default: the model when it is an LLM, else by
        similarity). Returns
        one `Remembered` per memory kept (`created` False when nothing new was stored).
        """
        found = extract(messages, model=model)
        if not found:
            return []
        judge = consolidate if consolidate is not None else (
            ModelConsolidator(model) if model is not None and model.is_llm else SimilarityConsolidator())
        items = [MemoryInput(e.text, scope, e.kind, key=e.key) for e in found]
        return self.long_term.remember_many(items, consolidate=judge)

    def forget_scope(self, scope: str, *, missing_ok: bool = True) -> dict[str, int]:
        """Erase one scope from every store, with the shared cases derived from it; other scopes
        are untouched. Returns counts.

        `missing_ok=False` raises `NotFound` (naming the likely scope) when nothing is stored
        under `scope`: erasing "alice" when the data is under "customer:alice" is a mistake.
        """
        checked = check_scope(scope)
        if checked is None:
            raise InvalidInput("forget_scope needs a scope name")
        if not missing_ok:
            known = self.scopes()
            if checked not in known:
                raise NotFound(f"nothing is stored under scope {checked!r}{did_you_mean(checked, known)}")
        memories = self.long_term.forget_scope(checked)
        cases = self.episodes.forget_derived(checked)
        episodes = self.episodes.forget_scope(checked)
        # The thread's lock: a turn running in another process cannot save it back afterwards.
        with self.conversations.lock(checked).hold():
            conversations = int(self.conversations.delete(checked))
        return {"memories": memories, "episodes": episodes, "cases": cases, "conversations": conversations}

    def close(self) -> None:
        self.facts.close()
        self.long_term.store.close()
        self.database.close()

    def __repr__(self) -> str:
        where = str(self.data_dir) if self.data_dir is not None else self.database.where
        return f"Memory({where!r})"


def _embedder(embedder: Embedder | None, config: MemoryConfig) -> Embedder:
    """The embedder given, checked, or the bundled all-MiniLM-L6-v2 (its queries as `config` says)."""
    if embedder is None:
        from fourfold.embeddings.default import default_embedder, default_memory_embedder

        if config.query_model not in ("int8", "exact"):
            raise InvalidInput(f"query_model must be 'int8' or 'exact', not {config.query_model!r}")
        embedder = default_memory_embedder() if config.query_model == "int8" else default_embedder()
    if not isinstance(embedder, Embedder):
        raise InvalidInput(f"embedder must be an Embedder, not {type(embedder).__name__}")
    return embedder


def missing_data_dir(data_dir: Path) -> StoreUnavailable:
    """The one-line error of a reader pointed at a data dir that does not exist (a typo, often)."""
    return StoreUnavailable(f"no fourfold data dir at {data_dir.absolute()}: nothing has been stored there yet")


def _data_dir(path: object, *, create: bool) -> Path:
    """The data dir as a Path, created if asked; bad paths are InvalidInput, not a traceback."""
    if path is None:
        data_dir = default_data_dir()
    elif isinstance(path, (str, os.PathLike)):
        data_dir = Path(path)
    else:
        raise InvalidInput(f"path must be a string or a path, not {type(path).__name__}")
    if "\x00" in str(data_dir):
        raise InvalidInput(f"data dir {str(data_dir)!r} contains a NUL byte")
    if not create and not (data_dir / MANIFEST).is_file():
        raise missing_data_dir(data_dir)
    try:
        private_dir(data_dir)
    except (OSError, UnicodeEncodeError) as exc:
        raise StoreUnavailable(f"cannot create data dir {data_dir}: {getattr(exc, 'strerror', None) or exc}") from None
    if not data_dir.is_dir():
        raise InvalidInput(f"{data_dir} is not a directory")
    return data_dir


def _chroma_store(data_dir: Path, embedder: Embedder, chroma_url: str | None, config: MemoryConfig) -> Any:
    from fourfold.stores.chroma import ChromaVectorStore

    if chroma_url:
        return ChromaVectorStore.http(chroma_url, embedder, collection=config.collection)
    return ChromaVectorStore.persistent(
        data_dir / VECTORS, embedder, collection=config.collection, lock_timeout=config.lock_timeout
    )
