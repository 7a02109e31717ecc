"""A local HTTP server that answers like the Anthropic and OpenAI APIs, for the real SDKs.

Point `anthropic.Anthropic(base_url=server.url)` or `openai.OpenAI(base_url=server.openai_url)`
at it. It answers from a script, in the JSON shapes the real APIs send, and records every
request so tests can assert on the wire format the SDK produced:

    with FakeLLMServer(["Hello!"]) as server:
        AnthropicModel(api_key="test", base_url=server.url).chat([...])
        assert server.requests[0].body["system"] == "..."

Endpoints: POST /v1/messages, POST /v1/messages/count_tokens (a character estimate, does
not use the script), POST /v1/chat/completions and POST /v1/embeddings (hash vectors). Script entries are shared by both APIs.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self
from urllib.parse import urlsplit

from fourfold._lifecycle import Started
from fourfold.models.base import ChatResponse
from fourfold.models.content import estimate_tokens, json_dumps

__all__ = ["ErrorReply", "FakeLLMServer", "RecordedRequest", "Reply", "ReplyFunction"]


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """Answer with an error status and the API's error JSON (`error_type` defaults by status).

    `retry` sets the SDKs' `x-should-retry` header; None leaves the choice to the SDK
    (which retries 408, 409, 429 and 5xx unless `max_retries=0`).
    """

    status: int
    message: str = "fake error"
    error_type: str | None = None
    retry: bool | None = None


#: A scripted answer: text, a ChatResponse (text + tool calls + stop reason + usage),
#: an ErrorReply, or a raw JSON object sent verbatim with status 200.
Reply = str | ChatResponse | ErrorReply | Mapping[str, Any]
#: Computes the answer from the parsed request JSON.
ReplyFunction = Callable[[dict[str, Any]], Reply]

Flavor = Literal["anthropic", "openai"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server received it (header names lower-cased)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any


@dataclass(slots=True)
class _State:
    script: list[Reply | ReplyFunction] = field(default_factory=list)
    function: ReplyFunction | None = None
    served: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class FakeLLMServer(Started):
    """Serves scripted replies on 127.0.0.1 from a background thread; a context manager."""

    def __init__(
        self,
        script: Sequence[Reply | ReplyFunction] | ReplyFunction = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._state = _State()
        if callable(script):
            self._state.function = script
        else:
            self._state.script = list(script)
        self._address = (host, port)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> Self:
        if self._httpd is None:
            self._httpd = _HTTPServer(self._address, _Handler, self._state)
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},  # so stop() returns quickly
                name="fake-llm-server",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._httpd = None
            self._thread = None

    # -- what tests use ----------------------------------------------------------------

    @property
    def url(self) -> str:
        """Base URL for the anthropic SDK ("http://127.0.0.1:<port>")."""
        if self._httpd is None:
            raise RuntimeError("FakeLLMServer is not running; use it as a context manager")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_url(self) -> str:
        """Base URL for the openai SDK, which expects the /v1 prefix in it."""
        return self.url + "/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._state.lock:
            return list(self._state.requests)

    def add(self, *replies: Reply | ReplyFunction) -> None:
        """Append replies to the script."""
        with self._state.lock:
            self._state.script.extend(replies)

    @property
    def remaining(self) -> int:
        with self._state.lock:
            return len(self._state.script)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], state: _State
    ) -> None:
        self.state = state
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    timeout = 10  # idle keep-alive connections close instead of holding a thread
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `server.requests`, not stderr."""

    def do_GET(self) -> None:
        self._record(None)
        self._send_error(_flavor(self.path), ErrorReply(404, f"no route for GET {self.path}"))

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        flavor = _flavor(path)
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            self._record(raw.decode("utf-8", "replace"))
            self._send_error(flavor, ErrorReply(400, "request body is not valid JSON"))
            return
        self._record(body)
        if not isinstance(body, dict):
            self._send_error(flavor, ErrorReply(400, "request body must be a JSON object"))
            return
        if path == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": estimate_tokens(_prompt_text(body))}, flavor)
        elif path == "/v1/embeddings":
            self._send_json(200, _embeddings_body(body), "openai")
        elif path in ("/v1/messages", "/v1/chat/completions"):
            missing = [k for k in _REQUIRED[flavor] if k not in body]
            if missing:
                self._send_error(flavor, ErrorReply(400, f"{missing[0]}: Field required"))
            else:
                self._answer(flavor, body)
        else:
            self._send_error(flavor, ErrorReply(404, f"no route for POST {path}"))

    def _answer(self, flavor: Flavor, body: dict[str, Any]) -> None:
        reply = self._next_reply(body)
        if isinstance(reply, ErrorReply):
            self._send_error(flavor, reply)
        elif isinstance(reply, Mapping):
            self._send_json(200, dict(reply), flavor)
        else:
            response = ChatResponse(text=reply) if isinstance(reply, str) else reply
            with self.server.state.lock:
                n = self.server.state.served
            render = _anthropic_body if flavor == "anthropic" else _openai_body
            self._send_json(200, render(response, body, n), flavor)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        state = self.server.state
        with state.lock:
            if state.function is not None:
                entry: Reply | ReplyFunction = state.function
            elif state.script:
                entry = state.script.pop(0)
            else:
                return ErrorReply(
                    500,
                    f"fake LLM server: script exhausted after {state.served} replies",
                    retry=False,
                )
            state.served += 1
        return entry(body) if callable(entry) else entry

    def _record(self, body: Any) -> None:
        parts = urlsplit(self.path)
        request = RecordedRequest(
            method=self.command,
            path=parts.path,
            query=parts.query,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        with self.server.state.lock:
            self.server.state.requests.append(request)

    def _send_error(self, flavor: Flavor, error: ErrorReply) -> None:
        extra = (
            {} if error.retry is None else {"x-should-retry": "true" if error.retry else "false"}
        )
        self._send_json(error.status, _error_body(flavor, error), flavor, extra)

    def _send_json(
        self, status: int, payload: Any, flavor: Flavor, extra: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        request_id = f"req_fake_{len(self.server.state.requests):04d}"
        self.send_header("request-id" if flavor == "anthropic" else "x-request-id", request_id)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


_REQUIRED: dict[Flavor, tuple[str, ...]] = {
    "anthropic": ("model", "max_tokens", "messages"),
    "openai": ("model", "messages"),
}

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_OPENAI_ERRORS = {  # status -> (type, code)
    401: ("invalid_request_error", "invalid_api_key"),
    429: ("requests", "rate_limit_exceeded"),
}


def _flavor(path: str) -> Flavor:
    return "openai" if "/chat/completions" in path or "/embeddings" in path else "anthropic"


def _embeddings_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """OpenAI embeddings: deterministic hash vectors (`dimensions` in the request, default 8)."""
    from fourfold.embeddings.hashing import HashEmbedder

    texts = body.get("input", [])
    texts = [texts] if isinstance(texts, str) else [str(t) for t in texts]
    vectors: list[Any] = list(HashEmbedder(int(body.get("dimensions") or 8)).embed_batch(texts)) if texts else []
    return {
        "object": "list",
        "model": body.get("model", "fake-embedding"),
        "data": [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vectors)],
        "usage": {"prompt_tokens": sum(estimate_tokens(t) for t in texts), "total_tokens": 0},
    }


def _error_body(flavor: Flavor, error: ErrorReply) -> dict[str, Any]:
    if flavor == "anthropic":
        kind = error.error_type or _ANTHROPIC_ERROR_TYPES.get(
            error.status, "api_error" if error.status >= 500 else "invalid_request_error"
        )
        return {
            "type": "error",
            "error": {"type": kind, "message": error.message},
            "request_id": None,
        }
    default = ("server_error", None) if error.status >= 500 else ("invalid_request_error", None)
    kind, code = _OPENAI_ERRORS.get(error.status, default)
    return {
        "error": {
            "message": error.message,
            "type": error.error_type or kind,
            "param": None,
            "code": code,
        }
    }


def _prompt_text(body: Mapping[str, Any]) -> str:
    """What a request's input tokens are estimated from: system, messages and tools."""
    system = body.get("system", "")
    return (system if isinstance(system, str) else json_dumps(system)) + json_dumps(
        [body.get("messages", []), body.get("tools", [])]
    )


def _output_tokens(response: ChatResponse) -> int:
    calls = [[c.name, dict(c.input)] for c in response.tool_calls]
    return response.usage.output_tokens or max(
        1, estimate_tokens(response.text + json_dumps(calls))
    )


def _stop_reason(response: ChatResponse) -> str:
    # A scripted ChatResponse with tool calls but the default stop reason means "tool_use".
    if response.tool_calls and response.stop_reason == "end_turn":
        return "tool_use"
    return "end_turn" if response.stop_reason == "other" else response.stop_reason


def _anthropic_body(response: ChatResponse, request: Mapping[str, Any], n: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if response.text:
        content.append({"type": "text", "text": response.text})
    for i, call in enumerate(response.tool_calls):
        content.append(
            {
                "type": "tool_use",
                "id": call.id or f"toolu_fake_{n:04d}_{i}",
                "name": call.name,
                "input": dict(call.input),
            }
        )
    return {
        "id": f"msg_fake_{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": response.model or request.get("model", "fake-model"),
        "content": content,
        "stop_reason": _stop_reason(response),
        "stop_sequence": None,
        "usage": {
            "input_tokens": response.usage.input_tokens or estimate_tokens(_prompt_text(request)),
            "output_tokens": _output_tokens(response),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "service_tier": "standard",
        },
    }


_FINISH = {
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "end_turn": "stop",
    "stop_sequence": "stop",
}


def _openai_body(response: ChatResponse, request: Mapping[str, Any], n: int) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": response.text or None,
        "refusal": None,
        "annotations": [],
    }
    if response.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_fake_{n:04d}_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(dict(call.input))},
            }
            for i, call in enumerate(response.tool_calls)
        ]
    prompt_tokens = response.usage.input_tokens or estimate_tokens(_prompt_text(request))
    completion_tokens = _output_tokens(response)
    return {
        "id": f"chatcmpl-fake{n:04d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": response.model or request.get("model", "fake-model"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _FINISH[_stop_reason(response)],
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        "system_fingerprint": None,
    }
