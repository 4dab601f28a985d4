"""`etl validate`: check pipelines without starting a JVM; exit 0 valid, 1 invalid, 2 usage."""

from __future__ import annotations

import json
import os
import sys

import typer

from etl.commands.app import app
from etl.commands import ALLOW_PATH_HELP, parse_vars, redact
from etl.diagnostics import Diagnostic


def _redacted(d: Diagnostic) -> Diagnostic:
    from dataclasses import replace

    return replace(d, message=redact(d.message), hint=redact(d.hint) if d.hint else d.hint,
                   span=replace(d.span, file=redact(d.span.file)))


@app.command()
def validate(
    paths: list[str] = typer.Argument(..., help="pipeline files or folders"),
    format: str = typer.Option("text", "--format", help="text or json"),  # noqa: A002 - the option's name
    strict: bool = typer.Option(False, "--strict", help="treat warnings as errors"),
    var: list[str] | None = typer.Option(None, "--var", help="template variable NAME=VALUE (repeatable)"),
    allow_path: list[str] | None = typer.Option(None, "--allow-path", help=ALLOW_PATH_HELP),
    master: str | None = typer.Option(None, "--master", help="the Spark master the pipeline will run on: a "
                                         "cluster's warns about local paths (W332)"),
) -> None:
    """Report every problem as file:line:col: CODE message, with a hint."""
    from etl.check import check_paths, pipeline_files

    if format not in ("text", "json"):
        raise typer.BadParameter("expected text or json", param_hint="--format")
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        for p in missing:
            typer.echo(f"etl validate: no such file or folder: {p}", err=True)
        raise typer.Exit(2)
    try:
        files = pipeline_files(paths)
    except OSError as e:
        typer.echo(f"etl validate: cannot list {e.filename}: {e.strerror}", err=True)
        raise typer.Exit(2) from None
    if not files:
        typer.echo("etl validate: no pipeline files found", err=True)
        raise typer.Exit(2)
    results = check_paths(files, cli_vars=parse_vars(var), allow_paths=allow_path or ())
    if master:
        from etl.graph.cluster import check_cluster_paths

        for r in results:
            if r.graph is not None:
                check_cluster_paths(r.graph, r.report, master, r.file)
    failed = [r for r in results if r.report.has_errors(strict) or not (r.ok or r.report.errors)]
    per_file = [(r, [_redacted(d) for d in r.report.sorted()]) for r in results]
    if format == "json":
        typer.echo(json.dumps({
            "valid": not failed,
            "strict": strict,
            "files": [{"file": r.file, "valid": r not in failed,
                       "errors": [d.to_json() for d in ds if d.is_error],
                       "warnings": [d.to_json() for d in ds if not d.is_error]} for r, ds in per_file],
        }, indent=2))
    else:
        n_err = n_warn = 0
        for _, ds in per_file:
            errors = [d for d in ds if d.is_error]
            warnings = [d for d in ds if not d.is_error]
            n_err += len(errors)
            n_warn += len(warnings)
            for d in errors + warnings:  # errors first, then warnings, each by position
                typer.echo(d.render())
        summary = (f"{len(results)} pipeline{'s' if len(results) != 1 else ''}: "
                   f"{len(results) - len(failed)} valid, {len(failed)} invalid, "
                   f"{n_err} error{'s' if n_err != 1 else ''}, {n_warn} warning{'s' if n_warn != 1 else ''}"
                   + (" (--strict: warnings fail)" if strict and n_warn else ""))
        sys.stdout.flush()
        print(summary, file=sys.stderr)
    raise typer.Exit(1 if failed else 0)
