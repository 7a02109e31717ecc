"""The data dir's manifest: which format and embedder built it."""

from __future__ import annotations

import json
import time
from pathlib import Path

from fourfold._files import write_private
from fourfold.errors import EmbedderMismatch, StoreCorrupt, StoreUnavailable

__all__ = ["FORMAT", "MANIFEST", "check_manifest"]

FORMAT = 1
MANIFEST = "fourfold.json"


def check_manifest(data_dir: Path, embedder_identity: str, *, create: bool = True) -> dict[str, object] | None:
    """Create the manifest, or check that this data dir is ours, not newer, and same embedder.

    With create=False a missing manifest is not written (None): callers write it only once
    the stores have opened, so a refused open never records the wrong embedder.
    """
    path = data_dir / MANIFEST
    if not path.exists():
        if not create:
            return None
        manifest: dict[str, object] = {"format": FORMAT, "embedder": embedder_identity, "created_at": time.time()}
        try:
            write_private(path, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
        except OSError as exc:
            raise StoreUnavailable(f"cannot write {path}: {exc.strerror or exc}") from None
        return manifest
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise StoreUnavailable(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        manifest = json.loads(text)
        fmt = int(manifest["format"])  # type: ignore[call-overload]
        built_with = str(manifest["embedder"])
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreCorrupt(f"{path} is damaged ({exc}); run `fourfold doctor {data_dir}`") from None
    if fmt > FORMAT:
        raise StoreCorrupt(
            f"{data_dir} was written by a newer fourfold ({path} says format {fmt}, this one reads {FORMAT}): "
            "upgrade fourfold to open it"
        )
    if built_with != embedder_identity:
        raise EmbedderMismatch(
            f"{data_dir} was built with embedder {built_with!r}, not {embedder_identity!r}: "
            "open it with the same embedder, or re-index into a new data dir"
        )
    return manifest
