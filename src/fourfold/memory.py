"""`Memory`: one data dir holding the three durable stores, opened with embedded defaults."""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import Any

from fourfold._manifest import check_manifest
from fourfold._validate import check_scope
from fourfold.config import MemoryConfig, default_data_dir
from fourfold.embeddings.base import Embedder
from fourfold.episodic import EpisodeLog
from fourfold.errors import InvalidInput, StoreUnavailable
from fourfold.longterm import LongTermMemory
from fourfold.semantic.docs import DocumentStore
from fourfold.semantic.facts import FactStore
from fourfold.shortterm.threads import ConversationStore
from fourfold.stores.vector import VectorStore

__all__ = ["Memory"]


class Memory:
    """Long-term, episodic and semantic memory of one agent (or one support desk)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        long_term: LongTermMemory,
        episodes: EpisodeLog,
        facts: FactStore,
        config: MemoryConfig,
    ) -> None:
        self.data_dir = data_dir
        self.long_term = long_term
        self.episodes = episodes
        self.facts = facts
        self.docs = DocumentStore(long_term)
        self.conversations = ConversationStore(data_dir / "conversations", lock_timeout=config.lock_timeout)
        self.config = config

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        vector_store: VectorStore | None = None,
        chroma_url: str | None = None,
        config: MemoryConfig | None = None,
    ) -> Memory:
        """Open (or create) a data dir: Chroma on disk, a JSONL episode log, SQLite facts.

        `chroma_url` puts long-term memory on a Chroma server instead; `vector_store`
        injects any backend. The embedder defaults to the bundled all-MiniLM-L6-v2.
        """
        config = config or MemoryConfig()
        data_dir = Path(path) if path is not None else default_data_dir()
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(f"cannot create data dir {data_dir}: {exc.strerror}") from None
        if not data_dir.is_dir():
            raise InvalidInput(f"{data_dir} is not a directory")
        if embedder is None:
            from fourfold.embeddings.minilm import default_embedder

            embedder = default_embedder()
        check_manifest(data_dir, embedder.identity)
        store = vector_store or _vector_store(data_dir, embedder, chroma_url, config)
        return cls(
            data_dir,
            long_term=LongTermMemory(store, embedder, max_chars=config.max_memory_chars),
            episodes=EpisodeLog(data_dir / "episodes.jsonl", embedder, lock_timeout=config.lock_timeout),
            facts=FactStore(data_dir / "facts.sqlite3", timeout=config.lock_timeout),
            config=config,
        )

    def forget_scope(self, scope: str) -> dict[str, int]:
        """Erase one scope from every store; other scopes are untouched. Returns counts."""
        checked = check_scope(scope)
        if checked is None:
            raise InvalidInput("forget_scope needs a scope name")
        return {
            "memories": self.long_term.forget_scope(checked),
            "episodes": self.episodes.forget_scope(checked),
            "conversations": int(self.conversations.delete(checked)),
        }

    def close(self) -> None:
        self.facts.close()
        self.long_term.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Memory({str(self.data_dir)!r})"


def _vector_store(data_dir: Path, embedder: Embedder, chroma_url: str | None, config: MemoryConfig) -> Any:
    from fourfold.stores.chroma import ChromaVectorStore

    if chroma_url:
        return ChromaVectorStore.http(chroma_url, embedder, collection=config.collection)
    return ChromaVectorStore.persistent(
        data_dir / "vectors", embedder, collection=config.collection, lock_timeout=config.lock_timeout
    )
