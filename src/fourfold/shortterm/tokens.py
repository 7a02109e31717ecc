"""Token counting: an offline estimate by default, the Anthropic count_tokens endpoint on demand."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from fourfold.errors import ModelError

if TYPE_CHECKING:
    from fourfold.models.base import Message

__all__ = ["AnthropicCounter", "EstimateCounter", "TokenCounter"]


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the input tokens of a whole request (messages plus system prompt)."""

    def count(self, messages: Sequence[Message], *, system: str = "") -> int: ...


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class EstimateCounter:
    """Offline estimate: ~1 token per 3.5 characters, plus per-message and per-block overhead.

    Tool inputs are JSON-encoded; images and documents count a flat `media_tokens`. It aims
    to land within about 0.9-1.3x of Claude's tokenizer for English prose, code and JSON
    (it overestimates more often than it underestimates); it is not meant for CJK text.
    It is additive over messages, so dropping a message never raises the count.
    """

    def __init__(
        self,
        *,
        chars_per_token: float = 3.5,
        message_overhead: int = 4,
        block_overhead: int = 3,
        media_tokens: int = 1500,
    ) -> None:
        self.chars_per_token = chars_per_token
        self.message_overhead = message_overhead
        self.block_overhead = block_overhead
        self.media_tokens = media_tokens

    def count(self, messages: Sequence[Message], *, system: str = "") -> int:
        """Estimated input tokens of the request."""
        total = self._tokens(len(system)) if system else 0
        return total + sum(self.count_message(m) for m in messages)

    def count_message(self, message: Message) -> int:
        """Estimated tokens of one message."""
        chars, blocks, media = self._measure(message.get("content"))
        for call in message.get("tool_calls") or ():
            chars += len(_dumps(call))
            blocks += 1
        return (
            self.message_overhead
            + blocks * self.block_overhead
            + media * self.media_tokens
            + self._tokens(chars)
        )

    def _tokens(self, chars: int) -> int:
        return math.ceil(chars / self.chars_per_token)

    def _measure(self, content: Any) -> tuple[int, int, int]:
        """(characters, blocks, media blocks) of a content value."""
        if content is None:
            return 0, 0, 0
        if isinstance(content, str):
            return len(content), 0, 0
        if not isinstance(content, Sequence):
            return len(_dumps(content)), 0, 0
        chars = blocks = media = 0
        for block in content:
            c, b, m = self._measure_block(block)
            chars, blocks, media = chars + c, blocks + b + 1, media + m
        return chars, blocks, media

    def _measure_block(self, block: Any) -> tuple[int, int, int]:
        if not isinstance(block, Mapping):
            return len(str(block)), 0, 0
        kind = block.get("type")
        if kind == "text":
            return len(str(block.get("text", ""))), 0, 0
        if kind == "tool_use":
            return len(str(block.get("name", ""))) + len(_dumps(block.get("input", {}))), 0, 0
        if kind == "tool_result":
            return self._measure(block.get("content"))
        if kind in ("image", "document", "image_url"):
            return 0, 0, 1
        return len(_dumps(block)), 0, 0


class AnthropicCounter:
    """Exact counts from `client.messages.count_tokens` (anthropic SDK), cached per request.

    The client is injected and only used when `count` is called. Leading "system" role
    messages (OpenAI shape) are moved into the `system` parameter.
    """

    def __init__(self, client: Any, model: str, *, max_cache: int = 4096) -> None:
        self.client = client
        self.model = model
        self.max_cache = max_cache
        self.calls = 0
        self._cache: dict[str, int] = {}

    def count(self, messages: Sequence[Message], *, system: str = "") -> int:
        """Input tokens of the request, asking the API once per distinct request."""
        system_parts = [system] if system else []
        system_parts += [str(m.get("content", "")) for m in messages if m.get("role") == "system"]
        rest = [dict(m) for m in messages if m.get("role") != "system"]
        full_system = "\n\n".join(p for p in system_parts if p)
        key = hashlib.sha256(_dumps([self.model, full_system, rest]).encode()).hexdigest()
        if key not in self._cache:
            if len(self._cache) >= self.max_cache:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = self._ask(rest, full_system)
        return self._cache[key]

    def _ask(self, messages: list[dict[str, Any]], system: str) -> int:
        from anthropic import APIError

        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if system:
            kwargs["system"] = system
        self.calls += 1
        try:
            return int(self.client.messages.count_tokens(**kwargs).input_tokens)
        except APIError as exc:
            raise ModelError(f"count_tokens failed for {self.model}: {exc}") from exc
