"""all-MiniLM-L6-v2 on ONNX Runtime: the same vectors as sentence-transformers, without torch.

ONNX Runtime starts in a fraction of a second and needs about a third of torch's memory,
so `fourfold recall` in a fresh process does not wait for torch. The ONNX graph is
exported once from the bundled weights (that step needs torch and the `onnx` package, both
offline), checked against torch on sample sentences, and cached under
`$FOURFOLD_CACHE_DIR` (default `$XDG_CACHE_HOME/fourfold`, else `~/.cache/fourfold`).
`python -m fourfold.embeddings.onnx` exports it (and the int8 variant `fourfold serve` embeds
queries with) ahead of time, e.g. in an image build.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fourfold._files import replacing
from fourfold._locks import FileLock
from fourfold.embeddings.base import Embedder, Vectors, normalize
from fourfold.embeddings.minilm import OFFLINE_ENV, model_path
from fourfold.errors import InvalidInput, MissingDependency, ModelError

__all__ = [
    "CACHE_DIR_ENV",
    "OnnxMiniLMEmbedder",
    "OnnxMiniLMInt8Embedder",
    "cache_dir",
    "export_onnx",
    "onnx_model_file",
    "quantize_onnx",
]

log = logging.getLogger("fourfold.embeddings")

CACHE_DIR_ENV = "FOURFOLD_CACHE_DIR"
#: Read by the `tokenizers` package on every batch (see `_tokenizer`).
PARALLELISM_ENV = "TOKENIZERS_PARALLELISM"
#: The int8 model's vectors of the check texts must be at least this close to the fp32 ones.
INT8_MIN_COSINE = 0.98
#: Bumped when the exported graph changes (inputs, pooling, opset).
_GRAPH_VERSION = 1
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_CHECK_TEXTS = (
    "Prefers email over phone.",
    "The invoice PDF download fails with error 502; clearing the browser cache fixed it.",
)


def cache_dir() -> Path:
    """Where exported models live: $FOURFOLD_CACHE_DIR, else the user's cache dir."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fourfold"


