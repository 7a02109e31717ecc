"""The support agent: assembles context from all four memories and writes back on resolve."""

from fourfold.agent.prompt import DATA_CLOSE, DATA_OPEN, PromptParts, assemble_system
from fourfold.agent.support import (
    OpenTicket,
    Reply,
    Resolution,
    SupportAgent,
    ToolUse,
    TurnReport,
    customer_scope,
)

__all__ = [
    "DATA_CLOSE",
    "DATA_OPEN",
    "OpenTicket",
    "PromptParts",
    "Reply",
    "Resolution",
    "SupportAgent",
    "ToolUse",
    "TurnReport",
    "assemble_system",
    "customer_scope",
]
