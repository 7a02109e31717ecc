"""The embedder a store gets when none is given: the bundled all-MiniLM-L6-v2, one per process.

Apart from `minilm` and `onnx` because it chooses between them (and the ONNX embedder falls
back to the sentence-transformers one): neither module needs to know of the other's choice.
"""

from __future__ import annotations

import importlib.util
import threading

from fourfold.embeddings.base import Embedder

__all__ = ["default_embedder", "default_memory_embedder"]

_default: Embedder | None = None
_memory: Embedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> Embedder:
    """One shared MiniLM per process: ONNX Runtime when installed, else sentence-transformers.

    Both give the same vectors under the same identity, so a store built with one opens
    with the other. ONNX Runtime starts much sooner, uses less memory and embeds faster
    (see benchmarks/results/perf.md). It embeds queries too, exactly; see
    `default_memory_embedder` for what `Memory.open` uses.
    """
    global _default
    with _default_lock:
        if _default is None:
            if _onnx_installed():
                from fourfold.embeddings.onnx import OnnxMiniLMEmbedder

                _default = OnnxMiniLMEmbedder()
            else:
                from fourfold.embeddings.minilm import MiniLMEmbedder

                _default = MiniLMEmbedder()
        return _default


def default_memory_embedder() -> Embedder:
    """What `Memory.open` and the CLI embed with when given no embedder (one per process).

    Everything stored (memories, documents, episodes) is embedded by `default_embedder()`, and
    so are a store's vectors and identity. On ONNX Runtime, the one query a reader waits on is
    embedded by the int8 approximation of the same model on one thread, as `fourfold serve`
    does (`AsymmetricEmbedder`): a short query costs a fraction of the CPU (see
    benchmarks/results/perf.md), and a recall-only process loads a quarter of the model
    weights. Its vectors stay within cosine 0.988 of the
    exact ones (see `OnnxMiniLMInt8Embedder`). `MemoryConfig(query_model="exact")` or the
    embedder spec `minilm:exact` keeps the exact model for queries too.
    """
    global _memory
    exact = default_embedder()
    with _default_lock:
        if _memory is None:
            from fourfold.embeddings.onnx import OnnxMiniLMEmbedder

            if type(exact) is OnnxMiniLMEmbedder:
                from fourfold.embeddings.asymmetric import AsymmetricEmbedder
                from fourfold.embeddings.onnx import OnnxMiniLMInt8Embedder

                # One thread: a lone short query gains little from a second one, costs more
                # CPU, and waits on its slowest thread when the machine is busy.
                _memory = AsymmetricEmbedder(exact, OnnxMiniLMInt8Embedder(threads=1))
            else:
                _memory = exact  # no int8 variant without ONNX Runtime
        return _memory


def _onnx_installed() -> bool:
    return all(importlib.util.find_spec(m) for m in ("onnxruntime", "tokenizers"))
