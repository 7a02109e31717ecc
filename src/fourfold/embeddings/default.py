"""The embedder a store gets when none is given: the bundled all-MiniLM-L6-v2, one per process.

Apart from `minilm` and `onnx` because it chooses between them (and the ONNX embedder falls
back to the sentence-transformers one): neither module needs to know of the other's choice.
"""

from __future__ import annotations

import importlib.util
import threading

from fourfold.embeddings.base import Embedder

__all__ = ["default_embedder"]

_default: Embedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> Embedder:
    """One shared MiniLM per process: ONNX Runtime when installed, else sentence-transformers.

    Both give the same vectors under the same identity, so a store built with one opens
    with the other. ONNX Runtime starts ~15x faster, uses ~40% of the memory and embeds
    faster (see benchmarks/results/perf.md).
    """
    global _default
    with _default_lock:
        if _default is None:
            if all(importlib.util.find_spec(m) for m in ("onnxruntime", "tokenizers")):
                from fourfold.embeddings.onnx import OnnxMiniLMEmbedder

                _default = OnnxMiniLMEmbedder()
            else:
                from fourfold.embeddings.minilm import MiniLMEmbedder

                _default = MiniLMEmbedder()
        return _default
