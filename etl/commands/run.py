"""`etl run` (being built)."""

from __future__ import annotations

import typer

from etl.cli import app


@app.command()
def run(paths: list[str] = typer.Argument(...)) -> None:
    """Not available yet."""
    typer.echo("etl run: not available yet", err=True)
    raise typer.Exit(2)
