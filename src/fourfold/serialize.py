"""One JSON form for the value types, read from their fields.

The service writes it (`to_json`), the clients read it back (`from_json`): a field added to
`Recalled`, `Remembered`, `Episode`, `Fact` or `DocHit` travels without another edit. A value
type's fields are its constructor's parameters, each kept as the attribute of that name: the
dataclasses' fields, and those of `Remembered` (a `str`, the id, so not a dataclass).
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass
from typing import Any, TypeVar

from fourfold.types import DocHit, Episode, Fact, Recalled, Redaction, Remembered

__all__ = ["from_json", "plain", "to_json"]

T = TypeVar("T")

# Field -> JSON name where the REST shape predates the field's name.
_WIRE_NAMES: dict[type, dict[str, str]] = {Remembered: {"redactions": "redacted"}}

VALUE_TYPES: tuple[type, ...] = (Recalled, Remembered, Episode, Fact, DocHit, Redaction)


#: Values `to_json` returns as they are, checked by exact type first (a recall's results carry
#: dozens of metadata values each; the general checks below cost a microsecond apiece).
_SCALARS = frozenset({str, int, float, bool, type(None)})


def to_json(value: Any) -> Any:
    """A value type (or a list, tuple or mapping of them) as JSON-ready dicts and lists."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, Remembered) or (is_dataclass(value) and not isinstance(value, type)):
        names = _WIRE_NAMES.get(type(value), {})
        return {names.get(name, name): to_json(getattr(value, name)) for name in _field_names(type(value))}
    return plain(value, item=to_json)


def plain(value: Any, *, item: Callable[[Any], Any] | None = None) -> Any:
    """Data as `json` writes it, in plain dicts and lists: any mapping a dict, a tuple a list,
    anything else as it is (a `Remembered` the id string it is), for SDKs and `json.dumps`.

    What callers pass (metadata, filters, chat messages) is such data; `to_json` converts the
    items too (`item`), as the library's own values."""
    convert = item or plain
    if isinstance(value, Mapping):
        return {k if type(k) is str else _json_key(k): convert(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [convert(v) for v in value]
    return value


def _json_key(key: Any) -> Any:
    """A dict key as `json` writes it: a number, bool or None as its JSON text ("2", "true",
    "null"), a str subclass as its str; any other key stays, for `json` to refuse."""
    if isinstance(key, str):
        return str(key)
    if key is None or isinstance(key, int | float):
        return json.dumps(key)
    return key


def from_json(cls: type[T], data: Mapping[str, Any]) -> T:
    """The value of type `cls` that `to_json` wrote; a field the JSON omits takes its default."""
    names = _WIRE_NAMES.get(cls, {})
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for name, param in _parameters(cls).items():
        raw = data.get(names.get(name, name))
        if raw is None and not _optional(hints[name]) and param.default is not param.empty:
            continue  # absent (a service of an earlier version): the default
        kwargs[name] = _read(hints[name], raw)
    return cls(**kwargs)


def _field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's fields; those of `Remembered` (a `str`, not a dataclass) are its constructor's parameters."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls)) if is_dataclass(cls) else tuple(_parameters(cls))
    return names


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_PARAMETERS: dict[type, Mapping[str, inspect.Parameter]] = {}
_HINTS: dict[type, dict[str, Any]] = {}


def _parameters(cls: type) -> Mapping[str, inspect.Parameter]:
    """What the value type's constructor takes: one parameter per field."""
    if cls not in _PARAMETERS:
        _PARAMETERS[cls] = inspect.signature(cls).parameters
    return _PARAMETERS[cls]


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _optional(hint: Any) -> bool:
    return hint is Any or (_is_union(hint) and type(None) in typing.get_args(hint))


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _read(hint: Any, raw: Any) -> Any:
    """`raw` (decoded JSON) as the field type `hint` says: tuples, nested value types, floats."""
    if raw is None or hint is Any:
        return raw
    if _is_union(hint):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _read(inner[0], raw) if len(inner) == 1 else raw
    origin = typing.get_origin(hint)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_read(item, x) for x in raw)
    if origin is Mapping or hint is dict or origin is dict:
        return dict(raw)
    if is_dataclass(hint) and isinstance(hint, type):
        return from_json(hint, raw)
    if hint is float:
        return float(raw)
    if hint is bool:
        return bool(raw)
    return raw
