"""The SDK-backed chat models, driven through the real anthropic/openai SDKs at a local fake server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import fourfold.models
from fourfold.errors import InvalidInput, ModelError
from fourfold.models import (
    AnthropicModel,
    ChatResponse,
    OfflineModel,
    OpenAICompatModel,
    ToolCall,
    default_model,
)
from fourfold.testing import ErrorReply, FakeLLMServer
from test_models_offline import POLICY_TOOL

SYSTEM = "You are a support agent. Use lookup_policy for any policy value."
QUESTION = "what is your refund window?"

_PROXIES = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"]


@pytest.fixture(autouse=True)
def hermetic_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No real keys, endpoints, profiles or proxies leak in from the developer's shell."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_")) or name in _PROXIES:
            monkeypatch.delenv(name)
    # The anthropic SDK looks for credential profiles under ~/.config/anthropic.
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def claude(server: FakeLLMServer) -> AnthropicModel:
    return AnthropicModel(api_key="test-key", base_url=server.url, max_retries=0)


def local(server: FakeLLMServer) -> OpenAICompatModel:
    return OpenAICompatModel(model="llama3.2", base_url=server.openai_url, max_retries=0)


def asks_for(key: str, call_id: str) -> ChatResponse:
    return ChatResponse(
        text="Let me check.",
        tool_calls=(ToolCall(call_id, "lookup_policy", {"key": key}),),
        stop_reason="tool_use",
    )


def tool_round_trip(model: fourfold.models.ChatModel) -> tuple[ChatResponse, ChatResponse]:
    """The agent loop: ask, run the tool the model asked for, send the result, get the answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    first = model.chat(messages, system=SYSTEM, tools=[POLICY_TOOL])
    messages.append(first.as_message())
    results = [
        {"type": "tool_result", "tool_use_id": call.id, "content": "30"}
        for call in first.tool_calls
    ]
    messages.append({"role": "user", "content": results})
    return first, model.chat(messages, system=SYSTEM, tools=[POLICY_TOOL])


# -- Anthropic ---------------------------------------------------------------------------


def test_anthropic_text_reply(server: FakeLLMServer) -> None:
    server.add("Hello from the fake API.")
    reply = claude(server).chat([{"role": "user", "content": "hi"}])
    assert reply.text == "Hello from the fake API."
    assert reply.tool_calls == ()
    assert reply.stop_reason == "end_turn"
    assert reply.model == "claude-sonnet-4-6"
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0


def test_anthropic_tool_use_round_trip(server: FakeLLMServer) -> None:
    def answer(request: dict[str, Any]) -> str:
        result = request["messages"][-1]["content"][0]
        return f"Refunds are accepted for {result['content']} days."

    server.add(asks_for("refund_window_days", "toolu_01"), answer)
    first, second = tool_round_trip(claude(server))

    assert first.stop_reason == "tool_use"
    assert first.text == "Let me check."
    assert first.tool_calls == (
        ToolCall("toolu_01", "lookup_policy", {"key": "refund_window_days"}),
    )
    assert second.text == "Refunds are accepted for 30 days."
    assert second.stop_reason == "end_turn"


def test_anthropic_request_wire_shape(server: FakeLLMServer) -> None:
    server.add(asks_for("refund_window_days", "toolu_01"), "30 days.")
    tool_round_trip(claude(server))

    first, second = server.requests
    assert first.method == "POST" and first.path == "/v1/messages"
    assert first.body == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 1024,
        "system": SYSTEM,
        "tools": [POLICY_TOOL],
        "messages": [{"role": "user", "content": QUESTION}],
    }
    assert second.body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "lookup_policy",
                    "input": {"key": "refund_window_days"},
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "30"}],
        },
    ]
    assert "anthropic-version" in first.headers
    assert "test-key" in first.headers.get("authorization", "") + first.headers.get("x-api-key", "")


