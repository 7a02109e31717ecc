"""How an adapter opens memory when the application gives it none: as the CLI does."""

from __future__ import annotations

import os
from typing import Any

from fourfold.embeddings.spec import EMBEDDER_ENV, embedder_from_spec
from fourfold.memory import Memory

__all__ = ["open_memory"]


def open_memory(path: str | os.PathLike[str] | None = None, **options: Any) -> Memory:
    """`Memory.open(path)` (default: $FOURFOLD_DATA_DIR, else ./agent_memory), on the embedder
    $FOURFOLD_EMBEDDER names when it is set and no `embedder=` is given."""
    spec = os.environ.get(EMBEDDER_ENV)
    if spec and options.get("embedder") is None:
        options["embedder"] = embedder_from_spec(spec)
    return Memory.open(path, **options)
