"""Text as one line (for labels, summaries and error messages that must not spill), and where
its sentences break."""

from __future__ import annotations

import re

__all__ = ["SENTENCE_BREAK", "one_line"]

#: The white space after a sentence's `.`, `!` or `?`: `SENTENCE_BREAK.split(text)` gives its sentences.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")


def one_line(text: str, limit: int = 300) -> str:
    """Whitespace collapsed, cut to `limit` characters with an ellipsis when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
