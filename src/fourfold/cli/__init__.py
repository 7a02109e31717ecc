"""The `fourfold` command: a thin adapter over the library (typer + rich)."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; library errors become one line on stderr and a non-zero exit code."""
    from fourfold.cli.app import app
    from fourfold.errors import FourfoldError, InvalidInput, NotFound

    try:
        app(args=argv, standalone_mode=False)
    except FourfoldError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, InvalidInput) else 3 if isinstance(exc, NotFound) else 1
    except KeyboardInterrupt:
        return 130
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    except Exception as exc:  # click's usage errors, bad files: one line, never a traceback
        from click.exceptions import ClickException

        if isinstance(exc, ClickException):
            exc.show()
            return exc.exit_code
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
