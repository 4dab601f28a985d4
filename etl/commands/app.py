"""The Typer application every command module registers itself on (etl.cli imports the commands and runs it)."""

from __future__ import annotations

import typer

from etl import DISTRIBUTION, version

app = typer.Typer(
    name="etl",
    help="Declarative streaming ETL on PySpark: validate, explain, run and test YAML pipelines.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"{DISTRIBUTION} {version()}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                          help="Print etl's version and exit.")) -> None:
    pass  # the app's options before a command: --version (and typer's --install-completion, --show-completion)
