"""Chat models: the interface, an offline stand-in, a scripted test double, and SDK clients.

`AnthropicModel` and `OpenAICompatModel` load their SDKs only when a client is first needed,
so `import fourfold.models` stays fast and offline.
"""

from __future__ import annotations

from fourfold.models.anthropic import AnthropicModel
from fourfold.models.base import ChatModel, ChatRequest, ChatResponse, Message, ToolCall, Usage
from fourfold.models.offline import OfflineModel
from fourfold.models.openai_compat import OpenAICompatModel
from fourfold.models.scripted import ScriptedModel
from fourfold.models.spec import MODEL_ENV, ModelSpec, default_model, from_spec, parse_spec

__all__ = [
    "MODEL_ENV",
    "AnthropicModel",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "Message",
    "ModelSpec",
    "OfflineModel",
    "OpenAICompatModel",
    "ScriptedModel",
    "ToolCall",
    "Usage",
    "default_model",
    "from_spec",
    "parse_spec",
]

