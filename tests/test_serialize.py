"""One serialization path: every field of every value type crosses the service and comes back.

The values are built from the dataclass fields (no field named by hand), so a field added to
`Recalled` & co. that the service or the client does not carry fails here.
"""

from __future__ import annotations

import copy
import inspect
import json
import pickle
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, FrozenInstanceError, fields, is_dataclass
from pathlib import Path
from typing import Any

import pydantic_core
import pytest

from fourfold.serialize import VALUE_TYPES, from_json, plain, to_json
from fourfold.service import schemas
from fourfold.types import DocHit, Episode, Fact, Recalled, Redaction, Remembered
from test_remote import Served

SERVICE_OUT = {Recalled: schemas.memory_out, Remembered: schemas.remembered_out, Episode: schemas.episode_out,
               Fact: schemas.fact_out, DocHit: schemas.doc_hit_out}


def _sample(hint: Any, n: int) -> Any:
    """A value of type `hint`, unlike any default, different for each `n`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return _sample(next(a for a in args if a is not type(None)), n)
    if origin is tuple:
        return (_sample(args[0], n), _sample(args[0], n + 1))
    if origin is Mapping or origin is dict:
        return {"k": n, "nested": {"list": [n, "x"]}}
    if hint is Any:
        return {"any": [n, None, 1.5]}
    if isinstance(hint, type) and hint in VALUE_TYPES:
        return _instance(hint, n)
    return {str: f"s{n}", int: 10 + n, float: 100.5 + n}[hint]


def _instance(cls: type, n: int = 0) -> Any:
    hints = typing.get_type_hints(cls)
    return cls(**{name: default is not True if hints[name] is bool else _sample(hints[name], n + i)
                  for i, (name, default) in enumerate(_fields(cls).items())})


def _fields(cls: type) -> dict[str, Any]:
    """Each field's name and default (MISSING without one): the dataclass fields, or the
    constructor's parameters of `Remembered` (a str)."""
    if not is_dataclass(cls):
        return {name: MISSING if p.default is p.empty else p.default
                for name, p in inspect.signature(cls).parameters.items()}
    return {f.name: f.default if f.default is not MISSING
            else f.default_factory() if f.default_factory is not MISSING else MISSING for f in fields(cls)}


@pytest.mark.parametrize("cls", VALUE_TYPES, ids=lambda c: c.__name__)
def test_every_field_survives_json_and_back(cls: type) -> None:
    value = _instance(cls)
    assert all(getattr(value, name) != default for name, default in _fields(cls).items())  # so a lost field shows
    back = from_json(cls, json.loads(json.dumps(to_json(value))))
    for name in _fields(cls):
        assert getattr(back, name) == getattr(value, name), name
    assert back == value


@pytest.mark.parametrize("cls", list(SERVICE_OUT), ids=lambda c: c.__name__)
def test_the_service_writes_the_one_json_form(cls: type) -> None:
    value = _instance(cls)
    out = SERVICE_OUT[cls](value)
    assert out == to_json(value)
    assert from_json(cls, json.loads(json.dumps(out))) == value


#: The service's response models (its OpenAPI schema), one per value type.
RESPONSE_MODELS = {Recalled: schemas.MemoryOut, Remembered: schemas.RememberedOut, Episode: schemas.EpisodeOut,
                   Fact: schemas.FactOut, DocHit: schemas.DocHitOut, Redaction: schemas.RedactionOut}


@pytest.mark.parametrize("cls", VALUE_TYPES, ids=lambda c: c.__name__)
def test_the_services_response_model_names_every_field(cls: type) -> None:
    """A response model drops what it does not name: a field added to a value type needs its
    line in the schema too, and this says which."""
    assert set(RESPONSE_MODELS[cls].model_fields) == set(to_json(_instance(cls)))


def test_the_rest_shape_keeps_its_names() -> None:
    assert set(to_json(_instance(Remembered))) == {"id", "text", "redacted", "created", "supersedes"}
    assert set(to_json(_instance(Redaction))) == {"kind", "start", "end", "placeholder"}


