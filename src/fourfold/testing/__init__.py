"""Deterministic fakes that ship with fourfold, for its tests and for yours.

Exports load on first access so that importing this package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fourfold.models.scripted import ScriptedModel
    from fourfold.testing.fake_llm_server import ErrorReply, FakeLLMServer, RecordedRequest

__all__ = ["ErrorReply", "FakeLLMServer", "RecordedRequest", "ScriptedModel"]

_FAKE_SERVER_NAMES = {"ErrorReply", "FakeLLMServer", "RecordedRequest"}


def __getattr__(name: str) -> object:
    if name in _FAKE_SERVER_NAMES:
        from fourfold.testing import fake_llm_server

        return getattr(fake_llm_server, name)
    if name == "ScriptedModel":
        from fourfold.models.scripted import ScriptedModel

        return ScriptedModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
