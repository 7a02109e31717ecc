"""Episodes to and from JSON Lines: validation and redaction on the way in, checks on the way out."""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from fourfold._validate import check_identifier, check_scope, check_text
from fourfold.errors import InvalidInput
from fourfold.text import redact
from fourfold.types import Episode

__all__ = ["build_episode", "decode_line", "encode_line"]

FORMAT_VERSION = 1
MAX_ACTIONS = 1000
MAX_TAG_CHARS = 100
_FIELDS = frozenset({"goal", "actions", "outcome", "success", "scope", "tags", "problem", "fix"})
_HEX_ID = re.compile(r"[0-9a-f]{32}")


def _strings(value: object, *, what: str, limit: int, max_chars: int) -> tuple[str, ...]:
    """A sequence (not a bare string) of non-empty, valid-Unicode strings."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidInput(f"{what} must be a list of strings, not {type(value).__name__}")
    if len(value) > limit:
        raise InvalidInput(f"{what} has {len(value)} items; the limit is {limit}")
    return tuple(
        check_text(item, what=f"{what}[{i}]", max_chars=max_chars) for i, item in enumerate(value)
    )


def build_episode(item: Mapping[str, Any], *, ts: float) -> Episode:
    """Validate one record's fields and redact its text; a new id is assigned here."""
    if not isinstance(item, Mapping):
        raise InvalidInput(f"an episode must be a mapping, not {type(item).__name__}")
    unknown = set(item) - _FIELDS
    if unknown:
        raise InvalidInput(f"unknown episode fields: {', '.join(sorted(map(str, unknown)))}")
    missing = {"goal", "actions", "outcome", "success"} - set(item)
    if missing:
        raise InvalidInput(f"missing episode fields: {', '.join(sorted(missing))}")
    success = item["success"]
    if not isinstance(success, bool):
        raise InvalidInput(f"success must be True or False, not {type(success).__name__}")
    actions = _strings(item["actions"], what="actions", limit=MAX_ACTIONS, max_chars=20_000)
    return Episode(
        goal=redact(check_text(item["goal"], what="goal"))[0],
        actions=tuple(redact(action)[0] for action in actions),
        outcome=redact(check_text(item["outcome"], what="outcome"))[0],
        success=success,
        ts=ts,
        id=uuid.uuid4().hex,
        scope=check_scope(item.get("scope")),
        tags=tuple(
            check_identifier(tag, what="tag")
            for tag in _strings(item.get("tags", ()), what="tags", limit=MAX_ACTIONS, max_chars=MAX_TAG_CHARS)
        ),
        problem=_optional_text(item, "problem"),
        fix=_optional_text(item, "fix"),
    )


def _optional_text(item: Mapping[str, Any], name: str) -> str:
    """An optional text field, redacted; "" when absent (or None)."""
    value = item.get(name)
    return "" if value is None or value == "" else redact(check_text(value, what=name))[0]


def encode_line(ep: Episode) -> bytes:
    """One JSON object and its newline; JSON escaping keeps user newlines and NULs inside it."""
    record = {
        "v": FORMAT_VERSION,
        "id": ep.id,
        "ts": ep.ts,
        "scope": ep.scope,
        "success": ep.success,
        "goal": ep.goal,
        "actions": list(ep.actions),
        "outcome": ep.outcome,
        "tags": list(ep.tags),
    }
    record.update({name: value for name, value in (("problem", ep.problem), ("fix", ep.fix)) if value})
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _field(record: Mapping[str, Any], name: str, kinds: type | tuple[type, ...]) -> Any:
    value = record.get(name)
    wrong_bool = isinstance(value, bool) and kinds is not bool  # JSON true is not a number
    if not isinstance(value, kinds) or wrong_bool:
        raise ValueError(f"field {name!r} is missing or has the wrong type")
    return value


def _string_list(record: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = record.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"field {name!r} is not a list of strings")
    return tuple(value)


def decode_line(line: bytes) -> Episode:
    """Parse one stored line; ValueError (with the reason) if it is torn or malformed."""
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    episode_id = _field(record, "id", str)
    if not _HEX_ID.fullmatch(episode_id):
        raise ValueError("id is not 32 lowercase hex digits")
    ts = float(_field(record, "ts", (int, float)))
    scope = record.get("scope")
    if not (scope is None or (isinstance(scope, str) and scope)):
        raise ValueError("scope is not a non-empty string or null")
    if not math.isfinite(ts):
        raise ValueError("ts is not a finite number")
    goal, outcome = _field(record, "goal", str), _field(record, "outcome", str)
    if not goal or not outcome:
        raise ValueError("goal or outcome is empty")
    return Episode(
        goal=goal,
        actions=_string_list(record, "actions"),
        outcome=outcome,
        success=_field(record, "success", bool),
        ts=ts,
        id=episode_id,
        scope=scope,
        tags=_string_list(record, "tags"),
        problem=_optional_string(record, "problem"),
        fix=_optional_string(record, "fix"),
    )


def _optional_string(record: Mapping[str, Any], name: str) -> str:
    value = record.get(name, "")
    if not isinstance(value, str):
        raise ValueError(f"field {name!r} is not a string")
    return value
