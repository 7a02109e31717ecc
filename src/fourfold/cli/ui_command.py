"""`fourfold ui [DATA_DIR]`: the web inspector on a loopback-only service, opened in a browser."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated

import typer

from fourfold._manifest import MANIFEST
from fourfold.cli._common import state
from fourfold.errors import StoreUnavailable

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add `ui` to the fourfold command (idempotent)."""
    if not any(c.name == "ui" for c in app.registered_commands):
        app.command("ui")(ui)


def ui(
    data_dir: Annotated[Path | None, typer.Argument(help="The data dir to inspect (default: --data-dir).")] = None,
    port: Annotated[int, typer.Option(help="TCP port on 127.0.0.1 (0: any free one).")] = 0,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the address; do not open a browser.")] = False,
    review_cases: Annotated[bool, typer.Option(
        "--review-cases", help="Hold each new shared case until it is approved here.")] = False,
) -> None:
    """Inspect what the agent remembers, and why, in your browser (served on 127.0.0.1 only)."""
    from fourfold.cli.service_commands import run_service
    from fourfold.service.testing import free_port

    if data_dir is not None:
        state.data_dir = data_dir
    if state.store is None and not (state.data_dir / MANIFEST).is_file():
        raise StoreUnavailable(f"no fourfold data dir at {state.data_dir.absolute()}: nothing has been stored there yet")

    # Without keys, this run's secret is the key: other local users (and a proxy that calls
    # the port on their behalf) reach 127.0.0.1 too, but not the address printed here. It
    # travels in the URL's fragment, which the browser never sends; the page keeps it.
    run_secret = secrets.token_urlsafe(24)

    def ready(url: str) -> None:
        page = f"{url}/ui" + ("" if _has_keys() else f"#key={run_secret}")
        typer.echo(f"fourfold inspector: {page}  (Ctrl+C stops it)", err=True)
        if not no_browser:
            import webbrowser

            webbrowser.open(page)

    run_service(host="127.0.0.1", port=port or free_port(), review_cases=review_cases, on_ready=ready,
                run_secret=run_secret)


def _has_keys() -> bool:
    from fourfold.cli.service_commands import _keys

    keys = _keys(create=True)
    try:
        return keys.has_keys()
    finally:
        keys.close()
