"""Chat models: the interface, an offline stand-in, a scripted test double, and SDK clients.

`AnthropicModel` and `OpenAICompatModel` load on first access, and their SDKs only when a
client is first needed, so `import fourfold.models` stays fast and offline.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from fourfold.models.base import ChatModel, ChatResponse, Message, ToolCall, Usage
from fourfold.models.offline import OfflineModel
from fourfold.models.scripted import ScriptedModel

if TYPE_CHECKING:
    from fourfold.models.anthropic import AnthropicModel
    from fourfold.models.openai_compat import OpenAICompatModel

__all__ = [
    "AnthropicModel",
    "ChatModel",
    "ChatResponse",
    "Message",
    "OfflineModel",
    "OpenAICompatModel",
    "ScriptedModel",
    "ToolCall",
    "Usage",
    "default_model",
]


def default_model() -> ChatModel:
    """Claude when ANTHROPIC_API_KEY is set, else the offline model (which says it is not an LLM)."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        from fourfold.models.anthropic import AnthropicModel

        return AnthropicModel()
    return OfflineModel()


def __getattr__(name: str) -> object:
    if name == "AnthropicModel":
        from fourfold.models.anthropic import AnthropicModel

        return AnthropicModel
    if name == "OpenAICompatModel":
        from fourfold.models.openai_compat import OpenAICompatModel

        return OpenAICompatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