def test_anthropic_omits_empty_system_and_tools(server: FakeLLMServer) -> None:
    server.add("ok")
    claude(server).chat([{"role": "user", "content": "hi"}], max_tokens=50)
    body = server.requests[0].body
    assert "system" not in body and "tools" not in body
    assert body["max_tokens"] == 50


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (429, "Number of request tokens has exceeded your rate limit."),
        (500, "Internal server error"),
    ],
)
def test_anthropic_error_status_becomes_one_line_model_error(
    server: FakeLLMServer, status: int, message: str
) -> None:
    server.add(ErrorReply(status, message))
    with pytest.raises(ModelError) as caught:
        claude(server).chat([{"role": "user", "content": "hi"}])
    assert str(caught.value) == f"Anthropic API error {status}: {message}"
    assert "\n" not in str(caught.value)
    # The SDK exception is not chained in, so no SDK traceback is printed.
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert len(server.requests) == 1  # max_retries=0


def test_anthropic_unreachable_server_is_model_error() -> None:
    with FakeLLMServer() as gone:
        url = gone.url
    model = AnthropicModel(api_key="test-key", base_url=url, max_retries=0, timeout=5)
    with pytest.raises(ModelError, match="unreachable"):
        model.chat([{"role": "user", "content": "hi"}])


@pytest.mark.parametrize("config_dir", [False, True])
def test_anthropic_missing_credentials_is_model_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, config_dir: bool
) -> None:
    if config_dir:  # an explicit, empty config dir makes the SDK raise CredentialsError
        monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "empty"))
    model = AnthropicModel(base_url="http://127.0.0.1:9")  # constructing needs no key
    with pytest.raises(ModelError, match="set ANTHROPIC_API_KEY"):
        model.chat([{"role": "user", "content": "hi"}])


def test_anthropic_reads_base_url_and_key_from_env(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    server.add("from env")
    assert (
        AnthropicModel(max_retries=0).chat([{"role": "user", "content": "hi"}]).text == "from env"
    )
    headers = server.requests[0].headers
    assert "env-key" in headers.get("authorization", "") + headers.get("x-api-key", "")


def test_anthropic_count_tokens_calls_the_endpoint(server: FakeLLMServer) -> None:
    messages = [{"role": "user", "content": QUESTION}]
    n = claude(server).count_tokens(messages, system=SYSTEM, tools=[POLICY_TOOL])
    assert isinstance(n, int) and n > 0
    (request,) = server.requests
    assert request.path == "/v1/messages/count_tokens"
    assert request.body["system"] == SYSTEM
    assert request.body["tools"] == [POLICY_TOOL]
    assert request.body["messages"] == messages
    assert server.remaining == 0  # counting does not consume the script


def test_anthropic_accepts_an_injected_client(server: FakeLLMServer) -> None:
    server.add("injected")
    client = anthropic.Anthropic(api_key="test-key", base_url=server.url, max_retries=0)
    model = AnthropicModel(model="claude-haiku-4-5", client=client)
    assert model.chat([{"role": "user", "content": "hi"}]).text == "injected"
    assert server.requests[0].body["model"] == "claude-haiku-4-5"


# -- OpenAI-compatible -------------------------------------------------------------------


def test_openai_text_reply(server: FakeLLMServer) -> None:
    server.add("Hello from a local model.")
    reply = local(server).chat([{"role": "user", "content": "hi"}])
    assert reply.text == "Hello from a local model."
    assert reply.stop_reason == "end_turn"
    assert reply.model == "llama3.2"
    assert reply.usage.input_tokens > 0
    assert server.requests[0].path == "/v1/chat/completions"


def test_openai_tool_use_round_trip_and_wire_shape(server: FakeLLMServer) -> None:
    server.add(asks_for("refund_window_days", "call_01"), "Refunds: 30 days.")
    first, second = tool_round_trip(local(server))

    assert first.stop_reason == "tool_use"
    assert first.tool_calls == (
        ToolCall("call_01", "lookup_policy", {"key": "refund_window_days"}),
    )
    assert second.text == "Refunds: 30 days."

    body_1, body_2 = (r.body for r in server.requests)
    assert body_1["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup_policy",
                "description": POLICY_TOOL["description"],
                "parameters": POLICY_TOOL["input_schema"],
            },
        }
    ]
    assert body_1["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
    ]
    assert body_2["messages"][2:] == [
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "call_01",
                    "type": "function",
                    "function": {
                        "name": "lookup_policy",
                        "arguments": '{"key":"refund_window_days"}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_01", "content": "30"},
    ]


def test_openai_error_status_becomes_model_error(server: FakeLLMServer) -> None:
    server.add(ErrorReply(429, "Rate limit reached for requests"))
    with pytest.raises(ModelError) as caught:
        local(server).chat([{"role": "user", "content": "hi"}])
    assert str(caught.value) == "OpenAI-compatible API error 429: Rate limit reached for requests"


def test_openai_invalid_tool_arguments_are_model_error(server: FakeLLMServer) -> None:
    raw = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "llama3.2",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "lookup_policy", "arguments": "{key: refund"},
                        }
                    ],
                },
            }
        ],
    }
    server.add(raw)
    with pytest.raises(ModelError, match="invalid JSON arguments for tool 'lookup_policy'"):
        local(server).chat([{"role": "user", "content": "hi"}], tools=[POLICY_TOOL])


