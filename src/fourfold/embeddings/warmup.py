"""Load an embedding model in the background while the caller does other start-up work."""

from __future__ import annotations

import logging
import threading

from fourfold.embeddings.base import Embedder

__all__ = ["warm_up"]

log = logging.getLogger("fourfold.embeddings")


def warm_up(embedder: Embedder) -> threading.Thread | None:
    """Start loading `embedder`'s model in a thread; returns it (None: nothing to load).

    Embedders that load lazily expose `load()` and guard it with a lock, so a first
    `embed` made before the thread is done waits for that same load instead of starting
    a second one. An error here is left for the first real `embed` to raise.
    """
    load = getattr(embedder, "load", None)
    if not callable(load):
        return None

    def run() -> None:
        try:
            load()
        except Exception as exc:  # the first embed raises it, typed, on the caller's thread
            log.debug("warming up %s failed: %s", embedder.identity, exc)

    # Not a daemon: interpreter shutdown never interrupts a model half-way through loading.
    thread = threading.Thread(target=run, name=f"fourfold-warm-up-{embedder.name}")
    thread.start()
    return thread