def _fingerprint(folder: Path) -> str:
    """Changes when the bundled weights or config change (size and config content)."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(str(_GRAPH_VERSION).encode())
    for name in ("config.json", "tokenizer.json", "sentence_bert_config.json"):
        path = folder / name
        if path.exists():
            digest.update(path.read_bytes())
    weights = folder / "model.safetensors"
    digest.update(str(weights.stat().st_size if weights.exists() else 0).encode())
    return digest.hexdigest()


def onnx_model_file(folder: str | None = None) -> Path:
    """The cache path of the ONNX export of the model in `folder` (default: the bundled one)."""
    source = Path(folder or model_path())
    return cache_dir() / f"all-MiniLM-L6-v2-{_fingerprint(source)}.onnx"


def export_onnx(folder: str | None = None) -> Path:
    """Export the bundled weights to ONNX once (idempotent, safe across processes)."""
    target = onnx_model_file(folder)
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{target}.lock", timeout=300.0).hold():
        if not target.exists():  # another process may have exported it meanwhile
            _export(Path(folder or model_path()), target)
    return target


def _export(source: Path, target: Path) -> None:
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    try:
        import onnx  # noqa: F401 - torch.onnx.export needs it
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise MissingDependency(
            f"exporting MiniLM to ONNX needs torch, transformers and onnx ({exc.name} is missing): "
            "pip install onnx"
        ) from exc

    class Pooled(torch.nn.Module):  # type: ignore[misc]
        """BERT, then the mean pooling and L2 normalisation sentence-transformers applies."""

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    module = Pooled(AutoModel.from_pretrained(str(source)).eval())
    tokenizer = _tokenizer(source)
    sample = _encode(tokenizer, list(_CHECK_TEXTS))
    axes = {name: {0: "batch", 1: "tokens"} for name in _INPUTS}
    with replacing(target) as tmp:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's notes on opset choices
            args = tuple(torch.from_numpy(sample[name]) for name in _INPUTS)
            expected = module(*args).numpy()
            torch.onnx.export(
                module, args, str(tmp), input_names=list(_INPUTS), output_names=["embedding"],
                dynamic_axes={**axes, "embedding": {0: "batch"}}, opset_version=17, dynamo=False,
            )
        got = _session(tmp).run(None, sample)[0]
        if not np.allclose(got, expected, atol=1e-4):
            raise ModelError("the ONNX export of MiniLM does not reproduce torch's vectors")
        _write_check(target, _digest(tmp))
    log.info("exported MiniLM to ONNX at %s", target)


def quantize_onnx(folder: str | None = None) -> Path:
    """The int8 variant of the ONNX export (see `OnnxMiniLMInt8Embedder`), made once and cached."""
    exact = export_onnx(folder)
    target = exact.with_name(f"{exact.stem}-int8{exact.suffix}")
    if target.exists():
        return target
    with FileLock(f"{target}.lock", timeout=300.0).hold():
        if not target.exists():
            _quantize(exact, target, Path(folder or model_path()))
    return target


def _quantize(exact: Path, target: Path, source: Path) -> None:
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]
    except ImportError as exc:  # onnxruntime.quantization needs the onnx package
        raise MissingDependency(f"quantizing MiniLM needs the onnx package ({exc.name} is missing)") from exc
    quiet = _DropRecords()
    logging.getLogger().addFilter(quiet)  # its advice to pre-process goes to the root logger
    try:
        with replacing(target) as tmp:
            # Per-channel int8 weights: per-tensor scales moved queries to cos 0.94 of the fp32 model.
            quantize_dynamic(str(exact), str(tmp), per_channel=True, weight_type=QuantType.QInt8)
            sample = _encode(_tokenizer(source), list(_CHECK_TEXTS))
            expected = _session(exact).run(None, sample)[0]
            got = _session(tmp).run(None, sample)[0]
            cosine = float(np.min(np.sum(expected * got, axis=1)))
            if cosine < INT8_MIN_COSINE:
                raise ModelError(f"the int8 MiniLM is too far from the fp32 one (cosine {cosine:.3f})")
            _write_check(target, _digest(tmp))
    finally:
        logging.getLogger().removeFilter(quiet)
    log.info("quantized MiniLM to int8 at %s", target)


def _check_file(model: Path) -> Path:
    """The digest of a cached model as it was made, beside it."""
    return model.with_name(f"{model.name}.blake2b")


def _digest(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _write_check(model: Path, digest: str) -> None:
    with replacing(_check_file(model)) as tmp:
        tmp.write_text(digest + "\n", encoding="ascii")


def _open_checked(model: Path, threads: int) -> Any:
    """A session on a cached model whose bytes are those it was made with; ModelError if they
    differ or the file cannot be loaded (damaged weights may load, and give wrong vectors)."""
    check = _check_file(model)
    try:
        found = _digest(model)
        expected = check.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        if not model.exists():
            raise ModelError(f"{model} is missing") from None
        expected = found  # made by a fourfold that kept no digest: trusted from now on
        _write_check(model, found)
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"cannot read {model} or its digest ({exc})") from exc
    if found != expected:
        raise ModelError(f"{model} is not the file that was made (its digest differs)")
    try:
        return _session(model, threads)
    except MissingDependency:
        raise
    except Exception as exc:  # ORT raises its own types for a damaged file
        raise ModelError(f"cannot load {model} ({' '.join(str(exc).split())[:200]})") from exc


def _set_aside(model: Path) -> None:
    """Move a damaged model (and its check) aside, so that it is made again."""
    for path in (model, _check_file(model)):
        with contextlib.suppress(FileNotFoundError):  # another process moved it first
            os.replace(path, path.with_name(f"{path.name}.damaged"))


class _DropRecords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


def _tokenizer(source: Path) -> Any:
    from tokenizers import Tokenizer

    # One batch's texts on the calling thread: tokenizers' own thread pool (rayon, on unless
    # told otherwise) costs more than it saves on batches of at most 32 short texts: its
    # thread switches outweigh the work they split. A caller's explicit setting is kept.
    os.environ.setdefault(PARALLELISM_ENV, "false")
    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    # The bundled tokenizer.json pads and truncates at 128; sentence-transformers uses
    # max_seq_length (256) and pads each batch only to its longest text.
    config = source / "sentence_bert_config.json"
    max_len = int(json.loads(config.read_text()).get("max_seq_length", 256)) if config.exists() else 256
    tokenizer.enable_truncation(max_length=max_len)
    pad_id = tokenizer.token_to_id("[PAD]")
    tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
    return tokenizer


def _encode(tokenizer: Any, texts: list[str]) -> dict[str, Any]:
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


#: Threads ONNX Runtime may use for one embedding call when the embedder is not told (default:
#: every core). `fourfold serve --workers N` sets it to cores / N for its workers: on a busy
#: machine a second thread only adds synchronisation to a query's CPU.
THREADS_ENV = "FOURFOLD_EMBED_THREADS"


def default_threads() -> int:
    """$FOURFOLD_EMBED_THREADS, else the number of cores."""
    text = os.environ.get(THREADS_ENV, "").strip()
    if not text:
        return os.cpu_count() or 1
    if not text.isdigit() or int(text) < 1:
        raise InvalidInput(f"${THREADS_ENV} must be a whole number of threads (1 or more), not {text!r}")
    return int(text)


def _session(path: Path, threads: int | None = None) -> Any:
    try:
        import onnxruntime as ort  # type: ignore[import-untyped]
    except ImportError as exc:
        raise MissingDependency("onnxruntime is not installed: pip install onnxruntime") from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or default_threads()
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    # ORT's workers spin after each run by default; between single queries that spinning
    # takes the cores numpy needs for the search that follows.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class OnnxMiniLMEmbedder(Embedder):
    """MiniLM through ONNX Runtime; identical vectors (and identity) to `MiniLMEmbedder`.

    Nothing loads until the first embedding; the first use ever exports the model (needs
    torch and onnx), later processes only open the cached file.
    """

    name = "all-MiniLM-L6-v2"
    dimension = 384

    def __init__(self, *, batch_size: int = 32, path: str | None = None, threads: int | None = None) -> None:
        self.batch_size = batch_size
        self._path = path
        self._threads = threads
        self._loaded: tuple[Any, Any] | None = None
        self._fallback: Embedder | None = None
        self._load_lock = threading.Lock()

    def load(self) -> None:
        """Open the tokenizer and the ONNX session now (exporting once if needed)."""
        self._get()

    def __getstate__(self) -> dict[str, object]:
        """Pickled unloaded: another process opens its own session on first use."""
        state = super().__getstate__()
        state.update(_loaded=None, _fallback=None, _load_lock=None)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._load_lock = threading.Lock()

    def _get(self) -> tuple[Any, Any] | None:
        """(tokenizer, session), or None when falling back to sentence-transformers."""
        loaded = self._loaded
        if loaded is not None or self._fallback is not None:
            return loaded
        with self._load_lock:
            if self._loaded is None and self._fallback is None:
                threads = self._threads or default_threads()  # a bad $FOURFOLD_EMBED_THREADS is the user's error
                source = Path(self._path or model_path())
                try:
                    onnx_file = self._model_file(source)
                except (MissingDependency, OSError) as exc:  # no onnx, or no writable cache dir
                    # Same vectors, same identity: slower to start, but nothing breaks.
                    log.warning("%s; embedding with sentence-transformers instead", exc)
                    from fourfold.embeddings.minilm import MiniLMEmbedder

                    self._fallback = MiniLMEmbedder(batch_size=self.batch_size, path=self._path)
                    return None
                try:
                    session = _open_checked(onnx_file, threads)
                except ModelError as damaged:
                    session = self._rebuilt(source, onnx_file, damaged, threads)
                self._loaded = (_tokenizer(source), session)
            return self._loaded

    def _model_file(self, source: Path) -> Path:
        return export_onnx(str(source))

    def _rebuilt(self, source: Path, model: Path, damaged: ModelError, threads: int) -> Any:
        """A damaged cached model is made again from the installed weights, or refused in one line."""
        log.warning("%s: making it again from the installed model", damaged)
        _set_aside(model)
        try:
            return _open_checked(self._model_file(source), threads)
        except (MissingDependency, ModelError, OSError) as exc:
            raise ModelError(
                f"the cached model is damaged ({damaged}) and could not be made again here ({exc}); "
                "make it with `python -m fourfold.embeddings.onnx` where torch and onnx are installed"
            ) from exc

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        loaded = self._get()
        if loaded is None:
            assert self._fallback is not None
            return self._fallback.embed_batch(texts)
        tokenizer, session = loaded
        vectors = session.run(None, _encode(tokenizer, list(texts)))[0]
        return normalize(np.asarray(vectors, dtype=np.float32))


class OnnxMiniLMInt8Embedder(OnnxMiniLMEmbedder):
    """MiniLM with int8 weights (dynamic, per-channel quantization): for queries, not for stores.

    It embeds a short query with much less of the CPU than the fp32 model (see
    benchmarks/results/perf.md), and its vectors stay close to the fp32
    model's: cosine 0.988 at least and 0.994 on average over 480 short English queries, less
    for a lone word ("ok": 0.957) or German (0.978). So it can embed the queries of a store
    whose memories the fp32 model embedded (`AsymmetricEmbedder`); on LoCoMo (dev) R@10 went
    from 0.810 to 0.807. Its identity is its own: a store never holds its vectors. The int8
    file is derived from the fp32 export once and cached.
    """

    name = "all-MiniLM-L6-v2-int8"
    approximates = "all-MiniLM-L6-v2:384"

    def _model_file(self, source: Path) -> Path:
        return quantize_onnx(str(source))


def main() -> None:
    """Export the model and its int8 query variant ahead of time (for images and installs):
    prints both cached paths."""
    print(export_onnx())
    print(quantize_onnx())


if __name__ == "__main__":
    main()
