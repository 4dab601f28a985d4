"""The `etl` command line: thin; parse arguments, call a layer, render the result.

Each command lives in its own module under etl/commands/ and registers itself on `etl.commands.app.app`.
"""

from __future__ import annotations

import sys

import typer

from etl.commands import docs, drain, explain, init, jobs, run, schema, serve, tap, test, to_yaml, top, validate  # noqa: F401
from etl.commands.app import app
from etl.secrets import redact_console
from etl.settings import SettingsError, current

__all__ = ["app", "main"]


def _register() -> None:
    for info in app.registered_commands:  # the command list shows a docstring's line breaks as they are
        if info.short_help is None and info.callback is not None and info.callback.__doc__:
            info.short_help = " ".join(info.callback.__doc__.split("\n\n")[0].split())


def main() -> None:
    redact_console()  # whatever a command prints passes etl.secrets.redact
    _register()
    try:
        current()  # the environment's settings, read once (run/explain --set adds to them)
        app()
    except SettingsError as e:
        typer.echo(f"etl: {e}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)


_register()
