"""`fourfold docs ...`: ingest files, folders and globs (with a progress bar), search, list, delete."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fourfold.cli._common import _memory, _out, _stamp, state

if TYPE_CHECKING:
    from fourfold.semantic.docs import Progress

__all__ = ["docs_app", "register"]

docs_app = typer.Typer(help="Documents (manuals, policies) chunked for search, kept apart from memories.",
                       no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add `docs` to the fourfold command."""
    app.add_typer(docs_app, name="docs")


@docs_app.command("ingest")
def docs_ingest(
    paths: Annotated[list[str], typer.Argument(help="Files, folders (their .md/.txt files) or globs ('docs/**/*.md'); "
                                               "'-' reads standard input.")],
    source: Annotated[str | None, typer.Option(help="Name of the document (one file or stdin only).")] = None,
    scope: Annotated[str | None, typer.Option(help="Keep the documents in this scope (default: shared).")] = None,
) -> None:
    """Chunk documents for search; a changed document replaces its old version, an unchanged one is skipped."""
    if paths != ["-"] and source is None:
        from fourfold.semantic.docs import find_documents

        find_documents(paths)  # a typo or a name clash fails here, before a data dir is created
    with _memory(create=True) as mem:
        if paths == ["-"]:
            ids = mem.docs.ingest_text(sys.stdin.read(), source=source or "stdin", scope=scope)
            _out({"source": source or "stdin", "chunks": len(ids)}, f"{len(ids)} chunks stored")
            return
        if source is not None:
            if len(paths) != 1 or Path(paths[0]).is_dir():
                from fourfold.errors import InvalidInput

                raise InvalidInput("--source names one file: leave it out for folders and several files")
            ids = mem.docs.ingest_file(paths[0], source=source, scope=scope)
            _out([{"source": source, "chunks": len(ids)}], f"{source}: {len(ids)} chunks")
            return
        with _progress() as progress:
            results = mem.docs.ingest_paths(paths, scope=scope, on_progress=progress)
    lines = [f"{r.status:<9} {r.source} ({r.chunks} chunks" + (f", {r.removed} old removed)" if r.removed else ")")
             for r in results]
    _out(results, "\n".join(lines) or "(no documents found)")


@docs_app.command("search")
def docs_search(
    query: str,
    k: Annotated[int, typer.Option("-k", "--k")] = 5,
    source: Annotated[str | None, typer.Option(help="Only this document.")] = None,
    scope: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Document chunks most relevant to QUERY."""
    with _memory() as mem:
        hits = mem.docs.search(query, k=k, source=source, scope=scope)
    _out(hits, "\n\n".join(f"{h.score:6.2f}  {h.source}#{h.position} {h.heading}\n{h.text}" for h in hits) or "(nothing)")


@docs_app.command("list")
def docs_list(scope: Annotated[str | None, typer.Option()] = None) -> None:
    """Every stored document: its source, chunk count and when it was last ingested."""
    with _memory() as mem:
        found = mem.docs.list(scope=scope)
    width = max((len(d.source) for d in found), default=0)
    lines = [f"{d.source:<{width}}  {d.chunks:>4} chunks  {_stamp(d.updated_at)}"
             for d in found]
    _out(found, "\n".join(lines) or "(no documents)")


@docs_app.command("delete")
def docs_delete(source: str, scope: Annotated[str | None, typer.Option()] = None) -> None:
    """Delete a document (every chunk of SOURCE); exit 3 if there is none."""
    with _memory() as mem:
        removed = mem.docs.delete_source(source, scope=scope)
    _out({"source": source, "deleted": removed}, f"deleted {source} ({removed} chunks)")


@contextmanager
def _progress() -> Iterator[Progress]:
    """A rich progress bar on stderr while documents are embedded (silent when not a terminal)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=console, transient=True, disable=state.as_json or not console.is_terminal)
    tasks: dict[str, TaskID] = {}

    def advance(source: str, done: int, total: int) -> None:
        if source not in tasks:
            tasks[source] = bar.add_task(source, total=total)
        bar.update(tasks[source], completed=done)

    with bar:
        yield advance
