"""`where` filters on memories: equality, comparisons, sets, `$and` / `$or`, and date ranges.

    {"product": "web"}                                    equality; a list field matches an item it holds
    {"priority": {"$gte": 2}, "tier": {"$in": ["gold", "silver"]}}
    {"$or": [{"channel": "email"}, {"channel": {"$ne": "phone"}}]}
    {"created_at": {"$gte": "2026-11-01", "$lt": "2026-12-01T09:30:00Z"}}

Operators: `$eq`, `$ne`, `$in`, `$nin`, `$gt`, `$gte`, `$lt`, `$lte` on a field, and `$and`,
`$or` over lists of filters; several fields (or operators) in one mapping must all hold.
Fields are the memory's metadata, plus its own times, compared as dates: `created_at` (when it
was written), `valid_from` (when its version became true: its `occurred_at`, or its write time)
and `valid_to` (when the next version took over; absent while current). Dates are ISO 8601 text
(a date alone is midnight UTC, a time without offset is UTC) or unix seconds.

Semantics, the same as document databases use: a missing field fails every test but `$ne`
and `$nin`; comparisons hold between numbers, or between strings, never across types; a bool
equals only a bool. A malformed filter raises `InvalidInput` when it is compiled, before any
store is read.

This is the one implementation for every engine: `LongTermMemory` compiles the filter once and
applies the predicate to the records it reads, whether they came from SQLite, PostgreSQL or
Chroma, so backends cannot disagree on what a filter means.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from fourfold._validate import json_object
from fourfold.errors import InvalidInput
from fourfold.longterm.versions import as_timestamp, user_metadata, version_of
from fourfold.stores.vector import VectorRecord

__all__ = ["DATE_FIELDS", "OPERATORS", "Predicate", "compile_where", "fields_of", "parse_where"]

#: Fields that are a memory's own times, compared as dates (unix seconds).
DATE_FIELDS = frozenset({"created_at", "valid_from", "valid_to"})
#: The operators a field condition may use.
OPERATORS = frozenset({"$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte"})
#: Deepest nesting of `$and` / `$or`.
MAX_DEPTH = 32

Fields = Mapping[str, Any]
Predicate = Callable[[Fields], bool]
_MISSING = object()


def fields_of(record: VectorRecord) -> dict[str, Any]:
    """What a filter sees of a memory: its metadata as the user wrote it, with its own times
    (`created_at`, and its version's `valid_from` / `valid_to`) over same-named keys."""
    version = version_of(record)
    fields = user_metadata(record.metadata)
    fields["created_at"] = float(record.created_at)
    fields["valid_from"] = version.valid_from
    if version.valid_to is None:
        fields.pop("valid_to", None)  # still current: no end to compare with
    else:
        fields["valid_to"] = version.valid_to
    return fields


def compile_where(where: object) -> Predicate:
    """The predicate of a filter (None or {} keeps everything); InvalidInput if it is malformed."""
    if where is None:
        return _always
    if not isinstance(where, Mapping):
        raise InvalidInput(f"where must be a mapping of field -> condition, not {type(where).__name__}")
    return _compile(where, 0)


def parse_where(text: str | None) -> dict[str, Any] | None:
    """A filter written as JSON text (a command-line option, a query parameter); checked."""
    if text is None or not text.strip():
        return None
    where = json_object(text, what="where (a JSON object of field -> condition, e.g. '{\"product\": \"web\"}')")
    compile_where(where)
    return where


def _always(_fields: Fields) -> bool:
    return True


def _compile(where: object, depth: int) -> Predicate:
    if depth > MAX_DEPTH:
        raise InvalidInput(f"where is nested deeper than {MAX_DEPTH} levels of $and/$or")
    if not isinstance(where, Mapping):
        raise InvalidInput(f"each filter in $and/$or must be a mapping, not {type(where).__name__}")
    tests: list[Predicate] = []
    for key, condition in where.items():
        if not isinstance(key, str) or not key:
            raise InvalidInput(f"where keys are field names or $and/$or, not {key!r:.40}")
        if key in ("$and", "$or"):
            if not isinstance(condition, Sequence) or isinstance(condition, str) or not condition:
                raise InvalidInput(f"{key} takes a non-empty list of filters")
            parts = [_compile(part, depth + 1) for part in condition]
            tests.append(_all(parts) if key == "$and" else _any(parts))
        elif key.startswith("$"):
            raise InvalidInput(f"unknown where operator {key!r} at the top of a filter: use $and, $or or a field name")
        else:
            tests.append(_field(key, condition))
    return _all(tests)


def _all(tests: Sequence[Predicate]) -> Predicate:
    return lambda fields: all(test(fields) for test in tests)


def _any(tests: Sequence[Predicate]) -> Predicate:
    return lambda fields: any(test(fields) for test in tests)


def _field(name: str, condition: object) -> Predicate:
    """The test of one field: equality, or every operator of an operator mapping."""
    if isinstance(condition, Mapping) and any(isinstance(k, str) and k.startswith("$") for k in condition):
        plain = [k for k in condition if not (isinstance(k, str) and k.startswith("$"))]
        if plain:
            raise InvalidInput(f"the condition on {name!r} mixes operators with plain keys ({plain[0]!r:.40})")
        return _all([_operator(name, op, arg) for op, arg in condition.items()])
    wanted = _value(name, condition)
    return lambda fields: _equal_or_holds(fields.get(name, _MISSING), wanted)


def _operator(name: str, op: str, arg: object) -> Predicate:
    if op not in OPERATORS:
        raise InvalidInput(f"unknown where operator {op!r} on {name!r}; use one of {', '.join(sorted(OPERATORS))}")
    if op in ("$eq", "$ne"):
        wanted = _value(name, arg)
        if op == "$eq":
            return lambda fields: _equal_or_holds(fields.get(name, _MISSING), wanted)
        return lambda fields: not _equal_or_holds(fields.get(name, _MISSING), wanted)
    if op in ("$in", "$nin"):
        if not isinstance(arg, Sequence) or isinstance(arg, str):
            raise InvalidInput(f"{op} on {name!r} takes a list of values")
        options = [_value(name, item) for item in arg]
        if op == "$in":
            return lambda fields: _among(fields.get(name, _MISSING), options)
        return lambda fields: not _among(fields.get(name, _MISSING), options)
    bound = _bound(name, op, arg)
    compare: Callable[[Any, Any], bool] = {
        "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
        "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b,
    }[op]

    def test(fields: Fields) -> bool:
        have = fields.get(name, _MISSING)
        return _comparable(have, bound) and compare(have, bound)

    return test


def _value(name: str, value: object) -> Any:
    """A value to compare with; a date field's value becomes unix seconds."""
    return _seconds(name, value) if name in DATE_FIELDS else value


def _bound(name: str, op: str, arg: object) -> float | str:
    if name in DATE_FIELDS:
        return _seconds(name, arg)
    if isinstance(arg, bool) or not isinstance(arg, int | float | str):
        raise InvalidInput(f"{op} on {name!r} takes a number or a string, not {type(arg).__name__}")
    if isinstance(arg, float) and not math.isfinite(arg):
        raise InvalidInput(f"{op} on {name!r} takes a finite number")
    return arg


def _seconds(name: str, value: object) -> float:
    """A date as unix seconds: ISO 8601 text (UTC unless it says otherwise), or seconds."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            pass
        else:
            return as_timestamp(value, what=name)
    elif isinstance(value, date) and not isinstance(value, datetime):
        return as_timestamp(datetime(value.year, value.month, value.day), what=name)
    elif isinstance(value, datetime | int | float) and not isinstance(value, bool):
        return as_timestamp(value, what=name)
    raise InvalidInput(f"{name} is compared with dates: ISO 8601 text ('2026-11-01', "
                       f"'2026-11-01T09:30:00Z') or unix seconds, not {value!r:.60}")


def _same(have: Any, wanted: Any) -> bool:
    """JSON equality: a bool equals only a bool (Python's True == 1 does not hold here)."""
    if isinstance(have, bool) != isinstance(wanted, bool):
        return False
    return bool(have == wanted)


def _equal_or_holds(have: Any, wanted: Any) -> bool:
    if have is _MISSING:
        return False
    if _same(have, wanted):
        return True
    return isinstance(have, list) and not isinstance(wanted, list) and any(_same(item, wanted) for item in have)


def _among(have: Any, options: Sequence[Any]) -> bool:
    return any(_equal_or_holds(have, option) for option in options)


def _comparable(have: Any, bound: float | str) -> bool:
    if isinstance(bound, str):
        return isinstance(have, str)
    return isinstance(have, int | float) and not isinstance(have, bool)
