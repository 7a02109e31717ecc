"""Chat models: the interface, an offline stand-in, a scripted test double, and SDK clients.

`AnthropicModel` and `OpenAICompatModel` load on first access, and their SDKs only when a
client is first needed, so `import fourfold.models` stays fast and offline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fourfold.models.base import ChatModel, ChatRequest, ChatResponse, Message, ToolCall, Usage
from fourfold.models.offline import OfflineModel
from fourfold.models.scripted import ScriptedModel
from fourfold.models.spec import MODEL_ENV, ModelSpec, default_model, from_spec, parse_spec

if TYPE_CHECKING:
    from fourfold.models.anthropic import AnthropicModel
    from fourfold.models.openai_compat import OpenAICompatModel

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


def __getattr__(name: str) -> object:
    if name == "AnthropicModel":
        from fourfold.models.anthropic import AnthropicModel

        return AnthropicModel
    if name == "OpenAICompatModel":
        from fourfold.models.openai_compat import OpenAICompatModel

        return OpenAICompatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
