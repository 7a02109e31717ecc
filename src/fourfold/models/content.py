"""Chat messages' content, read the same way by every model and the fake LLM server: text blocks,
compact JSON for tool arguments, a token estimate, the words a message says."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fourfold.models.base import Message
from fourfold.text.tokenize import STOPWORDS

_WORD = re.compile(r"[a-z0-9]+")

#: Words too common to signal what a message is about: the library's stop words, and the
#: words of asking (a customer "needs to know", "please tell us").
STOP_WORDS = STOPWORDS | frozenset("please us get got need want tell know".split())


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (about 4 characters a token); no Claude tokenizer runs offline."""
    return (len(text) + 3) // 4


def json_dumps(value: Any) -> str:
    """Compact, key-sorted JSON: stable for estimates and tool-call arguments alike."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def block_text(content: Any) -> str:
    """The text of a message's content: a string, or the text blocks of a block list."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, Sequence):
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
    return "\n".join(parts)


def blocks(message: Message) -> list[Mapping[str, Any]]:
    """A message's content as a list of blocks (a string becomes one text block)."""
    content = message.get("content", "")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [b for b in content if isinstance(b, Mapping)]


def words(text: str) -> list[str]:
    """Lower-case word tokens with a light plural fold ("windows" -> "window")."""
    return [_fold(w) for w in _WORD.findall(text.lower())]


def content_words(text: str) -> set[str]:
    """The words of `text` that say something (stop words dropped)."""
    return {w for w in words(text) if w not in STOP_WORDS}


def _fold(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word
