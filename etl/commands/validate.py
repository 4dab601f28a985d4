"""`etl validate`: check pipelines without starting a JVM; exit 0 valid, 1 invalid, 2 usage."""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer

from etl.cli import app
from etl.commands import parse_vars
from etl.diagnostics import Diagnostic


@app.command()
def validate(
    paths: list[str] = typer.Argument(..., help="pipeline files or folders"),
    format: str = typer.Option("text", "--format", help="text or json"),
    strict: bool = typer.Option(False, "--strict", help="treat warnings as errors"),
    var: Optional[list[str]] = typer.Option(None, "--var", help="template variable NAME=VALUE (repeatable)"),
) -> None:
    """Report every problem as file:line:col CODE message, with a hint."""
    from etl.check import check_paths, pipeline_files

    if format not in ("text", "json"):
        raise typer.BadParameter("expected text or json", param_hint="--format")
    files = pipeline_files(paths)
    if not files:
        typer.echo("etl validate: no pipeline files found", err=True)
        raise typer.Exit(2)
    results = check_paths(files, cli_vars=parse_vars(var))
    diags: list[Diagnostic] = [d for r in results for d in r.report.sorted()]
    failed = [r for r in results if r.report.has_errors(strict) or (r.plan is None and not r.report.errors)]
    if format == "json":
        typer.echo(json.dumps({
            "valid": not failed,
            "files": [{"file": r.file, "valid": r not in failed,
                       "diagnostics": [d.to_json() for d in r.report.sorted()]} for r in results],
        }, indent=2))
    else:
        for d in diags:
            typer.echo(d.render(), err=False)
        n_err = sum(1 for d in diags if d.is_error)
        n_warn = len(diags) - n_err
        summary = (f"{len(results)} pipeline{'s' if len(results) != 1 else ''}: "
                   f"{len(results) - len(failed)} valid, {len(failed)} invalid, "
                   f"{n_err} error{'s' if n_err != 1 else ''}, {n_warn} warning{'s' if n_warn != 1 else ''}")
        print(summary, file=sys.stderr)
    raise typer.Exit(1 if failed else 0)
