"""Input checks shared by every store, so each refuses bad input the same way."""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from fourfold.errors import InvalidInput
from fourfold.text import detect

__all__ = ["check_identifier", "check_k", "check_kind", "check_metadata", "check_min_score", "check_scope", "check_text"]

_KIND = re.compile(r"^[a-z][a-z0-9_\-]{0,63}$")
_MAX_SCOPE = 256
MAX_K = 1000


def check_text(text: object, *, what: str = "text", max_chars: int = 20_000) -> str:
    """A non-empty string of at most max_chars, valid UTF-8 (no lone surrogates)."""
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be a string, not {type(text).__name__}")
    if not text.strip():
        raise InvalidInput(f"{what} is empty")
    if len(text) > max_chars:
        raise InvalidInput(f"{what} is {len(text):,} characters; the limit is {max_chars:,} (store documents with docs.ingest)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} is not valid Unicode (lone surrogate at {exc.start})") from None
    return text


def check_scope(scope: object) -> str | None:
    """None (the unscoped space) or a non-empty printable string."""
    if scope is None:
        return None
    if not isinstance(scope, str):
        raise InvalidInput(f"scope must be a string or None, not {type(scope).__name__}")
    if not scope.strip() or len(scope) > _MAX_SCOPE or not scope.isprintable():
        raise InvalidInput(f"scope must be 1-{_MAX_SCOPE} printable characters, got {scope[:40]!r}")
    if scope != scope.strip():  # "shared:cases " would read as the shared scope wherever it is shown
        raise InvalidInput(f"scope must not start or end with spaces, got {scope[:40]!r}")
    return check_identifier(scope, what="scope")


def check_identifier(value: str, *, what: str) -> str:
    """Refuse an identifier (scope, customer id, fact or metadata key, tag) that holds a secret.

    Text is redacted, but an identifier is refused: rewriting it would silently merge two
    customers' scopes or two keys into one "[REDACTED:...]", and it names files, rows and
    log lines where the secret would otherwise travel. The message never repeats the value.
    """
    kinds = _secret_kinds(value)
    if kinds:
        raise InvalidInput(f"{what} looks like it holds a secret ({', '.join(kinds)}); choose another {what}")
    return value


def json_object(text: str, *, what: str, error: Callable[[str], Exception] = InvalidInput) -> dict[str, Any]:
    """The JSON object `text` holds; else `error` saying that `what` is not JSON, or not an object."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise error(f"{what} is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise error(f"{what} is not a JSON object but {type(value).__name__}")
    return value


def check_name(name: object, pattern: re.Pattern[str], rule: str) -> str:
    """`name` if the whole of it matches `pattern`; else InvalidInput saying `rule` and what was given."""
    if not isinstance(name, str) or not pattern.fullmatch(name):
        raise InvalidInput(f"{rule}, got {name!r:.60}")
    return name


@lru_cache(maxsize=4096)  # the same few scopes and keys come back on every call
def _secret_kinds(value: str) -> tuple[str, ...]:
    return tuple(sorted({r.kind for r in detect(value)}))


def check_kind(kind: object) -> str:
    if not isinstance(kind, str) or not _KIND.match(kind):
        raise InvalidInput(f"kind must be a lowercase identifier like 'preference', got {_show(kind)}")
    return kind


def _show(value: object) -> str:
    """A short repr for an error message: bounded in length and depth, whatever the value."""
    return reprlib.repr(value)


def check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidInput(f"k must be an integer, not {type(k).__name__}")
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be between 1 and {MAX_K}, got {k}")
    return k


def check_min_score(min_score: object) -> float | None:
    """None, or a relevance between 0 and 1 (scores are relevances in [0, 1])."""
    if min_score is None:
        return None
    if isinstance(min_score, bool) or not isinstance(min_score, int | float) or not 0.0 <= min_score <= 1.0:
        raise InvalidInput(f"min_score must be a relevance between 0 and 1 or None, got {_show(min_score)}")
    return float(min_score)


def check_metadata(metadata: object) -> dict[str, Any]:
    """Any JSON-compatible mapping with string keys (nested values and None included)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"metadata must be a mapping, not {type(metadata).__name__}")
    if not metadata:
        return {}
    for key in metadata:
        if not isinstance(key, str) or not key or not key.isprintable():
            raise InvalidInput(f"metadata keys must be non-empty printable strings, got {_show(key)}")
        check_identifier(key, what="metadata key")
    try:
        encoded = json.dumps(metadata, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"metadata must be JSON-compatible: {exc}") from None
    except RecursionError:  # json gives up past ~1000 levels; that is bad input, not a crash
        raise InvalidInput("metadata is nested too deeply") from None
    if len(encoded) > 64_000:
        raise InvalidInput("metadata is larger than 64 KB")
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("metadata holds invalid Unicode (a lone surrogate)") from None
    result: dict[str, Any] = json.loads(encoded)
    for key in _nested_keys(result):
        check_identifier(key, what="metadata key")
    return result


def _nested_keys(value: Any) -> list[str]:
    """The keys of every object inside `value` below its top level (read without recursion)."""
    keys: list[str] = []
    stack = list(value.values()) if isinstance(value, dict) else [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            keys.extend(k for k in item if isinstance(k, str))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return keys
