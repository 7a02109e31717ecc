"""The exported model's cache, missing or damaged at start-up: made again from the installed
weights, never loaded into wrong vectors."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from fourfold.embeddings.onnx import CACHE_DIR_ENV, OnnxMiniLMEmbedder, export_onnx, onnx_model_file

pytestmark = pytest.mark.slow  # the real model; making it again takes torch

TEXTS = ["The parcel arrived damaged", "Prefers email over phone calls"]


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return OnnxMiniLMEmbedder().embed_many(TEXTS)


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache holding a copy of a healthy export (and its check vectors)."""
    healthy = export_onnx()
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path))
    for path in healthy.parent.glob(f"{healthy.name}*"):
        if not path.name.endswith((".lock", ".damaged")):
            shutil.copy(path, tmp_path / path.name)
    return onnx_model_file()


def test_a_model_with_damaged_weights_is_made_again_not_loaded(cached: Path, reference: np.ndarray) -> None:
    raw = bytearray(cached.read_bytes())
    middle = len(raw) // 2
    raw[middle : middle + 4096] = bytes(4096)  # still loads, as other weights of the vocabulary
    cached.write_bytes(bytes(raw))
    assert np.allclose(OnnxMiniLMEmbedder().embed_many(TEXTS), reference, atol=1e-4)
    assert cached.with_name(cached.name + ".damaged").exists()


def test_a_truncated_model_is_made_again(cached: Path, reference: np.ndarray) -> None:
    cached.write_bytes(cached.read_bytes()[:100_000])
    assert np.allclose(OnnxMiniLMEmbedder().embed_many(TEXTS), reference, atol=1e-4)


def test_a_missing_model_is_made_again(cached: Path, reference: np.ndarray) -> None:
    cached.unlink()
    assert np.allclose(OnnxMiniLMEmbedder().embed_many(TEXTS), reference, atol=1e-4)
    assert cached.exists() and cached.with_name(cached.name + ".blake2b").exists()
