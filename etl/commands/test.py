"""`etl test`: run the `tests:` blocks of pipelines on a local Spark; exit 0 all pass, 1 a failure."""

from __future__ import annotations

from pathlib import Path

import typer

from etl import settings
from etl.commands import ALLOW_PATH_HELP, parse_vars, redact
from etl.commands.app import app
from etl.commands.run import jvm_stderr_to


@app.command()
def test(
    paths: list[str] = typer.Argument(..., help="pipeline files or folders"),
    junit: str | None = typer.Option(None, "--junit", help="write a JUnit XML report to this file"),
    k: str | None = typer.Option(None, "-k", help="only cases whose name contains this text"),
    master: str = typer.Option("local[2]", "--master", help="Spark master for the tests"),
    var: list[str] | None = typer.Option(None, "--var", help="template variable NAME=VALUE (repeatable)"),
    allow_path: list[str] | None = typer.Option(None, "--allow-path", help=ALLOW_PATH_HELP),
) -> None:
    """Replace sources by the given events, run into in-memory sinks, compare rows; print a diff on failure."""
    from etl.check import check_paths, pipeline_files

    files = pipeline_files(paths)
    if not files:
        typer.echo("etl test: no pipeline files found", err=True)
        raise typer.Exit(2)
    checked = check_paths(files, cli_vars=parse_vars(var), programs=True, allow_paths=allow_path or ())
    invalid = [c for c in checked if c.plan is None]
    for c in invalid:
        for d in c.report.sorted():
            typer.echo(redact(d.render()), err=True)
    runnable = [c for c in checked if c.plan is not None and c.plan.graph.pipeline.tests]
    results = []
    if runnable:
        import shutil
        import tempfile

        from etl.runtime.session import build_session, stderr_to_file
        from etl.runtime.testing import run_tests

        # Spark's lines about the queries each case stops, and the Python daemons' stderr, go to a log file in a
        # folder of mkdtemp (0700, a name no one can plant a symlink at), removed when the cases are done
        log_dir = tempfile.mkdtemp(prefix="etl-test-")
        log = Path(log_dir) / "spark.log"
        try:
            quiet = not settings.current().log_level
            with jvm_stderr_to(log if quiet else None):
                spark = build_session("etl-test", master, {"spark.sql.shuffle.partitions": "2",
                                                           "spark.default.parallelism": "2"}, ui=False,
                                      log_file=str(log), short=True)
            if quiet:
                stderr_to_file(spark, str(log))
            for c in runnable:
                for r in run_tests(c, spark, k):
                    results.append(r)
                    mark = typer.style("PASS", fg="green") if r.ok else typer.style("FAIL", fg="red")
                    typer.echo(redact(f"{mark} {c.file} :: {r.name} ({r.seconds:.1f}s)"))
                    if not r.ok:
                        for line in r.message.splitlines():
                            typer.echo(redact(f"    {line}"))
        finally:
            shutil.rmtree(log_dir, ignore_errors=True)
    failed = [r for r in results if not r.ok]
    no_tests = [c.file for c in checked if c.plan is not None and not c.plan.graph.pipeline.tests]
    if junit:
        from etl.runtime.testing import junit_xml

        Path(junit).parent.mkdir(parents=True, exist_ok=True)
        Path(junit).write_text(junit_xml(results))
    typer.echo(f"{len(results)} test{'s' if len(results) != 1 else ''}: {len(results) - len(failed)} passed, "
               f"{len(failed)} failed" + (f"; {len(invalid)} invalid pipeline(s)" if invalid else "")
               + (f"; no tests in {len(no_tests)} pipeline(s)" if no_tests else ""), err=True)
    raise typer.Exit(1 if failed or invalid else 0)
