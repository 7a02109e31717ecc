"""`fourfold export`, `import`, `migrate` and `reindex`: moving a data dir's contents (or its embedder)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, Annotated

import typer

from fourfold.errors import InvalidInput

__all__ = ["register"]


def export(
    file: Annotated[Path | None, typer.Argument(help="Where to write (default: standard output).")] = None,
    salvage: Annotated[bool, typer.Option("--salvage", help="Export the rows that can still be read of a damaged "
                                          "SQLite store (the store is left untouched).")] = False,
) -> None:
    """Write every memory, episode, fact and thread as versioned JSON Lines (never API keys)."""
    from fourfold._files import private_file, replacing, write_error
    from fourfold.cli._common import _embedder, _memory, state
    from fourfold.transfer import Counts, export_memory

    def write(out: IO[str]) -> Counts:
        if salvage:
            from fourfold.salvage import export_salvaged

            if state.store is not None:
                raise InvalidInput("--salvage reads a data dir's SQLite file; a PostgreSQL store has its own backups")
            counts, rows = export_salvaged(state.data_dir, _embedder(), out)
            typer.echo(f"salvaged from {state.data_dir}: {rows.summary()}", err=True)
            return counts
        with _memory() as mem:
            return export_memory(mem, out)

    if file is None:
        counts = write(sys.stdout)
    else:
        import os

        # Written beside the file and renamed over it: a failed export leaves the old file whole.
        try:
            with replacing(file) as tmp, os.fdopen(private_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w",
                                                   encoding="utf-8") as out:
                counts = write(out)
        except OSError as exc:  # a full or read-only disk: the cause, not a traceback
            raise write_error(exc, file) from None
    _report(counts.as_dict(), f"exported to {file}" if file else None)


def import_(
    file: Annotated[Path, typer.Argument(help="A file written by `fourfold export`.", exists=True, dir_okay=False)],
    reembed: Annotated[bool, typer.Option("--reembed", help="Embed every memory again with this --embedder "
                                          "(for an export made with another one).")] = False,
) -> None:
    """Read an export into this data dir (or database); items already there are kept."""
    from fourfold.cli._common import _memory
    from fourfold.transfer import import_memory

    with _memory(create=True) as mem, file.open(encoding="utf-8") as lines:
        counts = import_memory(mem, lines, reembed=reembed)
    _report(counts.as_dict(), f"imported from {file}")


def reindex(
    batch: Annotated[int, typer.Option(min=1, help="Texts embedded per call.")] = 256,
) -> None:
    """Re-embed every memory and document with --embedder, in place (stop services using the store first)."""
    from fourfold.cli._common import _embedder, _out, _where
    from fourfold.cli.docs_commands import _progress
    from fourfold.reindex import reindex as run

    with _progress() as progress:
        done = run(_where(), _embedder(), progress=progress, batch=batch)
    if done.before == done.after:
        _out(done, f"nothing to do: the store already uses {done.after}")
        return
    cleared = f" ({done.episodes_cleared} episode vectors are made again at the first search)" if done.episodes_cleared else ""
    _out(done, f"re-embedded {done.memories} memories: {done.before} -> {done.after}{cleared}")


def migrate(
    data_dir: Annotated[Path | None, typer.Argument(help="The 0.1 data dir (default: --data-dir).")] = None,
) -> None:
    """Move a fourfold 0.1 data dir into this version's single database (old files kept aside)."""
    from fourfold.cli._common import state
    from fourfold.transfer import migrate_legacy

    where = data_dir or state.data_dir
    counts = migrate_legacy(where)
    _report(counts.as_dict(), f"migrated {where}; the old files are in {where / 'fourfold-0.1-backup'} "
                              "(delete it once satisfied: it still holds everything, forgotten data included)")


def _report(counts: dict[str, int], done: str | None) -> None:
    """The counts (as JSON under --json); on standard error when the export itself is on standard output."""
    import json

    from fourfold.cli._common import state

    summary = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in counts.items() if n and kind != "unchanged")
    if counts.get("unchanged"):  # an import of what was there already adds nothing
        summary = f"{summary or 'nothing new'} ({counts['unchanged']} already there)"
    text = json.dumps(counts) if state.as_json else f"{done or 'exported'}: {summary or 'nothing'}"
    typer.echo(text, err=done is None)


def register(app: typer.Typer) -> None:
    """Add the data-moving commands to the CLI."""
    app.command("export")(export)
    app.command("import")(import_)
    app.command("migrate")(migrate)
    app.command("reindex")(reindex)
