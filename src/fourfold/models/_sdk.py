"""What the SDK-backed chat models share: their options, and a client made on first use."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from fourfold.errors import InvalidInput
from fourfold.models.base import ChatModel

__all__ = ["SDKChatModel"]


class SDKChatModel(ChatModel):
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
        #: The SDK client's own options, as its constructor takes them.
        self._options: dict[str, Any] = {"api_key": api_key, "base_url": base_url, "max_retries": max_retries,
                                         "timeout": timeout}
        self._client: Any = client

    @property
    def client(self) -> Any:
        """The SDK client, created on first use."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    @abstractmethod
    def _make_client(self) -> Any:
        """Build the SDK client from the stored options."""
