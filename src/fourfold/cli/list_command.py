"""`fourfold list`: every memory of a scope, oldest first, optionally filtered with --where."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from fourfold.cli._common import WHERE_OPTION_HELP, _memory, _out, _when

__all__ = ["register"]


def list_memories(
    scope: Annotated[str | None, typer.Option(help="This scope's memories (default: the unscoped ones).")] = None,
    kind: Annotated[list[str] | None, typer.Option("--kind", help="Only these kinds (repeatable).")] = None,
    where: Annotated[str | None, typer.Option(help=WHERE_OPTION_HELP)] = None,
    as_of: Annotated[str | None, typer.Option(help="The versions current then (ISO 8601 or unix seconds).")] = None,
    all_versions: Annotated[bool, typer.Option("--all-versions", help="Superseded versions too.")] = False,
) -> None:
    """Every current memory of a scope, oldest first (documents only with --kind doc)."""
    from fourfold.longterm.where import parse_where

    with _memory() as mem:
        found = mem.long_term.all(scope=scope, kinds=kind or None, where=parse_where(where), as_of=_when(as_of, "--as-of"),
                                  include_superseded=all_versions)
    lines = [f"{datetime.fromtimestamp(r.created_at, UTC):%Y-%m-%d %H:%M}  [{r.kind}] {r.text}  ({r.id})" for r in found]
    _out(found, "\n".join(lines) or "(none)")


def register(app: typer.Typer) -> None:
    """Add `list` to the fourfold command."""
    app.command("list")(list_memories)
