"""`etl drain PIPELINE`: ask the running pipeline to drain (the input is complete; see etl/compile/drain.py).

It asks the running `etl run` over its control endpoint (POST /drain with the run's token, read from the
token file its run file names); with no run alive it writes a request into the pipeline's checkpoint folder,
which the next `etl run` on it notices within a second. The run finishes the batch in flight, processes what is available, flushes every open window, session,
join buffer and dedupe state, and exits 0. `kill -USR1 <pid>` does the same. With `--wait`, this
command returns once the drain is recorded in the checkpoint (exit 0) or after the timeout (exit 1).
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from etl.commands import parse_vars, redact
from etl.commands.app import app
from etl.commands.tap import Endpoint, live_run, refused, token


@app.command()
def drain(
    path: str = typer.Argument(..., help="pipeline file"),
    checkpoint: str | None = typer.Option(None, "--checkpoint", help="checkpoint folder (overrides the pipeline's)"),
    wait: float = typer.Option(0, "--wait", help="seconds to wait for the drain to finish (0: do not wait)"),
    var: list[str] | None = typer.Option(None, "--var", help="template variable NAME=VALUE (repeatable)"),
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
    if not _ask_the_run(ck):
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


def _ask_the_run(checkpoint: str) -> bool:
    """POST /drain to the live run of `checkpoint` with its token; False when no run answers."""
    from urllib.error import HTTPError, URLError

    from etl.runtime.control import run_file

    info = live_run(run_file(checkpoint))
    if info is None:
        return False
    try:
        with Endpoint(str(info["address"]), token("drain", info.get("token_file"))).open("/drain", method="POST"):
            return True
    except HTTPError as e:
        if e.code in (401, 403):
            refused("drain", e)
        return False
    except (URLError, OSError):  # the run ended meanwhile
        return False
