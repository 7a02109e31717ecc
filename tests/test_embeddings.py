"""The embedder seam and the ONNX Runtime MiniLM: same vectors as sentence-transformers."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from fourfold.embeddings import Embedder, HashEmbedder, Vectors


class _Recording(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(32)
        self.batch_size = 4
        self.batches: list[list[str]] = []

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(list(texts))
        return super().embed_batch(texts)


def test_embed_many_batches_by_length_and_keeps_the_input_order() -> None:
    texts = [("word " * n).strip() for n in (9, 1, 7, 3, 5, 2, 8, 4, 6, 10)]
    emb = _Recording()
    out = emb.embed_many(texts)
    np.testing.assert_allclose(out, np.stack([HashEmbedder(32).embed(t) for t in texts]), atol=1e-6)
    lengths = [[len(t) for t in batch] for batch in emb.batches]
    assert all(max(a) <= min(b) for a, b in itertools.pairwise(lengths))


def test_embed_many_rejects_a_bare_string() -> None:
    from fourfold.errors import InvalidInput

    with pytest.raises(InvalidInput):
        HashEmbedder().embed_many("one string")


onnx_only = pytest.mark.skipif(
    not all(__import__("importlib").util.find_spec(m) for m in ("onnxruntime", "tokenizers")),
    reason="onnxruntime is not installed",
)


@pytest.mark.slow
@onnx_only
def test_onnx_vectors_equal_sentence_transformers() -> None:
    from fourfold.embeddings.minilm import MiniLMEmbedder
    from fourfold.embeddings.onnx import OnnxMiniLMEmbedder

    texts = [
        "Prefers email over phone.",
        "The invoice PDF download fails with error 502 " * 30,  # past 256 tokens: truncated alike
        "Zwei-Faktor-Authentifizierung wurde zurückgesetzt.",
        "ok",
    ] * 20
    onnx, torch = OnnxMiniLMEmbedder(), MiniLMEmbedder()
    assert onnx.identity == torch.identity  # stores built by one open with the other
    np.testing.assert_allclose(onnx.embed_many(texts), torch.embed_many(texts), atol=2e-5)


@pytest.mark.slow
@onnx_only
def test_default_embedder_runs_on_onnx_without_importing_torch(tmp_path: Path) -> None:
    """A fresh process with the export cached embeds on ONNX Runtime; torch never loads."""
    from fourfold.embeddings.onnx import export_onnx

    export_onnx()  # the cache the fresh process will find
    code = (
        "import sys; from fourfold.embeddings import default_embedder\n"
        "e = default_embedder(); v = e.embed('hello')\n"
        "print(type(e).__name__, v.shape, 'torch' in sys.modules)"
    )
    env = {**os.environ, "HTTPS_PROXY": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["OnnxMiniLMEmbedder", "(384,)", "False"]


@pytest.mark.slow
@onnx_only
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
@pytest.mark.parametrize("told", [None, "true"])
def test_tokenizing_a_batch_starts_no_thread_pool_unless_the_user_asks(told: str | None) -> None:
    """A fresh process with one ONNX thread embeds batches on its own threads alone; a user's
    TOKENIZERS_PARALLELISM=true is kept (and then tokenizers starts its pool)."""
    from fourfold.embeddings.onnx import export_onnx

    export_onnx()
    code = (
        "import os; from fourfold.embeddings.onnx import OnnxMiniLMEmbedder\n"
        "e = OnnxMiniLMEmbedder(); e.load(); before = len(os.listdir('/proc/self/task'))\n"
        "e.embed_batch([f'how do I fix the invoice download number {i}' for i in range(16)])\n"
        "print(len(os.listdir('/proc/self/task')) - before, os.environ['TOKENIZERS_PARALLELISM'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "TOKENIZERS_PARALLELISM"}
    env["FOURFOLD_EMBED_THREADS"] = "1"  # ONNX Runtime's pool: none besides the caller
    if told is not None:
        env["TOKENIZERS_PARALLELISM"] = told
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    started, setting = out.stdout.split()
    assert setting == (told or "false")
    assert (int(started) > 0) == (told == "true")


@pytest.mark.slow
@onnx_only
def test_a_damaged_export_is_made_again_from_the_installed_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fourfold.embeddings.onnx import OnnxMiniLMEmbedder, onnx_model_file

    monkeypatch.setenv("FOURFOLD_CACHE_DIR", str(tmp_path))
    target = onnx_model_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"not an onnx model")
    vector = OnnxMiniLMEmbedder().embed("hello")  # exported again, offline, never wrong vectors
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4
    assert target.exists() and target.read_bytes() != b"not an onnx model"
    target.unlink()
    assert OnnxMiniLMEmbedder().embed("hello").shape == (384,)  # a missing one too
    assert target.exists()


@pytest.mark.slow
@onnx_only
def test_the_int8_query_model_approximates_the_stored_one_and_is_made_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fourfold.embeddings.onnx import (
        OnnxMiniLMEmbedder,
        OnnxMiniLMInt8Embedder,
        export_onnx,
        quantize_onnx,
    )

    shared = export_onnx()  # the fp32 export is reused, not redone, in the temp cache
    monkeypatch.setenv("FOURFOLD_CACHE_DIR", str(tmp_path))
    (tmp_path / shared.name).symlink_to(shared)
    texts = ["refund for a damaged parcel", "Prefers email over phone.", "vpn login fails after the upgrade",
             "Zwei-Faktor-Authentifizierung wurde zurückgesetzt.", "ok"]
    exact, int8 = OnnxMiniLMEmbedder(), OnnxMiniLMInt8Embedder()
    cosines = np.sum(exact.embed_many(texts) * int8.embed_many(texts), axis=1)
    assert cosines.min() > 0.95 and cosines.mean() > 0.98  # measured: 0.957 ("ok") to 0.996
    assert not np.allclose(cosines, 1.0, atol=1e-4)  # a different model, not the fp32 one again
    assert int8.identity != exact.identity and int8.approximates == exact.identity
    made = quantize_onnx()
    assert made.parent == tmp_path and made.name.endswith("-int8.onnx")
    before = made.stat().st_mtime_ns
    assert quantize_onnx() == made and made.stat().st_mtime_ns == before  # cached, not redone
    made.write_bytes(b"not an onnx model")  # damaged: made again from the installed model
    assert OnnxMiniLMInt8Embedder().embed("hello").shape == (384,) and made.read_bytes() != b"not an onnx model"
    made.unlink()
    assert OnnxMiniLMInt8Embedder().embed("hello").shape == (384,) and made.exists()


def test_embedder_is_the_one_interface() -> None:
    assert issubclass(HashEmbedder, Embedder)


def test_embed_caches_recent_texts_and_hands_out_copies() -> None:
    emb = _Recording()
    emb.query_cache_size = 2
    first = emb.embed("refund window")
    first[:] = 0.0  # a caller scribbling on its vector never reaches the cache
    again = emb.embed("refund window")
    assert len(emb.batches) == 1
    np.testing.assert_allclose(again, HashEmbedder(32).embed("refund window"), atol=1e-6)
    emb.embed("second")
    emb.embed("third")  # evicts "refund window" (least recently used)
    emb.embed("refund window")
    assert len(emb.batches) == 4


def test_onnx_threads_come_from_the_environment_when_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from fourfold.embeddings.onnx import THREADS_ENV, default_threads
    from fourfold.errors import InvalidInput

    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert default_threads() == (os.cpu_count() or 1)
    monkeypatch.setenv(THREADS_ENV, "1")
    assert default_threads() == 1
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(THREADS_ENV, bad)
        with pytest.raises(InvalidInput, match=THREADS_ENV):
            default_threads()
    monkeypatch.setenv(THREADS_ENV, "0")  # through the embedder: the user's error, not a damaged model
    from fourfold.embeddings.onnx import OnnxMiniLMEmbedder

    with pytest.raises(InvalidInput, match=THREADS_ENV):
        OnnxMiniLMEmbedder().embed("hello")


@pytest.mark.slow
@onnx_only
def test_memory_open_embeds_queries_with_int8_minilm_and_stores_exact_vectors(tmp_path: Path) -> None:
    """The library's default pairs the stored model with its int8 approximation for queries, as
    `fourfold serve` does; `query_model="exact"` and the spec `minilm:exact` keep the exact model."""
    from fourfold import Memory
    from fourfold.config import MemoryConfig
    from fourfold.embeddings.asymmetric import AsymmetricEmbedder
    from fourfold.embeddings.default import default_embedder, default_memory_embedder
    from fourfold.embeddings.onnx import OnnxMiniLMInt8Embedder
    from fourfold.embeddings.spec import embedder_from_spec
    from fourfold.errors import InvalidInput

    paired, exact = default_memory_embedder(), default_embedder()
    assert isinstance(paired, AsymmetricEmbedder) and paired.documents is exact
    assert isinstance(paired.queries, OnnxMiniLMInt8Embedder) and paired.identity == exact.identity
    assert default_memory_embedder() is paired  # one per process, as the exact model
    assert embedder_from_spec("minilm") is paired and embedder_from_spec("minilm:exact") is exact
    text, query = "Prefers email over phone.", "how should we contact them"
    with Memory.open(tmp_path / "data") as mem:
        assert mem.long_term.embedder is paired and mem.episodes.embedder is paired
        mem.long_term.remember(text, scope="c")
        [record] = mem.long_term.store.scan("c")
        np.testing.assert_allclose(record.embedding, exact.embed_many([text])[0], atol=1e-6)  # stored exactly
        np.testing.assert_array_equal(paired.embed(query), paired.queries.embed(query))
        assert float(paired.embed(query) @ exact.embed(query)) < 1 - 1e-4  # the query model, not the exact one
        assert [r.text for r in mem.long_term.recall(query, scope="c")] == [text]
    with Memory.open(tmp_path / "data", config=MemoryConfig(query_model="exact")) as mem:
        assert mem.long_term.embedder is exact
    with pytest.raises(InvalidInput, match="query_model"):
        Memory.open(tmp_path / "other", config=MemoryConfig(query_model="fp16"))  # type: ignore[arg-type]
