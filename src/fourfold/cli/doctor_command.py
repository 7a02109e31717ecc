"""`fourfold doctor`: check a data dir and, with --repair, fix what can be fixed without loss."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["doctor", "register"]


def doctor(
    data_dir: Annotated[Path | None, typer.Argument(help="The data dir (default: --data-dir or $FOURFOLD_DATA_DIR).")] = None,
    repair: Annotated[bool, typer.Option("--repair", help="Repair what can be repaired without losing data.")] = False,
) -> None:
    """Check a data dir's files; exit 1 while problems remain."""
    from fourfold import doctor as doc
    from fourfold.cli._common import _out, state

    where = data_dir or state.store or state.data_dir
    report = doc.repair(where) if repair else doc.check(where)
    human = [f"repaired: {line}" for line in report.repaired]
    human += [f"problem: {finding}" for finding in report.findings]
    shown = report.data_dir  # a database's URL without its password
    human.append(f"{shown}: {'healthy' if report.ok else f'{len(report.findings)} problem(s)'} "
                 f"(checked {', '.join(report.checked)})")
    if report.findings and not repair and any(f.repairable for f in report.findings):
        human.append(f"run `fourfold doctor {where} --repair` to repair what is marked repairable")
    _out({"data_dir": str(shown), "ok": report.ok, "repaired": report.repaired,
          "findings": [{"file": f.file, "problem": f.problem, "action": f.action, "repairable": f.repairable}
                       for f in report.findings]}, "\n".join(human))
    if not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the `doctor` command to the CLI."""
    app.command("doctor")(doctor)
