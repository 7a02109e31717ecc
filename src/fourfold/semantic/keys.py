"""Fact keys, the answer for an unknown one and the size limits: shared by the fact store and its model tool."""

from __future__ import annotations

import re
from typing import TypeGuard

from fourfold.errors import InvalidInput

__all__ = ["MAX_KEY_CHARS", "MAX_VALUE_BYTES", "UNKNOWN", "check_size", "check_tool_description", "is_key",
           "validate_key"]

#: What a model is told for a key with no recorded value.
UNKNOWN = "UNKNOWN — escalate to a human"
MAX_KEY_CHARS = 128
#: Limit on a value's JSON (UTF-8 bytes), and on a description.
MAX_VALUE_BYTES = 64 * 1024

_KEY = re.compile(rf"[A-Za-z0-9_.:-]{{1,{MAX_KEY_CHARS}}}")


def is_key(key: object) -> TypeGuard[str]:
    """Whether `key` is a well-formed fact key (a model's call may name anything)."""
    return isinstance(key, str) and _KEY.fullmatch(key) is not None


def validate_key(key: object) -> str:
    """A key: 1-128 chars of letters, digits, '_', '.', ':', '-' (so it fits a schema enum)."""
    if not is_key(key):
        raise InvalidInput(
            f"fact keys are 1-{MAX_KEY_CHARS} characters of letters, digits, '_', '.', ':' "
            f"or '-'; got {key!r:.80}"
        )
    return key


def check_tool_description(description: object) -> str:
    """A tool description: non-empty text within the size limit (a model reads all of it)."""
    if not isinstance(description, str) or not description.strip():
        raise InvalidInput("a tool needs a non-empty description")
    check_size(description, "tool description")
    return description


def check_size(text: str, what: str) -> None:
    """InvalidInput unless `text` is valid Unicode of at most MAX_VALUE_BYTES in UTF-8."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} is not valid Unicode (lone surrogate at {exc.start})") from None
    if size > MAX_VALUE_BYTES:
        raise InvalidInput(f"{what} is {size:,} bytes; the limit is {MAX_VALUE_BYTES:,}")
