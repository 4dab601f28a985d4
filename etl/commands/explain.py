"""`etl explain`: deterministic text of the DAG and the plan."""

from __future__ import annotations

from typing import Optional

import typer

from etl.cli import app
from etl.commands import parse_vars


@app.command()
def explain(
    path: str = typer.Argument(..., help="pipeline file"),
    var: Optional[list[str]] = typer.Option(None, "--var", help="template variable NAME=VALUE (repeatable)"),
) -> None:
    """Show nodes, edges, columns, optimized programs and each sink's delivery guarantee."""
    from etl.check import check_file
    from etl.plan.explain import explain_plan

    checked = check_file(path, cli_vars=parse_vars(var))
    if checked.plan is None:
        for d in checked.report.sorted():
            typer.echo(d.render())
        raise typer.Exit(1)
    typer.echo(checked.document.redact(explain_plan(checked.plan)), nl=False)
