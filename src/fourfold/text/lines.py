"""Text as one line: for labels, summaries and error messages that must not spill."""

from __future__ import annotations

__all__ = ["one_line"]


def one_line(text: str, limit: int = 300) -> str:
    """Whitespace collapsed, cut to `limit` characters with an ellipsis when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
