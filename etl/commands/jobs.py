"""`etl jobs list|stop|start|restart|drain [NAME]`: operate the jobs of a running `etl serve FOLDER` through its
control endpoint (its run file FOLDER/.etl/@serve/run.json names the address and the token file).

Exit codes: 0 done, 1 refused (no such job, not running, the file does not validate) or no `etl serve` runs on
the folder, 2 usage error.
"""

from __future__ import annotations

import json
from typing import Any

import typer

from etl.commands import redact
from etl.commands.app import app
from etl.commands.serve import STATE
from etl.commands.tap import Endpoint, live_run, refused, token

OPERATIONS = ("list", "stop", "start", "restart", "drain")
COLUMNS = ("name", "state", "batches", "since", "file")


def table(jobs: list[dict[str, Any]]) -> list[str]:
    """The jobs as aligned columns (an invalid file's line has no name), each one's reason on the next line."""
    rows = [[str(j.get(c, "")) or "-" for c in COLUMNS] for j in jobs]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(COLUMNS)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(COLUMNS, widths, strict=True)).rstrip()]
    for j, r in zip(jobs, rows, strict=True):
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
        if j.get("reason"):
            lines.append(f"  {j['reason']}")
    return lines


@app.command()
def jobs(
    operation: str = typer.Argument("list", help="list, stop, start, restart or drain"),
    name: str | None = typer.Argument(None, help="the job (its pipeline's name); not with list"),
    folder: str = typer.Option(".", "--folder", help="the folder `etl serve` runs"),
    output: str = typer.Option("table", "--format", help="table or json"),
    timeout: float = typer.Option(300.0, "--timeout", min=1.0, help="seconds to wait for a stop or a start"),
) -> None:
    """List or operate the jobs of a running `etl serve` (stop, start, restart and drain one by name)."""
    from pathlib import Path
    from urllib.error import HTTPError, URLError

    if operation not in OPERATIONS:
        raise typer.BadParameter(f"expected one of: {', '.join(OPERATIONS)}", param_hint="OPERATION")
    if (operation == "list") != (name is None):
        raise typer.BadParameter("list takes no NAME; the others need one", param_hint="NAME")
    if output not in ("table", "json"):
        raise typer.BadParameter("expected table or json", param_hint="--format")
    where = Path(folder).resolve() / STATE / "run.json"
    info = live_run(where)
    if info is None:
        typer.echo(redact(f"etl jobs: no running `etl serve` of {Path(folder).resolve()} (no live run file "
                          f"{where})"), err=True)
        raise typer.Exit(1)
    endpoint = Endpoint(str(info["address"]), token("jobs", info.get("token_file")))
    path = "/jobs" if name is None else f"/jobs/{operation}?name={_quoted(name)}"
    try:
        with endpoint.open(path, timeout=timeout, method="GET" if name is None else "POST") as r:
            answer, code = json.loads(r.read()), 0
    except HTTPError as e:
        if e.code in (401, 403):
            refused("jobs", e)
        answer, code = json.loads(e.read() or b"{}"), 1
    except (URLError, OSError) as e:
        typer.echo(f"etl jobs: the serve process did not answer: {e}", err=True)
        raise typer.Exit(1) from None
    if output == "json":
        typer.echo(json.dumps(answer, indent=2))
    elif name is None:
        for line in table(answer["jobs"]):
            typer.echo(line)
    elif code:
        typer.echo(f"etl jobs: {operation} {name}: {answer.get('error')}", err=True)
        for line in answer.get("diagnostics", []):
            typer.echo(line, err=True)
    else:
        job = answer.get("job", {})
        typer.echo(f"etl jobs: {operation} {name}: {job.get('state')}")
    raise typer.Exit(code)


def _quoted(name: str) -> str:
    from urllib.parse import quote

    return quote(name, safe="")
