"""`etl tap PIPELINE [COMPONENT...]`: sample the rows flowing out of components of a running pipeline.

It attaches to the control endpoint of an `etl run` on this host (found through
the run file next to the pipeline's checkpoint folder) or at `--address`.
Exit codes: 0 when the pipeline stops (or --count rows were printed), 1 when no
running pipeline is found, 2 usage error (an unknown component).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode
from urllib.request import Request, urlopen

import typer

from etl.commands.app import app
from etl.commands import parse_vars, redact


@dataclass
class Endpoint:
    """The control endpoint of a running pipeline and the run's token (None: not known, every answer is 401)."""

    address: str
    token: str | None = None

    def open(self, path: str, timeout: float = 5.0, method: str = "GET") -> Any:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        data = b"" if method == "POST" else None
        return urlopen(Request(f"{self.address}{path}", data, headers, method=method), timeout=timeout)

    def get_json(self, path: str, timeout: float = 5.0) -> Any:
        with self.open(path, timeout) as r:
            return json.loads(r.read())


def resolve_address(command: str, path: str, address: str | None, checkpoint: str | None,
                    var: list[str] | None, token_file: str | None = None) -> Endpoint:
    """The control endpoint of the running pipeline: --address (with --token-file), else the run file `etl run`
    wrote and the token file it names."""
    if address:
        return Endpoint(address if "://" in address else f"http://{address}", token(command, token_file))
    from etl.check import check_file
    from etl.runtime.control import run_file

    checked = check_file(path, cli_vars=parse_vars(var))
    if checked.plan is None:
        for d in checked.report.sorted():
            typer.echo(redact(d.render()), err=True)
        raise typer.Exit(1)
    where = run_file(checkpoint or checked.plan.checkpoint)
    info = live_run(where)
    if info is None:
        typer.echo(redact(f"etl {command}: no running `etl run` of '{checked.plan.name}' on this host (no live "
                          f"run file {where})"), err=True)
        typer.echo("  hint: start it with `etl run`, pass --checkpoint if it runs with one, or --address HOST:PORT",
                   err=True)
        raise typer.Exit(1)
    return Endpoint(str(info["address"]), token(command, token_file or info.get("token_file")))


