"""Any OpenAI-compatible chat-completions server (Ollama, vLLM, llama.cpp) via the `openai` SDK.

fourfold speaks Anthropic-shaped messages and tool schemas everywhere; this module is the
one place that translates them to chat-completions and back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from fourfold._extras import require
from fourfold.errors import InvalidInput, ModelError
from fourfold.models._errors import connection_error, other_error, status_error
from fourfold.models._sdk import SDKChatModel
from fourfold.models.base import ChatRequest, ChatResponse, Message, ToolCall, Usage
from fourfold.models.content import block_text, blocks, json_dumps
from fourfold.serialize import plain

__all__ = ["OpenAICompatModel", "from_openai_response", "openai_client", "to_openai_messages", "to_openai_tools"]

#: Local servers ignore the key, but the openai SDK refuses to build a client without one.
_PLACEHOLDER_KEY = "not-needed"

_FINISH_REASONS: dict[str, Any] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


class OpenAICompatModel(SDKChatModel):
    """A model behind an OpenAI-compatible /v1/chat/completions endpoint.

    `base_url` includes the /v1 suffix (Ollama: "http://localhost:11434/v1"); None lets the
    SDK read OPENAI_BASE_URL. `api_key` None reads OPENAI_API_KEY, else a placeholder.
    """

    is_llm = True

    def complete(self, request: ChatRequest) -> ChatResponse:
        messages, system, tools, max_tokens = request
        params: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(messages, system=system),
            # `max_tokens`, not `max_completion_tokens`: Ollama, vLLM and llama.cpp all honour it.
            "max_tokens": max_tokens,
        }
        if tools:
            params["tools"] = to_openai_tools(tools)
        import openai

        try:
            completion = self.client.chat.completions.create(**params)
        except openai.APIStatusError as exc:
            raise status_error(
                "OpenAI-compatible", exc.status_code, exc.body, exc.message
            ) from None
        except openai.APIConnectionError as exc:
            raise connection_error("OpenAI-compatible", self.client.base_url, exc.message) from None
        except openai.OpenAIError as exc:
            raise other_error("OpenAI-compatible", exc) from None
        return from_openai_response(completion)

    def _make_client(self) -> Any:
        return openai_client(**self._options, what="OpenAICompatModel")


def openai_client(
    *, api_key: str | None, base_url: str | None, timeout: float, max_retries: int, what: str
) -> Any:
    """An `openai.OpenAI` client, for the chat model and the embedder alike; `what` names the user
    in the missing-extra error. The key is `api_key`, else $OPENAI_API_KEY, else a placeholder."""
    openai = require("openai", "openai", what=what)
    key = api_key or os.environ.get("OPENAI_API_KEY") or _PLACEHOLDER_KEY
    try:
        return openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries)
    except openai.OpenAIError as exc:
        raise other_error("OpenAI-compatible", exc) from None


def to_openai_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic tool schemas -> chat-completions function tools."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description"):
            function["description"] = tool["description"]
        function["parameters"] = plain(tool.get("input_schema") or {"type": "object"})
        out.append({"type": "function", "function": function})
    return out


def to_openai_messages(messages: Sequence[Message], *, system: str = "") -> list[dict[str, Any]]:
    """Anthropic-shaped messages (+ system) -> chat-completions messages."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            out.append(_assistant_message(message))
        elif role == "user":
            out.extend(_user_messages(message))
        else:
            raise InvalidInput(f"message role must be 'user' or 'assistant', got {role!r}")
    return out


def _assistant_message(message: Message) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in blocks(message):
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            calls.append(
                {
                    "id": block["id"],
                    "type": "function",
                    "function": {
                        "name": block["name"],
                        "arguments": json_dumps(block.get("input", {})),
                    },
                }
            )
        elif kind not in ("thinking", "redacted_thinking"):  # reasoning does not carry over
            raise InvalidInput(f"cannot send a {kind!r} block to an OpenAI-compatible model")
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        out["tool_calls"] = calls
    elif out["content"] is None:
        out["content"] = ""
    return out


def _user_messages(message: Message) -> list[dict[str, Any]]:
    # Tool results come first: chat-completions wants role "tool" messages right after
    # the assistant message whose tool_calls they answer.
    results: list[dict[str, Any]] = []
    texts: list[str] = []
    for block in blocks(message):
        kind = block.get("type")
        if kind == "tool_result":
            content = block_text(block.get("content", ""))
            if block.get("is_error"):
                content = f"Error: {content}"
            results.append(
                {"role": "tool", "tool_call_id": block["tool_use_id"], "content": content}
            )
        elif kind == "text":
            texts.append(str(block.get("text", "")))
        else:
            raise InvalidInput(f"cannot send a {kind!r} block to an OpenAI-compatible model")
    if texts or not results:
        results.append({"role": "user", "content": "\n".join(texts)})
    return results


def from_openai_response(completion: Any) -> ChatResponse:
    """A chat-completions response -> ChatResponse (tool-call arguments parsed from JSON)."""
    if not completion.choices:
        raise ModelError("OpenAI-compatible API returned no choices")
    choice = completion.choices[0]
    message = choice.message
    calls = tuple(_tool_call(call) for call in (message.tool_calls or []))
    if calls:
        # Some servers report finish_reason "stop" alongside tool calls.
        stop_reason: Any = "tool_use"
    else:
        stop_reason = _FINISH_REASONS.get(choice.finish_reason or "", "other")
    usage = completion.usage
    return ChatResponse(
        text=message.content or "",
        tool_calls=calls,
        stop_reason=stop_reason,
        usage=Usage(
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
        ),
        model=str(completion.model or ""),
    )


def _tool_call(call: Any) -> ToolCall:
    function = getattr(call, "function", None)
    if function is None:
        raise ModelError(
            f"OpenAI-compatible API returned an unsupported tool call type {call.type!r}"
        )
    try:
        arguments = json.loads(function.arguments or "{}")
    except json.JSONDecodeError:
        raise ModelError(
            f"model sent invalid JSON arguments for tool {function.name!r}: {function.arguments[:200]!r}"
        ) from None
    if not isinstance(arguments, dict):
        raise ModelError(f"model sent non-object arguments for tool {function.name!r}")
    return ToolCall(id=call.id, name=function.name, input=arguments)