def test_openai_tool_calls_win_over_finish_reason_stop(server: FakeLLMServer) -> None:
    # Some local servers report finish_reason "stop" even when the model called a tool.
    def stop_with_tool(request: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "chatcmpl-2",
            "object": "chat.completion",
            "created": 0,
            "model": request["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {
                                "id": "call_9",
                                "type": "function",
                                "function": {
                                    "name": "lookup_policy",
                                    "arguments": '{"key":"support_hours"}',
                                },
                            }
                        ],
                    },
                }
            ],
        }

    server.add(stop_with_tool)
    reply = local(server).chat([{"role": "user", "content": "hours?"}], tools=[POLICY_TOOL])
    assert reply.stop_reason == "tool_use"
    assert reply.tool_calls[0].input == {"key": "support_hours"}
    assert reply.usage.input_tokens == 0  # no usage block sent


def test_openai_accepts_an_injected_client(server: FakeLLMServer) -> None:
    server.add("injected")
    client = openai.OpenAI(api_key="k", base_url=server.openai_url, max_retries=0)
    assert OpenAICompatModel(model="qwen", client=client).chat(
        [{"role": "user", "content": "x"}]
    ).text == ("injected")


# -- the fake server itself --------------------------------------------------------------


def test_fake_server_exhausted_script_answers_an_error(server: FakeLLMServer) -> None:
    with pytest.raises(ModelError, match="script exhausted"):
        AnthropicModel(api_key="k", base_url=server.url).chat([{"role": "user", "content": "hi"}])
    assert len(server.requests) == 1  # x-should-retry: false stops the SDK's retries