def live_run(where: Path) -> dict[str, Any] | None:
    """The run file `where` of a running `etl run` (its process alive), else None."""
    try:
        info = json.loads(where.read_text())
        os.kill(int(info["pid"]), 0)
        str(info["address"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info if isinstance(info, dict) else None


def token(command: str, path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return Path(path).read_text().strip()
    except OSError as e:
        typer.echo(redact(f"etl {command}: cannot read the run's token file {path}: {e.strerror or e}"), err=True)
        typer.echo("  hint: run etl as the user who started `etl run` (the file is readable by that user only)",
                   err=True)
        raise typer.Exit(1) from None


def refused(command: str, e: HTTPError) -> None:
    """A 401/403 of the control endpoint: one line, exit 1."""
    why = "no valid token (--token-file: the run's control.token)" if e.code == 401 else "a Host it does not serve"
    typer.echo(f"etl {command}: the run's control endpoint refused the request ({e.code}): {why}", err=True)
    raise typer.Exit(1)


def tap_lines(endpoint: Endpoint, components: list[str], limit: int, every: float,
              dead: bool) -> Iterator[dict[str, Any]]:
    query = urlencode([("component", c) for c in components] + [("limit", limit), ("every", every),
                                                                 ("dead", int(dead))])
    with endpoint.open(f"/tap?{query}", timeout=30) as r:
        for raw in r:
            line = raw.strip()
            yield json.loads(line) if line else {}  # a blank line: the server's heartbeat


@app.command()
def tap(
    path: str = typer.Argument(..., help="pipeline file (of a running `etl run`)"),
    components: list[str] | None = typer.Argument(None, help="component ids (default: every source and "
                                                     "transform a micro-batch computes)"),
    limit: int = typer.Option(5, "--limit", min=1, max=10_000, help="rows per component and sample"),
    every: float = typer.Option(1.0, "--every", min=0.0, max=86_400.0,
                                help="seconds between two samples of a component"),
    dead_letters: bool = typer.Option(False, "--dead-letters", help="sample the components' dead letters instead"),
    output: str = typer.Option("json", "--format", help="json (one line per row) or table"),
    count: int = typer.Option(0, "--count", min=0, help="stop after this many rows (0: until the pipeline stops)"),
    address: str | None = typer.Option(None, "--address", help="control address of the run (HOST:PORT)"),
    token_file: str | None = typer.Option(None, "--token-file", help="the run's token file (default: the one "
                                          "its run file names; needed with --address)"),
    checkpoint: str | None = typer.Option(None, "--checkpoint", help="checkpoint folder the run uses"),
    var: list[str] | None = typer.Option(None, "--var", help="template variable NAME=VALUE (repeatable)"),
) -> None:
    """Print a sample of the rows flowing out of components of a running pipeline (its sinks are unaffected)."""
    if output not in ("json", "table"):
        raise typer.BadParameter("expected json or table", param_hint="--format")
    addr = resolve_address("tap", path, address, checkpoint, var, token_file)
    wanted = list(components or [])
    try:
        status = _wait_for_queries(addr)
        if not wanted:
            kinds = status["components"]
            wanted = [c for c in status["tappable"] if kinds.get(c) != "sink"]
        printed = 0
        table: list[dict[str, Any]] = []  # rows of one sample (--format table prints them together)
        for item in tap_lines(addr, wanted, limit, every, dead_letters):
            if table and (not item or _key(item) != _key(table[0])):
                _table(table)
                table = []
            if not item:
                continue
            if "error" in item:
                typer.echo(redact(f"etl tap: {item['component']}: sampling failed: {item['error']}"), err=True)
                continue
            if output == "json":
                typer.echo(redact(json.dumps(item)))
            else:
                table.append(item)
            printed += 1
            if count and printed >= count:
                break
        if table:
            _table(table)
    except HTTPError as e:
        _tap_refused(e)
    except (URLError, ConnectionError, TimeoutError):
        pass  # the pipeline stopped
    except KeyboardInterrupt:
        pass
    sys.stdout.flush()


def _tap_refused(e: HTTPError) -> NoReturn:
    """The run refused the tap: why, on one line, and exit 2."""
    if e.code in (401, 403):
        refused("tap", e)
    body = json.loads(e.read() or b"{}")
    if e.code == 400:
        typer.echo(f"etl tap: the run refused {body.get('parameter')}: expected {body.get('expected')}", err=True)
        raise typer.Exit(2) from None
    bad = body.get("unknown") or body.get("hidden") or []
    if body.get("unknown"):
        msg = f"unknown component {', '.join(map(repr, bad))}; components: {', '.join(body['components'])}"
    else:
        msg = (f"{', '.join(map(repr, bad))} run inside Spark's streaming plan (before a window or join's "
               f"state) and are not seen per micro-batch; tappable: {', '.join(body.get('tappable', []))}")
    typer.echo(redact(f"etl tap: {msg}"), err=True)
    raise typer.Exit(2) from None


def _wait_for_queries(addr: Endpoint, timeout: float = 120.0) -> dict[str, Any]:
    """/status once the run has compiled its queries (a tap attached at start waits for them)."""
    deadline = time.monotonic() + timeout
    while True:
        status = addr.get_json("/status")
        if status.get("queries") or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


def _key(item: dict[str, Any]) -> tuple[Any, ...]:
    return item.get("component"), item.get("kind"), item.get("query"), item.get("batch")


def _table(items: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    first = items[0]
    columns = list(dict.fromkeys(k for it in items for k in it["row"]))
    t = Table(title=redact(f"{first['component']} ({first['kind']}) batch {first['batch']}"), title_justify="left")
    for k in columns:
        t.add_column(redact(str(k)))
    for it in items:
        t.add_row(*(redact("" if it["row"].get(k) is None else str(it["row"][k])) for k in columns))
    Console(file=sys.stdout, soft_wrap=True).print(t)
