"""The data dir's manifest (which format and embedder built it), and the names of what else it holds."""

from __future__ import annotations

import json
import time
from enum import StrEnum
from pathlib import Path
from typing import Literal

from fourfold._files import write_private
from fourfold.errors import EmbedderMismatch, StoreCorrupt, StoreUnavailable

__all__ = ["COLLECTION", "FORMAT", "MANIFEST", "VECTORS", "LegacyFile", "StoreKind", "check_manifest", "read_manifest", "record_embedder", "store_kind"]

#: 2: memories and facts in one SQLite file (or long-term memory on Chroma, as "store" says);
#: 1: fourfold 0.1, long-term memory on embedded Chroma.
FORMAT = 2
MANIFEST = "fourfold.json"
#: The folder of a data dir whose long-term memory is on embedded Chroma (store "chroma").
VECTORS = "vectors"
#: The Chroma collection of a data dir's long-term memory (a service tenant's has its own name,
#: `ChromaVectorStore.tenant_collection`).
COLLECTION = "fourfold_memories"
StoreKind = Literal["sqlite", "chroma"]


class LegacyFile(StrEnum):
    """What a fourfold 0.1 data dir kept beside its vectors, each in a file or folder of its own
    (`fourfold.transfer.migrate_legacy` moves them into the database; `fourfold doctor` says so)."""

    EPISODES = "episodes.jsonl"
    FACTS = "facts.sqlite3"
    KEYS = "keys.sqlite3"
    CONVERSATIONS = "conversations"


def store_kind(manifest: dict[str, object] | None) -> StoreKind | None:
    """Where the data dir keeps long-term memory; a 0.1 data dir (format 1) is on Chroma."""
    if manifest is None:
        return None
    if int(manifest.get("format", 1)) < 2:  # type: ignore[call-overload]
        return "chroma"
    return "chroma" if manifest.get("store") == "chroma" else "sqlite"


def check_manifest(
    data_dir: Path, embedder_identity: str, *, create: bool = True, store: StoreKind = "sqlite"
) -> dict[str, object] | None:
    """Create the manifest, or check that this data dir is ours, not newer, and same embedder.

    With create=False a missing manifest is not written (None): callers write it only once
    the stores have opened, so a refused open never records the wrong embedder.
    """
    path = data_dir / MANIFEST
    if not path.exists():
        if not create:
            return None
        manifest: dict[str, object] = {
            "format": FORMAT, "embedder": embedder_identity, "store": store, "created_at": time.time()
        }
        _write(path, manifest)
        return manifest
    manifest = read_manifest(data_dir)
    built_with = str(manifest["embedder"])
    if built_with != embedder_identity:
        raise EmbedderMismatch(
            f"{data_dir} was built with embedder {built_with!r}, not {embedder_identity!r}: open it with the "
            f"same embedder, or move it to the new one with `fourfold --data-dir {data_dir} reindex --embedder SPEC`"
        )
    return manifest


def read_manifest(data_dir: Path) -> dict[str, object]:
    """The manifest of an existing data dir, checked for damage and for a newer format."""
    path = data_dir / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise StoreUnavailable(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        manifest = json.loads(text)
        fmt = int(manifest["format"])  # type: ignore[call-overload]
        str(manifest["embedder"])
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreCorrupt(f"{path} is damaged ({exc}); run `fourfold doctor {data_dir}`") from None
    if fmt > FORMAT:
        raise StoreCorrupt(
            f"{data_dir} was written by a newer fourfold ({path} says format {fmt}, this one reads {FORMAT}): "
            "upgrade fourfold to open it"
        )
    return dict(manifest)


def record_embedder(data_dir: Path, embedder_identity: str) -> None:
    """Rewrite the manifest's embedder (after `reindex` re-embedded the data dir)."""
    manifest = read_manifest(data_dir)
    manifest["embedder"] = embedder_identity
    _write(data_dir / MANIFEST, manifest)


def _write(path: Path, manifest: dict[str, object]) -> None:
    try:
        write_private(path, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    except OSError as exc:
        raise StoreUnavailable(f"cannot write {path}: {exc.strerror or exc}") from None
