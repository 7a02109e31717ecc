"""The chat-model seam: messages + system + tools in, text and tool calls out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    from fourfold.shortterm.tokens import TokenCounter

__all__ = ["ChatModel", "ChatRequest", "ChatResponse", "Message", "ToolCall", "Usage"]

#: A message in Anthropic shape: {"role": "user"|"assistant", "content": str | list[block]}.
#: Blocks are dicts: {"type": "text", "text"}, {"type": "tool_use", "id", "name", "input"},
#: {"type": "tool_result", "tool_use_id", "content"}.
Message = Mapping[str, Any]


class ChatRequest(NamedTuple):
    """One request to a model: the conversation, the system prompt, the tools it may call
    (Anthropic tool schemas: name, description, input_schema) and the reply's token limit."""

    messages: Sequence[Message]
    system: str = ""
    tools: Sequence[Mapping[str, Any]] = ()
    max_tokens: int = 1024


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asks for a tool to be run."""

    id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """What a model answered: text, tool calls, and why it stopped."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "other"] = "end_turn"
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    def as_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation (Anthropic content blocks)."""
        blocks: list[dict[str, Any]] = []
        if self.text:
            blocks.append({"type": "text", "text": self.text})
        for call in self.tool_calls:
            blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.input)})
        return {"role": "assistant", "content": blocks or self.text}


class ChatModel:
    """A model implements `complete(request)` (or, equivalently, `chat(...)`: each is built on the
    other); `name` labels replies and reports (offline models say so)."""

    name: str = "model"
    #: True only for real LLMs; the offline model is never presented as one.
    is_llm: bool = True

    def chat(
        self,
        messages: Sequence[Message],
        *,
        system: str = "",
        tools: Sequence[Mapping[str, Any]] = (),
        max_tokens: int = 1024,
    ) -> ChatResponse:
        """Send one request; tools are Anthropic tool schemas (name, description, input_schema)."""
        return self.complete(ChatRequest(messages, system, tools, max_tokens))

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one request. Implement this (or `chat`, which it calls then)."""
        if type(self).chat is ChatModel.chat:
            raise NotImplementedError(f"{type(self).__name__} implements neither complete nor chat")
        return self.chat(request.messages, system=request.system, tools=request.tools, max_tokens=request.max_tokens)

    def token_counter(self) -> TokenCounter:
        """What counts this model's input tokens: the offline estimate, unless the model can do better."""
        from fourfold.shortterm.tokens import EstimateCounter

        return EstimateCounter()
