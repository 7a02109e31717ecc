"""Fact keys and the answer for an unknown one: shared by the fact store and its model tool."""

from __future__ import annotations

import re
from typing import TypeGuard

from fourfold.errors import InvalidInput

__all__ = ["MAX_KEY_CHARS", "UNKNOWN", "is_key", "validate_key"]

#: What a model is told for a key with no recorded value.
UNKNOWN = "UNKNOWN — escalate to a human"
MAX_KEY_CHARS = 128

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
