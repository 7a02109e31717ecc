"""What every CLI command shares: the global options of one invocation and how to open, print and parse.

A leaf module: `app` and the command modules import it, it imports neither.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from fourfold._manifest import MANIFEST
from fourfold.config import DATA_DIR_ENV, default_data_dir
from fourfold.errors import InvalidInput
from fourfold.serialize import to_json

if TYPE_CHECKING:
    from fourfold.embeddings.base import Embedder
    from fourfold.longterm.store import LongTermMemory
    from fourfold.memory import Memory
    from fourfold.models.base import ChatModel
    from fourfold.types import Recalled

__all__ = ["AllVersionsOption", "AsOfOption", "KindsOption", "ScopeFilterOption", "State", "WhereOption", "_embedder", "_memory", "_model", "_out", "_say_created", "_selected", "_store_url",
           "_version", "_when", "_where", "state"]

T = TypeVar("T")

# The options of the commands that read long-term memory (`recall`, `list`): one spelling, one help.
ScopeFilterOption = Annotated[str | None, typer.Option(help="Only this scope's memories (default: the unscoped ones).")]
KindsOption = Annotated[list[str] | None, typer.Option("--kind", help="Only these kinds (repeatable).")]
WhereOption = Annotated[str | None, typer.Option(help=(
    "A filter as JSON: '{\"product\": \"web\"}', '{\"priority\": {\"$gte\": 2}}', "
    "'{\"created_at\": {\"$gte\": \"2026-11-01\"}}' ($eq $ne $in $nin $gt $gte $lt $lte $and $or)."))]
AsOfOption = Annotated[str | None, typer.Option(help="Only the versions current then (ISO 8601 or unix seconds).")]
AllVersionsOption = Annotated[bool, typer.Option("--all-versions", help="Include superseded versions too.")]


def _selected(
    read: Callable[[LongTermMemory, dict[str, Any]], T],
    scope: str | None, kind: list[str] | None, where: str | None, as_of: str | None, all_versions: bool,
) -> T:
    """What `read(long_term, selection)` finds in the open memory; `selection` holds the keyword
    arguments of `LongTermMemory.recall` / `.all` that those options give."""
    from fourfold.longterm.where import parse_where

    with _memory() as mem:
        found = read(mem.long_term, {"scope": scope, "kinds": kind or None, "where": parse_where(where),
                                     "as_of": _when(as_of, "--as-of"), "include_superseded": all_versions})
        if not found:
            _hint_scope(mem, scope)
    return found


def _hint_scope(mem: Memory, scope: str | None) -> None:
    """On standard error: the scope asked for holds no memories, and which scopes do."""
    from fourfold._hints import did_you_mean
    from fourfold._validate import check_scope

    asked = check_scope(scope)
    if mem.long_term.all(scope=asked, include_superseded=True):
        return  # the scope holds memories: the filters or the query found none
    named = [name for name, counts in mem.scopes().items() if counts["memories"] or counts["old_versions"]]
    if asked is not None:
        tail = did_you_mean(asked, named) or "; `fourfold scopes` lists the scopes"
        typer.echo(f"hint: nothing is stored under scope {asked!r}{tail}", err=True)
    elif named:
        shown = ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")
        typer.echo(f"hint: no memories without a scope; memories are stored under {shown} "
                   "(pass --scope; `fourfold scopes` lists them)", err=True)


def _version(memory: Recalled) -> str:
    """How a listing marks an old version of a memory: when a newer one replaced it."""
    return "" if memory.valid_to is None else f"; old version, replaced {_stamp(memory.valid_to)}"


@dataclass
class State:
    """The global options of one invocation (reset by `fourfold.cli.main` before each)."""

    data_dir: Path = field(default_factory=default_data_dir)
    #: A postgresql:// URL that replaces the data dir (None: the data dir).
    store: str | None = None
    embedder: str | None = None
    model: str | None = None
    as_json: bool = False

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


state = State()


def _store_url(store: str | None) -> str | None:
    from fourfold.stores.database import is_url

    if not store:
        return None
    if not is_url(store):
        raise InvalidInput(f"--store takes a postgresql:// URL, not {store[:40]!r} (a data dir is --data-dir)")
    return store


def _where() -> Path | str:
    """What the commands open: the PostgreSQL URL of --store, else the data dir."""
    return state.store or state.data_dir


@contextmanager
def _memory(*, create: bool = False) -> Iterator[Memory]:
    """The data dir, open; only writing commands pass create=True (a reader never makes a store).

    A command that created the data dir says where it is once it has succeeded.
    """
    from fourfold.memory import Memory

    fresh = create and state.store is None and not (state.data_dir / MANIFEST).exists()
    with Memory.open(_where(), embedder=_embedder(), create=create) as mem:
        yield mem
    if fresh:
        _say_created()


def _say_created() -> None:
    typer.echo(f"fourfold: created a new data dir at {state.data_dir.absolute()} "
               f"(choose another with --data-dir or ${DATA_DIR_ENV})", err=True)


def _embedder() -> Embedder:
    from fourfold.embeddings.spec import embedder_from_spec

    return embedder_from_spec(state.embedder or "minilm")


def _stamp(seconds: float) -> str:
    """A time as every command prints it: UTC, to the minute."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%d %H:%M")


def _out(value: Any, human: str | None = None) -> None:
    if state.as_json or human is None:
        typer.echo(json.dumps(to_json(value), ensure_ascii=False, indent=None if state.as_json else 2))
    else:
        typer.echo(human)


def _when(text: str | None, option: str) -> float | datetime | None:
    """A time given on the command line: unix seconds or ISO 8601."""
    if text is None:
        return None
    from fourfold.text.dates import parse_date

    try:
        return float(text)
    except ValueError:
        pass
    when = parse_date(text)
    if when is None:
        raise InvalidInput(f"{option} must be ISO 8601 (2024-05-01, 2024-05-01T09:00Z) or unix seconds, got {text!r}")
    return when


def _model() -> ChatModel:
    """The chat model of --model / $FOURFOLD_MODEL (default: Claude with ANTHROPIC_API_KEY, else offline)."""
    from fourfold.models import default_model

    return default_model(state.model)
