"""`etl top PIPELINE`: a live view of a running pipeline, per component and per query.

It reads the run's Prometheus metrics from its control endpoint (the same text
`--metrics-port` serves; etl.runtime.metrics) every `--interval` seconds;
rates are the counters' change over the last interval.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.error import HTTPError, URLError

import typer

from etl.commands.app import app
from etl.commands import redact
from etl.commands.tap import refused, resolve_address

Sample = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Sample:
    from prometheus_client.parser import text_string_to_metric_families

    return {(s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "pipeline"))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def by(sample: Sample, name: str, label: str) -> dict[str, float]:
    return {dict(labels)[label]: v for (n, labels), v in sample.items() if n == name and label in dict(labels)
            and len(labels) == 1}


@dataclass
class View:
    """Two consecutive scrapes and the time between them."""

    now: Sample
    before: Sample = field(default_factory=dict)
    seconds: float = 0.0
    kinds: dict[str, str] = field(default_factory=dict)

    def rate(self, name: str, label: str, key: str) -> str:
        if not self.before or self.seconds <= 0:
            return "-"
        cur, prev = by(self.now, name, label).get(key, 0.0), by(self.before, name, label).get(key, 0.0)
        return f"{(cur - prev) / self.seconds:,.0f}"

    def mean_ms(self, name: str, label: str, key: str) -> str:
        """Mean of a histogram over the last interval (over the whole run when nothing was observed in it)."""
        s, c = by(self.now, f"{name}_sum", label).get(key, 0.0), by(self.now, f"{name}_count", label).get(key, 0.0)
        ps, pc = by(self.before, f"{name}_sum", label).get(key, 0.0), by(self.before, f"{name}_count", label).get(key, 0.0)
        if c - pc > 0:
            return f"{(s - ps) / (c - pc) * 1000:,.0f}"
        return f"{s / c * 1000:,.0f}" if c else "-"

    def tables(self) -> list[Any]:
        comp = _table("components", ("component", "kind", "in/s", "out/s", "in", "out", "flush ms", "retries"), 2)
        rows_in = by(self.now, "etl_component_rows_in_total", "component")
        rows_out = by(self.now, "etl_component_rows_out_total", "component")
        retries = by(self.now, "etl_sink_retries_total", "component")
        for c in sorted(rows_in, key=lambda c: (_order(self.kinds.get(c, "sink")), c)):
            kind = self.kinds.get(c, "sink" if c in retries else "-")
            comp.add_row(redact(c), kind, self.rate("etl_component_rows_in_total", "component", c),
                         self.rate("etl_component_rows_out_total", "component", c), f"{rows_in[c]:,.0f}",
                         f"{rows_out.get(c, 0):,.0f}",
                         self.mean_ms("etl_sink_flush_seconds", "component", c) if c in retries else "-",
                         f"{retries[c]:,.0f}" if c in retries else "-")
        queries = _table("queries", ("query", "batches", "in/s", "batch ms", "dead letters", "watermark", "lag s",
                                     "state rows"), 1, "watermark")
        batches = by(self.now, "etl_batches_total", "query")
        dead = by(self.now, "etl_dead_letters_total", "query")
        wm = by(self.now, "etl_watermark_seconds", "query")
        lag = by(self.now, "etl_watermark_lag_seconds", "query")
        state = by(self.now, "etl_state_rows", "query")
        for q in sorted(batches):
            mark = datetime.datetime.fromtimestamp(wm[q], datetime.UTC).strftime("%Y-%m-%d %H:%M:%S") \
                if q in wm else "-"
            queries.add_row(redact(q), f"{batches[q]:,.0f}", self.rate("etl_query_input_rows_total", "query", q),
                            self.mean_ms("etl_batch_duration_seconds", "query", q), f"{dead.get(q, 0):,.0f}", mark,
                            f"{lag[q]:,.1f}" if q in lag else "-", f"{state.get(q, 0):,.0f}")
        return [comp, queries]


def _table(title: str, columns: tuple[str, ...], left: int, *also_left: str) -> Any:
    """A table whose first `left` columns (and `also_left`) are left-aligned, the numbers right-aligned."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i < left or c in also_left else "right")
    return t


def _order(kind: str) -> int:
    return {"source": 0, "transform": 1, "sink": 2}.get(kind, 3)


@app.command()
def top(
    path: str = typer.Argument(..., help="pipeline file (of a running `etl run`)"),
    interval: float = typer.Option(1.0, "--interval", min=0.1, help="seconds between two refreshes"),
    iterations: int = typer.Option(0, "--iterations", min=0, help="stop after this many refreshes (0: until "
                                   "Ctrl-C or the pipeline stops)"),
    address: str | None = typer.Option(None, "--address", help="control address of the run (HOST:PORT)"),
    token_file: str | None = typer.Option(None, "--token-file", help="the run's token file (default: the one "
                                          "its run file names; needed with --address)"),
    checkpoint: str | None = typer.Option(None, "--checkpoint", help="checkpoint folder the run uses"),
    var: list[str] | None = typer.Option(None, "--var", help="template variable NAME=VALUE (repeatable)"),
) -> None:
    """Live rates per component (rows in/out, sink flush time, retries) and per query (batches, duration,
    dead letters, watermark and its lag, state rows) of a running pipeline."""
    from rich.console import Console, Group
    from rich.live import Live

    addr = resolve_address("top", path, address, checkpoint, var, token_file)
    try:
        kinds = addr.get_json("/status").get("components", {})
    except HTTPError as e:
        if e.code in (401, 403):
            refused("top", e)
        kinds = {}  # an endpoint serving the metrics only
    except (URLError, ValueError, OSError):  # an endpoint serving the metrics only
        kinds = {}
    console = Console()
    view: View | None = None
    view_time = 0.0
    seen = 0
    try:
        with Live(console=console, refresh_per_second=4, transient=False) as live:
            while True:
                t = time.monotonic()
                try:
                    with addr.open("/metrics") as r:
                        text = r.read().decode()
                except HTTPError as e:
                    if e.code in (401, 403):
                        live.stop()
                        refused("top", e)
                    break
                except (URLError, OSError):
                    break  # the pipeline stopped
                now = parse(text)
                view = View(now, view.now, t - view_time, kinds) if view is not None else View(now, kinds=kinds)
                view_time = t
                live.update(Group(*view.tables()), refresh=True)
                seen += 1
                if iterations and seen >= iterations:
                    break
                time.sleep(max(0.0, interval - (time.monotonic() - t)))
    except KeyboardInterrupt:
        pass
