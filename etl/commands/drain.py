"""`etl drain PIPELINE`: ask the running pipeline to drain (the input is complete; see etl/compile/drain.py).

It writes a request into the pipeline's checkpoint folder; the running `etl run` notices it within a
second, finishes the batch in flight, processes what is available, flushes every open window, session,
join buffer and dedupe state, and exits 0. `kill -USR1 <pid>` does the same. With `--wait`, this
command returns once the drain is recorded in the checkpoint (exit 0) or after the timeout (exit 1).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from etl.cli import app
from etl.commands import parse_vars, redact


@app.command()
def drain(
    path: str = typer.Argument(..., help="pipeline file"),
    checkpoint: Optional[str] = typer.Option(None, "--checkpoint", help="checkpoint folder (overrides the pipeline's)"),
    wait: float = typer.Option(0, "--wait", help="seconds to wait for the drain to finish (0: do not wait)"),
    var: Optional[list[str]] = typer.Option(None, "--var", help="template variable NAME=VALUE (repeatable)"),
) -> None:
    """Drain a running pipeline: flush every window and state, commit the sinks, and let `etl run` exit 0."""
    from etl.check import check_file
    from etl.compile import drain as drain_files

    checked = check_file(path, cli_vars=parse_vars(var))
    if checked.plan is None:
        for d in checked.report.sorted():
            typer.echo(redact(d.render()), err=True)
        raise typer.Exit(1)
    from etl.runtime.statedir import private

    ck = str(Path(checkpoint).resolve()) if checkpoint else checked.plan.checkpoint
    before = drain_files.drained(ck)
    with private():  # the request is the owner's only, as every file of the checkpoint
        drain_files.request(ck)
    typer.echo(redact(f"etl drain: asked '{checked.plan.name}' to drain (checkpoint {ck})"), err=True)
    deadline = time.monotonic() + wait
    while wait > 0 and time.monotonic() < deadline:
        record = drain_files.drained(ck)
        if record is not None and record != before:
            typer.echo(redact(f"etl drain: drained at {record.get('drained_at')}"), err=True)
            return
        time.sleep(0.5)
    if wait > 0:
        typer.echo(f"etl drain: not drained within {wait:g} s; is `etl run` running on {ck}?", err=True)
        raise typer.Exit(1)
