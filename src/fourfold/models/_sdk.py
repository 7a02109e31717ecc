"""What the SDK-backed chat models share: their options, and a client made on first use (`SDKClient`)."""

from __future__ import annotations

from typing import Unpack

from fourfold._extras import SDKClient, SDKOptions
from fourfold.errors import InvalidInput
from fourfold.models.base import ChatModel

__all__ = ["SDKChatModel"]


class SDKChatModel(SDKClient, ChatModel):
    """A chat model over an official SDK; constructing it opens no connection.

    Besides `model`, it takes the connection keywords of `SDKOptions`: `api_key`, `base_url`,
    `timeout`, `max_retries` and `client`.
    """

    #: The model used when none is given; empty means the caller must name one.
    default_model: str = ""

    def __init__(self, *, model: str | None = None, **options: Unpack[SDKOptions]) -> None:
        chosen = model or self.default_model
        if not chosen:
            raise InvalidInput(f"{type(self).__name__} needs a model name")
        self.model = self.name = chosen
        self._keep_client(options)
