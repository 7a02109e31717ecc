"""`fourfold list`: every memory of a scope, oldest first, optionally filtered with --where."""

from __future__ import annotations

import typer

from fourfold.cli._common import (
    AllVersionsOption,
    AsOfOption,
    KindsOption,
    ScopeFilterOption,
    WhereOption,
    _out,
    _selected,
    _stamp,
    _version,
)

__all__ = ["register"]


def list_memories(
    scope: ScopeFilterOption = None,
    kind: KindsOption = None,
    where: WhereOption = None,
    as_of: AsOfOption = None,
    all_versions: AllVersionsOption = False,
) -> None:
    """Every current memory of a scope, oldest first (documents only with --kind doc)."""
    found = _selected(lambda lt, selection: lt.all(**selection), scope, kind, where, as_of, all_versions)
    lines = [f"{_stamp(r.created_at)}  [{r.kind}] {r.text}  ({r.id}{_version(r)})" for r in found]
    _out(found, "\n".join(lines) or "(none)")


def register(app: typer.Typer) -> None:
    """Add `list` to the fourfold command."""
    app.command("list")(list_memories)
