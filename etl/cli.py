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
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    from etl.commands import drain, explain, run, schema, test, to_yaml, validate  # noqa: F401


def main() -> None:
    _register()
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


_register()
