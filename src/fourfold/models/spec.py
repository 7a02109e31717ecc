"""One model spec for every surface: `--model`, `$FOURFOLD_MODEL`, `from_spec("openai:gpt-4.1-mini")`.

A spec is `PROVIDER[:MODEL][@BASE_URL]`:

- `offline`: the offline stand-in (not an LLM), needs nothing;
- `anthropic[:MODEL]`: Claude over the Messages API (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL);
- `openai[:MODEL]`: OpenAI's chat completions (OPENAI_API_KEY, OPENAI_BASE_URL);
- `openai-compatible:MODEL@BASE_URL`: any server speaking chat completions (vLLM, Ollama,
  LM Studio, llama.cpp); `ollama:MODEL`, `lmstudio:MODEL` and `vllm:MODEL` are the same
  with their usual local base URL.

Nothing connects until the first call, so parsing a spec is free and offline.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal

from fourfold._extras import check
from fourfold.errors import InvalidInput
from fourfold.models.base import ChatModel

__all__ = ["LOCAL_BASE_URLS", "MODEL_ENV", "ModelSpec", "default_model", "from_spec", "parse_spec"]

#: The environment variable holding the model spec of every surface.
MODEL_ENV = "FOURFOLD_MODEL"

Provider = Literal["offline", "anthropic", "openai", "openai-compatible"]

#: Shortcuts for local OpenAI-compatible servers, at their default ports.
LOCAL_BASE_URLS = {
    "ollama": "http://localhost:11434/v1",
    "lmstudio": "http://localhost:1234/v1",
    "vllm": "http://localhost:8000/v1",
}
_DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4.1-mini"}
_PROVIDERS = ("offline", "anthropic", "openai", "openai-compatible")
# The base URL starts at the last "@" followed by a scheme: model names may hold ":" and "@".
_URL = re.compile(r"@(https?://\S+)$")


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed spec: which provider, which model, and where (None: the SDK's default)."""

    provider: Provider
    model: str = ""
    base_url: str | None = None

    def __str__(self) -> str:
        text = self.provider + (f":{self.model}" if self.model else "")
        return text + (f"@{self.base_url}" if self.base_url else "")


def parse_spec(spec: str) -> ModelSpec:
    """Parse `PROVIDER[:MODEL][@BASE_URL]`; InvalidInput names the accepted forms."""
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidInput(_usage("an empty model spec"))
    text = spec.strip()
    base_url: str | None = None
    found = _URL.search(text)
    if found:
        base_url, text = found.group(1), text[: found.start()]
    provider, _, model = text.partition(":")
    provider = provider.lower()
    if provider in LOCAL_BASE_URLS:
        base_url = base_url or LOCAL_BASE_URLS[provider]
        provider = "openai-compatible"
    if provider not in _PROVIDERS:
        raise InvalidInput(_usage(f"unknown model provider {provider!r} in {spec!r}"))
    if provider == "offline":
        if model or base_url:
            raise InvalidInput(_usage(f"'offline' takes no model or URL, got {spec!r}"))
        return ModelSpec("offline")
    model = model or _DEFAULT_MODELS.get(provider, "")
    if not model:
        raise InvalidInput(_usage(f"{spec!r} names no model"))
    if provider == "openai-compatible" and not (base_url or os.environ.get("OPENAI_BASE_URL")):
        raise InvalidInput(_usage(f"{spec!r} needs a base URL (or $OPENAI_BASE_URL)"))
    return ModelSpec(provider, model, base_url)  # type: ignore[arg-type]  # checked against _PROVIDERS


def from_spec(spec: str | ModelSpec) -> ChatModel:
    """The chat model a spec names, e.g. `from_spec("ollama:llama3.1")`; no connection yet."""
    parsed = spec if isinstance(spec, ModelSpec) else parse_spec(spec)
    if parsed.provider == "offline":
        from fourfold.models.offline import OfflineModel

        return OfflineModel()
    if parsed.provider == "anthropic":
        check("anthropic", "anthropic", what="an Anthropic model")
        from fourfold.models.anthropic import AnthropicModel

        return AnthropicModel(model=parsed.model, base_url=parsed.base_url)
    check("openai", "openai", what=f"the model {parsed}")
    from fourfold.models.openai_compat import OpenAICompatModel

    return OpenAICompatModel(model=parsed.model, base_url=parsed.base_url)


def default_model(spec: str | None = None) -> ChatModel:
    """`spec`, else $FOURFOLD_MODEL, else Claude when ANTHROPIC_API_KEY is set, else offline."""
    chosen = spec or os.environ.get(MODEL_ENV)
    if chosen:
        return from_spec(chosen)
    return from_spec("anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "offline")


def _usage(problem: str) -> str:
    return (
        f"{problem}: use offline, anthropic[:MODEL], openai[:MODEL], "
        "openai-compatible:MODEL@BASE_URL, or ollama:/lmstudio:/vllm:MODEL"
    )
