"""What the SDK-backed chat models share: their options, and a client made on first use (`SDKClient`)."""

from __future__ import annotations

from typing import Any

from fourfold._extras import SDKClient
from fourfold.errors import InvalidInput
from fourfold.models.base import ChatModel

__all__ = ["SDKChatModel"]


class SDKChatModel(SDKClient, ChatModel):
    """A chat model over an official SDK; constructing it opens no connection."""

    #: The model used when none is given; empty means the caller must name one.
    default_model: str = ""

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        max_retries: int = 2,
        timeout: float = 60,
    ) -> None:
        chosen = model or self.default_model
        if not chosen:
            raise InvalidInput(f"{type(self).__name__} needs a model name")
        self.model = self.name = chosen
        self._keep_client(client, api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout)
