"""The `fourfold` command: a thin adapter over the library (typer + rich)."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every error becomes one line on stderr (JSON under --json) and a non-zero exit code."""
    from fourfold.cli._common import state
    from fourfold.cli.app import app
    from fourfold.errors import FourfoldError, InvalidInput, NotFound

    args = list(sys.argv[1:] if argv is None else argv)
    state.reset()
    # --json anywhere before `--` (a usage error can come before the option is parsed).
    as_json = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    try:
        # Without standalone mode click returns an Exit's code instead of raising it.
        result = app(args=args, prog_name="fourfold", standalone_mode=False)
    except FourfoldError as exc:
        code = 2 if isinstance(exc, InvalidInput) else 3 if isinstance(exc, NotFound) else 1
        _error(str(exc), kind=exc.code, exit_code=code, as_json=as_json or state.as_json)
        return code
    except KeyboardInterrupt:
        return 130
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    except Exception as exc:  # usage errors from click (or typer's vendored click): one line
        import click
        import typer

        if isinstance(exc, typer.Exit | click.exceptions.Exit):
            return int(getattr(exc, "exit_code", 0) or 0)
        usage_code = _usage_error_code(exc)
        if usage_code is None:
            raise
        code = usage_code
        message = exc.format_message() if hasattr(exc, "format_message") else type(exc).__name__
        kind = "aborted" if code == 1 else "usage"
        _error(f"{message} (see --help)" if kind == "usage" else "aborted", kind=kind, exit_code=code,
               as_json=as_json or state.as_json)
        return code
    return result if isinstance(result, int) else 0


def _usage_error_code(exc: Exception) -> int | None:
    """Exit code of a click/typer usage error or Abort; None for anything else."""
    import click
    import typer

    if isinstance(exc, typer.Abort | click.exceptions.Abort):
        return 1
    if isinstance(exc, click.ClickException | typer.TyperException) and hasattr(exc, "exit_code"):
        return int(exc.exit_code) or 2
    return None


def _error(message: str, *, kind: str, exit_code: int, as_json: bool) -> None:
    """One line on stderr: newlines folded, text that cannot be encoded escaped.

    Under --json the line is `{"error": {"code", "message", "exit_code"}}`, the shape the
    service answers with (plus the exit code).
    """
    if as_json:
        import json

        error = {"code": kind, "message": " ".join(message.split()), "exit_code": exit_code}
        line = json.dumps({"error": error}, ensure_ascii=True)
    else:
        line = " ".join(f"error: {message}".split())
    stream = sys.stderr
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write(line.encode(encoding, "backslashreplace").decode(encoding) + "\n")
    stream.flush()


if __name__ == "__main__":
    sys.exit(main())
