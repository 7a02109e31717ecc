"""Configuration: a typed object with defaults; one environment variable names the data dir."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from fourfold._manifest import COLLECTION

if TYPE_CHECKING:
    from fourfold.longterm.retrieval import Weights
    from fourfold.longterm.versions import Clock

__all__ = ["DATA_DIR_ENV", "DEFAULT_DATA_DIR", "STORE_ENV", "MemoryConfig", "default_data_dir"]

DATA_DIR_ENV = "FOURFOLD_DATA_DIR"
#: A postgresql:// URL: keep everything in PostgreSQL instead of the data dir.
STORE_ENV = "FOURFOLD_STORE"
DEFAULT_DATA_DIR = "./agent_memory"


def default_data_dir() -> Path:
    """The data dir: $FOURFOLD_DATA_DIR, else ./agent_memory."""
    return Path(os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR)


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Knobs of `Memory.open`; every field has a sensible default."""

    #: Seconds a writer waits for another process's write lock before `LockTimeout`.
    lock_timeout: float = 30.0
    #: Chroma collection name of the long-term store (docs share it, kept apart by kind).
    collection: str = COLLECTION
    #: Refuse memories longer than this many characters (documents are chunked instead).
    max_memory_chars: int = 20_000
    #: With no embedder given: "int8" embeds the query a reader waits on with the int8
    #: approximation of the bundled MiniLM (on ONNX Runtime), "exact" with the model itself.
    #: Stored vectors are always the exact model's (see `default_memory_embedder`).
    query_model: Literal["int8", "exact"] = "int8"
    #: How recall weighs its signals (`fourfold.longterm.Weights`); None: the shipped weights.
    weights: Weights | None = None
    #: Records of recently read scopes kept indexed between reads; past it the least recently
    #: read scopes are dropped and read again when next asked for (memory stays bounded).
    max_cached_records: int = 50_000
    #: Where write times come from (`fourfold.longterm.versions.Clock`); None: the wall clock.
    #: A clock that steps back never dates a write before its scope's newest one.
    clock: Clock | None = None
