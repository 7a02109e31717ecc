"""The ids fourfold gives the records it stores: a kind's prefix, '_', and 32 hex digits.

They travel wherever records do (metadata that names another memory, API answers, logs), so
the secret detector knows them by this shape and leaves them: an id names a record, it opens
nothing.
"""

from __future__ import annotations

__all__ = ["DOCUMENT_PREFIX", "MEMORY_PREFIX", "is_record_id", "record_id"]

MEMORY_PREFIX = "mem"
DOCUMENT_PREFIX = "doc"
_PREFIXES = frozenset({MEMORY_PREFIX, DOCUMENT_PREFIX})
_HEX = frozenset("0123456789abcdef")


def record_id(prefix: str, digest: str) -> str:
    """The id of a record of kind `prefix` from 32 lowercase hex digits."""
    return f"{prefix}_{digest}"


def is_record_id(text: str) -> bool:
    """Whether `text` is shaped like an id fourfold gives a record."""
    prefix, sep, body = text.partition("_")
    return bool(sep) and prefix in _PREFIXES and len(body) == 32 and set(body) <= _HEX