def test_fake_server_rejects_requests_missing_required_fields(server: FakeLLMServer) -> None:
    request = urllib.request.Request(
        server.url + "/v1/messages",
        data=json.dumps({"model": "m", "messages": []}).encode(),
        headers={"content-type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 400
    assert json.loads(caught.value.read()) == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"},
        "request_id": None,
    }


# -- package surface ---------------------------------------------------------------------


def test_importing_models_and_testing_loads_no_sdk() -> None:
    code = (
        "import sys, fourfold.models, fourfold.testing;"
        "m = fourfold.models.AnthropicModel(); o = fourfold.models.OpenAICompatModel(model='x');"
        "fourfold.testing.FakeLLMServer;"
        "print(sorted(n for n in ('anthropic', 'openai', 'httpx2') if n in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_models_exports_exactly_the_public_names() -> None:
    assert set(fourfold.models.__all__) == {
        "MODEL_ENV",
        "ModelSpec",
        "from_spec",
        "parse_spec",
        "AnthropicModel",
        "ChatModel",
        "ChatRequest",
        "ChatResponse",
        "Message",
        "OfflineModel",
        "OpenAICompatModel",
        "ScriptedModel",
        "ToolCall",
        "Usage",
        "default_model",
    }
    for name in fourfold.models.__all__:
        assert getattr(fourfold.models, name) is not None


def test_default_model_follows_anthropic_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    offline = default_model()
    assert isinstance(offline, OfflineModel) and not offline.is_llm
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    claude_model = default_model()
    assert isinstance(claude_model, AnthropicModel) and claude_model.is_llm


# -- model specs --------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "parsed"), [
    ("offline", ("offline", "", None)),
    ("anthropic", ("anthropic", "claude-sonnet-4-6", None)),
    ("anthropic:claude-haiku-4-5", ("anthropic", "claude-haiku-4-5", None)),
    ("openai:gpt-4.1-mini", ("openai", "gpt-4.1-mini", None)),
    ("openai-compatible:qwen3@http://gpu:8000/v1", ("openai-compatible", "qwen3", "http://gpu:8000/v1")),
    ("ollama:llama3.1:8b", ("openai-compatible", "llama3.1:8b", "http://localhost:11434/v1")),
    ("lmstudio:phi-4", ("openai-compatible", "phi-4", "http://localhost:1234/v1")),
    ("vllm:org/model@https://h.example/v1", ("openai-compatible", "org/model", "https://h.example/v1")),
])
def test_model_specs_parse(spec: str, parsed: tuple[str, str, str | None]) -> None:
    got = fourfold.models.parse_spec(spec)
    assert (got.provider, got.model, got.base_url) == parsed
    assert fourfold.models.parse_spec(str(got)) == got  # a spec prints back as itself


@pytest.mark.parametrize(("spec", "message"), [
    ("", "an empty model spec"),
    ("gpt5", "unknown model provider 'gpt5'"),
    ("offline:x", "'offline' takes no model or URL"),
    ("openai-compatible:qwen3", "needs a base URL"),
    ("openai-compatible", "names no model"),
])
def test_bad_model_specs_say_what_is_accepted(spec: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(InvalidInput, match=message) as info:
        fourfold.models.parse_spec(spec)
    assert "openai-compatible:MODEL@BASE_URL" in str(info.value)


def test_default_model_follows_fourfold_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOURFOLD_MODEL", "ollama:llama3.1")
    model = fourfold.models.default_model()
    assert isinstance(model, OpenAICompatModel) and model.model == "llama3.1"
    monkeypatch.delenv("FOURFOLD_MODEL")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert isinstance(fourfold.models.default_model(), OfflineModel)
    assert isinstance(fourfold.models.default_model("anthropic:claude-x"), AnthropicModel)


def test_a_model_may_implement_chat_or_complete() -> None:
    from fourfold.models.base import ChatModel, ChatRequest, ChatResponse

    class ByChat(ChatModel):
        def chat(self, messages, *, system="", tools=(), max_tokens=1024):  # type: ignore[no-untyped-def]
            return ChatResponse(text=f"chat:{system}:{max_tokens}")

    class ByComplete(ChatModel):
        def complete(self, request: ChatRequest) -> ChatResponse:
            return ChatResponse(text=f"complete:{request.system}:{request.max_tokens}")

    class Neither(ChatModel):
        pass

    request = ChatRequest([{"role": "user", "content": "hi"}], system="s", max_tokens=7)
    assert ByChat().complete(request).text == "chat:s:7"
    assert ByChat().chat(request.messages, system="s", max_tokens=7).text == "chat:s:7"
    assert ByComplete().chat(request.messages, system="s", max_tokens=7).text == "complete:s:7"
    with pytest.raises(NotImplementedError, match="Neither implements neither"):
        Neither().chat(request.messages)
