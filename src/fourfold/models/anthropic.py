"""Claude through the official `anthropic` SDK (imported on first use, not at import)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from fourfold._extras import require
from fourfold.errors import ModelError
from fourfold.models._errors import connection_error, other_error, status_error
from fourfold.models._sdk import SDKChatModel
from fourfold.models.base import ChatRequest, ChatResponse, Message, ToolCall, Usage
from fourfold.serialize import plain
from fourfold.text.lines import one_line

if TYPE_CHECKING:
    from fourfold.shortterm.tokens import TokenCounter

__all__ = ["AnthropicModel"]

StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "other"]
_STOP_REASONS = {"end_turn", "tool_use", "max_tokens", "stop_sequence"}


class AnthropicModel(SDKChatModel):
    """A Claude model over the Messages API.

    `api_key` and `base_url` left as None are read by the SDK from ANTHROPIC_API_KEY and
    ANTHROPIC_BASE_URL. Pass `client` to inject a ready `anthropic.Anthropic` (tests,
    custom transports); otherwise one is created on the first call.
    """

    is_llm = True

    default_model = "claude-sonnet-4-6"

    def complete(self, request: ChatRequest) -> ChatResponse:
        messages, system, tools, max_tokens = request
        params = self._params(messages, system, tools)
        response = self._call(lambda: self.client.messages.create(max_tokens=max_tokens, **params))
        return to_chat_response(response)

    def count_tokens(
        self,
        messages: Sequence[Message],
        *,
        system: str = "",
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        """Input tokens of this request, counted by the API's /v1/messages/count_tokens."""
        params = self._params(messages, system, tools)
        result = self._call(lambda: self.client.messages.count_tokens(**params))
        return int(result.input_tokens)

    def token_counter(self) -> TokenCounter:
        """Exact counts from Anthropic's count_tokens endpoint (cached per request)."""
        from fourfold.shortterm.tokens import AnthropicCounter

        return AnthropicCounter(self.client, self.model)

    def _params(
        self, messages: Sequence[Message], system: str, tools: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "messages": plain(list(messages))}
        # Omitted when empty, so the request carries only what the caller gave.
        if system:
            params["system"] = system
        if tools:
            params["tools"] = plain(list(tools))
        return params

    def _make_client(self) -> Any:
        anthropic = require("anthropic", "anthropic", what="AnthropicModel")
        try:
            client = anthropic.Anthropic(**self._options)
        except anthropic.CredentialsError as exc:
            raise _no_credentials(exc) from None
        except anthropic.AnthropicError as exc:
            raise other_error("Anthropic", exc) from None
        # Without credentials the SDK only fails at request time, with a bare TypeError.
        if client.api_key is None and client.auth_token is None and client.credentials is None:
            raise _no_credentials(None)
        return client

    def _call(self, request: Callable[[], Any]) -> Any:
        import anthropic

        try:
            return request()
        except anthropic.APIStatusError as exc:
            raise status_error("Anthropic", exc.status_code, exc.body, exc.message) from None
        except anthropic.APIConnectionError as exc:
            raise connection_error("Anthropic", self.client.base_url, exc.message) from None
        except anthropic.CredentialsError as exc:
            raise _no_credentials(exc) from None
        except anthropic.AnthropicError as exc:
            raise other_error("Anthropic", exc) from None
        except ValueError as exc:  # e.g. "Streaming is required" for a large max_tokens
            raise other_error("Anthropic", exc) from None


def _no_credentials(cause: Exception | None) -> ModelError:
    detail = f" ({one_line(str(cause), 200)})" if cause else ""
    return ModelError(
        f"no usable Anthropic credentials{detail}: set ANTHROPIC_API_KEY or pass api_key= "
        "(or use OfflineModel to run without an LLM)"
    )


def to_chat_response(message: Any) -> ChatResponse:
    """Convert an SDK `Message` (text and tool_use blocks) to a ChatResponse."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(id=block.id, name=block.name, input=dict(block.input)))
    usage = message.usage
    # Cached prompt tokens are billed input too; the API reports them apart.
    input_tokens = (
        usage.input_tokens
        + (usage.cache_creation_input_tokens or 0)
        + (usage.cache_read_input_tokens or 0)
    )
    stop: StopReason = message.stop_reason if message.stop_reason in _STOP_REASONS else "other"
    return ChatResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        stop_reason=stop,
        usage=Usage(input_tokens=input_tokens, output_tokens=usage.output_tokens),
        model=str(message.model),
    )
