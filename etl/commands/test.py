"""`etl test` (being built)."""

from __future__ import annotations

import typer

from etl.cli import app


@app.command()
def test(paths: list[str] = typer.Argument(...)) -> None:
    """Not available yet."""
    typer.echo("etl test: not available yet", err=True)
    raise typer.Exit(2)
