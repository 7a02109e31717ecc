"""One embedder spec for every surface: `--embedder`, `$FOURFOLD_EMBEDDER`, `embedder_from_spec(...)`.

- `minilm` (default): the bundled all-MiniLM-L6-v2, offline, with queries embedded by its int8
  approximation on ONNX Runtime (`default_memory_embedder`); `minilm:exact` embeds them exactly;
- `hash[:DIMENSION]`: deterministic hash vectors, for tests only;
- `openai:MODEL`: OpenAI's embeddings (OPENAI_API_KEY), dimension known for its models;
- `openai-compatible:MODEL@BASE_URL?dimension=N`: any `/v1/embeddings` server (Ollama,
  vLLM, LM Studio); `ollama:MODEL?dimension=N` and friends use their usual local URL.

A data dir records its embedder: opening it with another raises `EmbedderMismatch`, and
`fourfold reindex` is the way to move a store to a new one.
"""

from __future__ import annotations

import re

from fourfold.embeddings.base import Embedder
from fourfold.errors import InvalidInput

__all__ = ["EMBEDDER_ENV", "embedder_from_spec"]

#: The environment variable holding the embedder spec.
EMBEDDER_ENV = "FOURFOLD_EMBEDDER"

#: Dimensions of OpenAI's embedding models (the API does not say before the first call).
_OPENAI_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
_DIMENSION = re.compile(r"\?dimension=(\d+)$")


def embedder_from_spec(spec: str) -> Embedder:
    """The embedder a spec names; nothing connects or loads until the first embedding."""
    from fourfold.models.spec import parse_spec

    if not isinstance(spec, str) or not spec.strip():
        raise InvalidInput(_usage("an empty embedder spec"))
    text = spec.strip()
    name, _, arg = text.partition(":")
    if name == "minilm" and arg in ("", "exact"):
        from fourfold.embeddings.default import default_embedder, default_memory_embedder

        return default_memory_embedder() if not arg else default_embedder()
    if name == "hash":
        from fourfold.embeddings.hashing import HashEmbedder

        if arg and not arg.isdigit():
            raise InvalidInput(_usage(f"hash takes a dimension, got {spec!r}"))
        return HashEmbedder(int(arg)) if arg else HashEmbedder()
    found = _DIMENSION.search(text)
    dimension = int(found.group(1)) if found else None
    if found:
        text = text[: found.start()]
    try:
        parsed = parse_spec(text)
    except InvalidInput:
        raise InvalidInput(_usage(f"unknown embedder {spec!r}")) from None
    if parsed.provider not in ("openai", "openai-compatible") or (parsed.provider == "openai" and ":" not in text):
        raise InvalidInput(_usage(f"unknown embedder {spec!r}"))
    if parsed.provider == "openai" and dimension is None:
        dimension = _OPENAI_DIMENSIONS.get(parsed.model)
    if not dimension:
        raise InvalidInput(_usage(f"{spec!r} needs ?dimension=N (the size of the model's vectors)"))
    from fourfold.embeddings.openai_compat import OpenAIEmbedder

    return OpenAIEmbedder(model=parsed.model, dimension=dimension, base_url=parsed.base_url)


def _usage(problem: str) -> str:
    return (
        f"{problem}: use minilm, minilm:exact, hash, openai:MODEL, "
        "openai-compatible:MODEL@BASE_URL?dimension=N, or ollama:MODEL?dimension=N"
    )