def test_a_write_is_its_id() -> None:
    """`Remembered` is the id (a str) that `remember` returns, with the write's outcome as fields."""
    done = Remembered("mem_1", "Prefers email", (Redaction("password", 0, 3, "[REDACTED:password]"),), False, ("mem_0",))
    assert isinstance(done, str) and done == "mem_1" == done.id and hash(done) == hash("mem_1")
    assert {done: 1}["mem_1"] == 1 and done in {"mem_1"} and done != "mem_0"
    assert (repr(done), str(done), f"{done}", json.dumps([done])) == ("'mem_1'", "mem_1", "mem_1", '["mem_1"]')
    assert type(str(done)) is str and done == Remembered("mem_1", "Prefers email")  # equal as ids: one memory
    for back in [pickle.loads(pickle.dumps(done, protocol)) for protocol in range(pickle.HIGHEST_PROTOCOL + 1)] + [
            copy.copy(done), copy.deepcopy(done), from_json(Remembered, json.loads(json.dumps(to_json(done))))]:
        assert type(back) is Remembered and to_json(back) == to_json(done)
    assert to_json(done) == {"id": "mem_1", "text": "Prefers email", "created": False, "supersedes": ["mem_0"],
                             "redacted": [{"kind": "password", "start": 0, "end": 3, "placeholder": "[REDACTED:password]"}]}
    with pytest.raises(FrozenInstanceError):
        done.created = True  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del done.text
    # generic encoders take it for the id, as json does (pydantic, dataclasses.asdict)
    assert pydantic_core.to_jsonable_python({"ref": done}) == {"ref": "mem_1"}
    with pytest.raises(TypeError):
        Remembered(None, "x")  # type: ignore[arg-type]


def test_data_is_plain_json_and_values_are_their_fields() -> None:
    """`plain` (what callers pass: metadata, filters, messages) keeps a write as its id, as json
    does; `to_json` (the library's values) writes its fields."""
    done = Remembered("mem_1", "Prefers email")
    data = types.MappingProxyType({"after": done, "seen": (done, {"n": 1})})
    assert plain(data) == {"after": "mem_1", "seen": ["mem_1", {"n": 1}]}
    assert type(plain(data)["after"]) is Remembered and json.dumps(plain(data)) == '{"after": "mem_1", "seen": ["mem_1", {"n": 1}]}'
    assert to_json(data)["after"] == to_json(done) == {"id": "mem_1", "text": "Prefers email", "redacted": [],
                                                         "created": True, "supersedes": []}


def test_plain_writes_keys_as_json_does() -> None:
    """A key that is not a str becomes its JSON text, so sorting keys (the models' stable JSON)
    never compares a number with a string."""
    data = {"order": 1, 2: "x", None: "n", True: "t", 1.5: "f", Remembered("mem_1", "x"): "m"}
    assert plain(data) == json.loads(json.dumps(data))
    assert all(type(k) is str for k in plain(data))
    assert json.dumps(plain([data]), sort_keys=True) == json.dumps([json.loads(json.dumps(data))], sort_keys=True)


def test_the_offline_model_reads_a_tool_call_with_a_number_key() -> None:
    from fourfold.models import OfflineModel

    call = [{"type": "tool_use", "id": "t1", "name": "lookup_policy", "input": {"order": 1, 2: "x"}}]
    messages = [{"role": "user", "content": "where is order 1?"}, {"role": "assistant", "content": call},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]
    assert OfflineModel().chat(messages).text


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    s = Served(tmp_path / "served")
    yield s
    s.close()


def test_the_client_reads_what_the_library_returns(served: Served) -> None:
    """Each value type through the service and the client equals, field by field, the library's."""
    remote = served.memory("acme")
    local = served.tenants.get("acme")
    first = remote.long_term.remember("Ada ships on Tuesdays", scope="customer:ada", key="ship-day",
                                      metadata={"tier": "gold"}, valid_from=1_700_000_000.0)
    second = remote.long_term.remember("Ada ships on Fridays password=hunter2hunter2", scope="customer:ada",
                                       key="ship-day", valid_from=1_700_100_000.0)
    assert second.supersedes == (first,)
    pairs: list[tuple[Any, Any]] = [
        (remote.long_term.history(second), local.long_term.history(second)),
        (remote.long_term.get(second), local.long_term.get(second)),
        (remote.long_term.recall("Ada ships", scope="customer:ada", k=5),
         local.long_term.recall("Ada ships", scope="customer:ada", k=5)),
    ]
    ep = remote.episodes.record(goal="trace parcel", actions=["look up", "call carrier"], outcome="found",
                                success=True, scope="customer:ada", tags=["parcel"])
    pairs.append((remote.episodes.get(ep.id), local.episodes.get(ep.id)))
    pairs.append((ep, local.episodes.get(ep.id)))
    fact = remote.facts.set("policy.refund_days", {"days": 30}, description="refund window")
    pairs.append((fact, local.facts.get("policy.refund_days")))
    remote.docs.ingest_text("# Refunds\n\nRefunds take thirty days.", source="refunds.md")
    pairs.append((remote.docs.search("refunds thirty days"), local.docs.search("refunds thirty days")))
    for got, want in pairs:
        assert got and got == want
        for g, w in zip(got if isinstance(got, list) else [got], want if isinstance(want, list) else [want],
                        strict=True):
            assert all(getattr(g, name) == getattr(w, name) for name in _fields(type(w))), type(w).__name__
