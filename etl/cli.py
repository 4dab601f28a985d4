"""The `etl` command line: thin; parse arguments, call a layer, render the result.

Each command lives in its own module under etl/commands/.
"""

from __future__ import annotations

import sys

import typer

app = typer.Typer(
    name="etl",
    help="Declarative streaming ETL on PySpark: validate, explain, run and test YAML pipelines.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from etl import DISTRIBUTION, version

        typer.echo(f"{DISTRIBUTION} {version()}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                          help="Print etl's version and exit.")) -> None:
    pass  # the app's options before a command: --version (and typer's --install-completion, --show-completion)


def _register() -> None:
    from etl.commands import docs, drain, explain, init, run, schema, tap, test, to_yaml, top, validate  # noqa: F401

    for info in app.registered_commands:  # the command list shows a docstring's line breaks as they are
        if info.short_help is None and info.callback is not None and info.callback.__doc__:
            info.short_help = " ".join(info.callback.__doc__.split("\n\n")[0].split())


def main() -> None:
    from etl.secrets import redact_console
    from etl.settings import SettingsError, current

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
