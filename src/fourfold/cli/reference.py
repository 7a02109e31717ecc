"""The CLI reference page (docs/cli.md), generated from the Typer app so it cannot drift.

    python -m fourfold.cli.reference > docs/cli.md

`tests/test_docs.py` regenerates it and fails when the committed page is stale.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["cli_reference"]

_HEADER = """# CLI reference

Generated from the `fourfold` command itself by `python -m fourfold.cli.reference > docs/cli.md`
(a test fails when this page is out of date). Every command also answers `--help`.

Global options (`--data-dir`, `--json`, `--model`, `--embedder`, `--store`) go before or after
the command. Errors are one line on standard error, with exit code 2 (invalid input), 3 (not
found) or 1; under `--json` that line is `{"error": {"code", "message", "exit_code"}}`.
"""


def cli_reference() -> str:
    """The Markdown of every command, group and option, in the order `fourfold --help` lists them."""
    import typer

    from fourfold.cli.app import app

    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="fourfold")
    out = [_HEADER, "## fourfold\n", _section(root, ctx, "fourfold")]
    out += _commands(root, ctx, "fourfold")
    return "\n".join(out).rstrip() + "\n"


def _commands(group: Any, ctx: Any, path: str) -> list[str]:
    out: list[str] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = command.context_class(command, info_name=name, parent=ctx)
        out += [f"## {path} {name}\n" if path == "fourfold" else f"### {path} {name}\n",
                _section(command, sub, f"{path} {name}")]
        if hasattr(command, "list_commands"):
            out += _commands(command, sub, f"{path} {name}")
    return out


def _section(command: Any, ctx: Any, path: str) -> str:
    params = [p for p in command.get_params(ctx) if p.name != "help"]
    arguments = [p for p in params if not p.opts[0].startswith("-")]
    usage = " ".join([path, "[OPTIONS]" if len(arguments) < len(params) else "",
                      *(_argument(p) for p in arguments),
                      "COMMAND [ARGS]..." if hasattr(command, "list_commands") else ""])
    lines = [" ".join((command.help or "").split()), "", "```text", " ".join(usage.split()), "```", ""]
    rows = [_row(p, ctx) for p in params]
    if rows:
        lines += ["| argument or option | what it does |", "|---|---|", *rows, ""]
    return "\n".join(lines)


def _argument(param: Any) -> str:
    name = str(param.name).upper()
    text = f"{name}..." if param.nargs == -1 else name
    return text if param.required else f"[{text}]"


def _row(param: Any, ctx: Any) -> str:
    record = param.get_help_record(ctx)
    names, text = (record if record else (param.name, ""))
    if not param.opts[0].startswith("-"):
        names = str(param.name).upper()
        help_text = getattr(param, "help", None) or ""
        text = f"{help_text} [required]" if param.required else help_text
    cell = " ".join(str(text).split()).replace("|", "\\|")
    return f"| `{names}` | {cell} |"


if __name__ == "__main__":
    sys.stdout.write(cli_reference())
