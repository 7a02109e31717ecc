"""Turn SDK exceptions into one-line `ModelError`s (both SDKs share the Stainless shape)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fourfold.errors import ModelError
from fourfold.text.lines import one_line


def status_error(provider: str, status: int, body: object, fallback: str) -> ModelError:
    """An HTTP error status: "<provider> API error 429: <the API's own message>"."""
    return ModelError(one_line(f"{provider} API error {status}: {body_message(body) or fallback}"))


def connection_error(provider: str, base_url: object, message: str) -> ModelError:
    return ModelError(one_line(f"{provider} API unreachable at {base_url}: {message}"))


def other_error(provider: str, exc: BaseException) -> ModelError:
    return ModelError(one_line(f"{provider} call failed: {type(exc).__name__}: {exc}"))


def body_message(body: object) -> str:
    """The human message inside an error body.

    Anthropic bodies are {"type": "error", "error": {"type", "message"}}; the openai SDK
    hands over the inner {"message", "type", "code"} object already.
    """
    if isinstance(body, Mapping):
        inner: Any = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
        return ""
    if isinstance(body, str):
        return body
    return ""
