"""Progress of running queries: one record per micro-batch, shown live, as lines or as JSON.

Spark's StreamingQueryListener gives input rows, rates, watermark, state rows
and durations; the sinks' own counts (rows written, dead letters, replays
skipped) are recorded by the foreachBatch wrapper just before. Everything goes
to standard error, so print sinks own standard output.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, TextIO
from collections.abc import Callable

from etl.secrets import redact

DEAD = "dead_letter"


@dataclass
class BatchRecord:
    pipeline: str
    query: str
    batch: int
    input_rows: int = 0
    input_rows_per_s: float = 0.0
    processed_rows_per_s: float = 0.0
    written: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # sinks that ignored a replayed batch
    dead_letters: int = 0
    watermark: str | None = None
    state_rows: int = 0
    duration_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "query": self.query, "batch": self.batch,
                "input_rows": self.input_rows, "input_rows_per_s": round(self.input_rows_per_s, 1),
                "processed_rows_per_s": round(self.processed_rows_per_s, 1), "written": self.written,
                "skipped": self.skipped, "dead_letters": self.dead_letters, "watermark": self.watermark,
                "state_rows": self.state_rows, "duration_ms": self.duration_ms}


class Progress:
    """Collects per-batch records; renders them according to `mode` (live, plain, json, none)."""

    def __init__(self, pipeline: str, mode: str = "live", stream: TextIO | None = None):
        self.pipeline = pipeline
        self.stream = stream or sys.stderr
        if mode == "live" and not (hasattr(self.stream, "isatty") and self.stream.isatty()):
            mode = "plain"
        self.mode = mode
        self.records: list[BatchRecord] = []
        self.totals: dict[str, dict[str, int]] = {}  # query -> {"input", sink ids..., dead_letter}
        self.latest: dict[str, BatchRecord] = {}
        self._sink_counts: dict[tuple[str, int], tuple[dict[str, int], list[str]]] = {}
        # query -> the sink Spark's own sink writes for it (real-time mode): its rows written are Spark's count
        self.spark_sinks: dict[str, str] = {}
        self._lock = threading.Lock()
        self._live: Any = None
        self._console: Any = None
        self.observers: list[Callable[[str, dict[str, Any], int], None]] = []  # (query, progress, dead letters)

    # -------------------------------------------------------------- lifecycle
    def __enter__(self) -> Progress:
        if self.mode == "live":
            from rich.console import Console
            from rich.live import Live

            self._console = Console(file=self.stream)
            self._live = Live(self._table(), console=self._console, refresh_per_second=4, transient=False)
            self._live.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.update(self._table())
            self._live.stop()
            self._live = None

    def echo(self) -> Callable[[str], None] | None:
        """Where print sinks write while the live view is up (above it); None = plain stdout."""
        if self._live is None:
            return None
        console = self._live.console

        def out(text: str) -> None:
            console.print(text, markup=False, highlight=False, soft_wrap=True)

        return out

    # ------------------------------------------------------------- recording
    def sink_counts(self, query: str, batch: int, written: dict[str, int], skipped: list[str]) -> None:
        with self._lock:
            self._sink_counts[(query, batch)] = (written, skipped)

    def on_progress(self, p: dict[str, Any]) -> None:
        name = p.get("name") or ""
        query = name.split("/", 1)[1] if "/" in name else name
        batch = int(p.get("batchId", -1))
        with self._lock:
            written, skipped = self._sink_counts.pop((query, batch), ({}, []))
            if query in self.spark_sinks and int((p.get("sink") or {}).get("numOutputRows", -1)) >= 0:
                written = {self.spark_sinks[query]: int(p["sink"]["numOutputRows"])}
            rec = BatchRecord(
                self.pipeline, query, batch,
                input_rows=int(p.get("numInputRows") or 0),
                input_rows_per_s=float(p.get("inputRowsPerSecond") or 0.0),
                processed_rows_per_s=float(p.get("processedRowsPerSecond") or 0.0),
                written={k: v for k, v in written.items() if k != DEAD},
                skipped=skipped, dead_letters=written.get(DEAD, 0),
                watermark=(p.get("eventTime") or {}).get("watermark"),
                state_rows=sum(int(s.get("numRowsTotal") or 0) for s in p.get("stateOperators") or []),
                duration_ms=int((p.get("durationMs") or {}).get("triggerExecution") or 0))
            if rec.input_rows == 0 and not written and rec.batch in [r.batch for r in self.records if r.query == query]:
                return
            for observe in self.observers:  # etl.runtime.metrics
                observe(query, p, rec.dead_letters)
            self.records.append(rec)
            self.latest[query] = rec
            tot = self.totals.setdefault(query, {"input": 0, DEAD: 0})
            tot["input"] += rec.input_rows
            tot[DEAD] += rec.dead_letters
            for k, v in rec.written.items():
                tot[k] = tot.get(k, 0) + v
        self._render(rec)

    # ------------------------------------------------------------- rendering
    def _render(self, rec: BatchRecord) -> None:
        if self.mode == "json":
            self.stream.write(redact(json.dumps(rec.to_json())) + "\n")
            self.stream.flush()
        elif self.mode == "plain":
            sinks = " ".join(f"{k}={v}" for k, v in rec.written.items()) or "-"
            extra = f" skipped(replay)={','.join(rec.skipped)}" if rec.skipped else ""
            wm = f" watermark={rec.watermark}" if rec.watermark and not rec.watermark.startswith("1970") else ""
            self.stream.write(redact(
                f"[{time.strftime('%H:%M:%S')}] {rec.query} batch {rec.batch}: in={rec.input_rows} "
                f"({rec.input_rows_per_s:.0f} rows/s) written: {sinks} dead_letters={rec.dead_letters}"
                f"{wm} state_rows={rec.state_rows} {rec.duration_ms} ms{extra}\n"))
            self.stream.flush()
        elif self.mode == "live" and self._live is not None:
            self._live.update(self._table())

    def _table(self) -> Any:
        from rich.table import Table

        t = Table(title=redact(f"etl run {self.pipeline}"), title_justify="left")
        for c in ("query", "batch", "input rows", "rows/s", "written (total)", "dead letters", "watermark",
                  "state rows", "batch ms"):
            t.add_column(c, justify="right" if c not in ("query", "written (total)", "watermark") else "left")
        with self._lock:
            for q, rec in self.latest.items():
                tot = self.totals.get(q, {})
                written = ", ".join(f"{k}={v}" for k, v in tot.items() if k not in ("input", DEAD)) or "-"
                wm = rec.watermark if rec.watermark and not rec.watermark.startswith("1970") else "-"
                t.add_row(redact(q), str(rec.batch), f"{rec.input_rows} ({tot.get('input', 0)})",
                          f"{rec.processed_rows_per_s:,.0f}", redact(written), str(tot.get(DEAD, 0)), wm,
                          str(rec.state_rows), str(rec.duration_ms))
        return t

    def summary(self) -> str:
        with self._lock:
            parts = []
            for q, tot in self.totals.items():
                written = ", ".join(f"{k}={v}" for k, v in tot.items() if k not in ("input", DEAD)) or "nothing"
                parts.append(f"{q}: read {tot.get('input', 0)} rows, wrote {written}, dead letters {tot.get(DEAD, 0)}")
            return "; ".join(parts) if parts else "no batches"


def make_listener(progress: Progress, names: set[str]) -> Any:
    """A StreamingQueryListener forwarding the progress of our queries (by name) to `progress`."""
    from pyspark.sql.streaming import StreamingQueryListener

    class _Listener(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            p = event.progress
            if p.name in names:
                progress.on_progress(json.loads(p.json))

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    return _Listener()
