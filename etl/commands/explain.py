"""`etl explain`: deterministic text of the DAG and the plan."""

from __future__ import annotations

import os

import typer

from etl.commands import ALLOW_PATH_HELP, parse_vars, redact
from etl.commands.app import app
from etl.settings import configure, parse_assignments


@app.command()
def explain(
    path: str = typer.Argument(..., help="pipeline file"),
    var: list[str] | None = typer.Option(None, "--var", help="template variable NAME=VALUE (repeatable)"),
    allow_path: list[str] | None = typer.Option(None, "--allow-path", help=ALLOW_PATH_HELP),
    setting: list[str] | None = typer.Option(None, "--set", help="etl setting NAME=VALUE, over the environment's "
                                                "(repeatable; python -m etl.settings --markdown lists them)"),
    master: str | None = typer.Option(None, "--master", help="Spark master the engines are chosen for "
                                         "(default local[*], as `etl run`)"),
) -> None:
    """Show nodes, edges, columns, optimized filter programs, each sink's delivery guarantee, then the physical
    plan: the queries, shared passes and the engine of every node (and why), as `etl run` executes them."""
    from etl.check import check_file
    from etl.physical import physical_plan, planner_settings
    from etl.physical.explain import explain_text

    configure(parse_assignments(setting))
    if not os.path.exists(path):
        typer.echo(f"etl explain: no such file: {path}", err=True)
        raise typer.Exit(2)
    checked = check_file(path, cli_vars=parse_vars(var), programs=True, allow_paths=allow_path or ())
    if checked.plan is None:
        for d in checked.report.sorted():
            typer.echo(redact(d.render()), err=True)
        raise typer.Exit(1)
    for d in checked.report.warnings:
        typer.echo(redact(d.render()), err=True)
    try:
        text = explain_text(checked.plan, physical_plan(checked.plan, planner_settings(master=master)))
    except Exception as e:  # noqa: BLE001 - a bug in etl, reported as E999 rather than a traceback
        typer.echo(redact(f"{path}:1:1: E999 internal error: {type(e).__name__}: {e}"), err=True)
        raise typer.Exit(1) from None
    typer.echo(redact(text), nl=False)
