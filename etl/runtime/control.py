"""The local control endpoint of a running pipeline: metrics, status and taps.

`etl run` serves it over HTTP on 127.0.0.1 (a free port) and records its
address in a run file next to the checkpoint folder, where `etl tap` and
`etl top` find it:

* `GET /metrics`: Prometheus text (etl.runtime.metrics); `--metrics-port`
  serves the same text on a port of the user's choice (and nothing else);
* `GET /status`: the pipeline, its components and queries (JSON);
* `GET /tap?component=ID&limit=N&every=S[&dead=1]`: JSON lines, one per
  sampled row, as long as the client stays connected.

Sampling happens only while a tap is attached: after a micro-batch has been
written by every sink, `limit(N)` over the component's frame of that batch
(cached when several outputs read it), at most once every `every` seconds per
component and tap. The sinks' writes are over by then: what they receive never
changes.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from etl.secrets import redact
from etl.runtime.metrics import Metrics

log = logging.getLogger("etl.control")
HEARTBEAT = 1.0  # seconds between keep-alive lines of an idle tap (a closed client is noticed on write)


def run_file(checkpoint: str) -> Path:
    """Where a running pipeline records its control address: next to its checkpoint folder."""
    return Path(checkpoint).resolve().parent / "run.json"


@dataclass
class Tap:
    components: set[str]
    limit: int
    every: float
    dead: bool = False
    rows: queue.Queue[dict[str, Any]] = field(default_factory=lambda: queue.Queue(maxsize=10_000))
    last: dict[str, float] = field(default_factory=dict)

    def due(self, component: str, now: float) -> bool:
        return component in self.components and now - self.last.get(component, -1e18) >= self.every


class Control:
    """Metrics, taps and the HTTP server of one run. The runner calls `started`, `sink_result`, `sample`."""

    def __init__(self, pipeline: str, metrics_port: int | None = None, metrics_host: str = "127.0.0.1"):
        self.pipeline = pipeline
        self.metrics = Metrics(pipeline)
        self.metrics_port = metrics_port
        self.metrics_host = metrics_host
        self.taps: list[Tap] = []
        self.components: dict[str, str] = {}  # id -> kind
        self.tappable: set[str] = set()
        self.queries: list[str] = []
        self._lock = threading.Lock()
        self._servers: list[ThreadingHTTPServer] = []
        self._run_file: Path | None = None
        self.closed = threading.Event()
        self.address: str | None = None

    # ------------------------------------------------------------ lifecycle
    def start(self, checkpoint: str) -> None:
        """Serve the control endpoint (and the metrics port); record the address in the run file."""
        server = self._serve("127.0.0.1", 0, full=True)
        self.address = f"http://127.0.0.1:{server.server_address[1]}"
        if self.metrics_port is not None:
            self._serve(self.metrics_host, self.metrics_port, full=False)
        path = run_file(checkpoint)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(redact(json.dumps({"pipeline": self.pipeline, "address": self.address, "pid": os.getpid(),
                                              "started": datetime.datetime.now(datetime.UTC).isoformat()})))
            os.replace(tmp, path)
            self._run_file = path
        except OSError as e:
            log.warning("cannot write the run file %s (etl tap/top need --address): %s", path, e)

    def _serve(self, host: str, port: int, full: bool) -> ThreadingHTTPServer:
        control = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                url = urlparse(self.path)
                if url.path == "/metrics":
                    self._send(200, control.metrics.text(), "text/plain; version=0.0.4; charset=utf-8")
                elif full and url.path == "/status":
                    self._send(200, json.dumps(control.status()).encode(), "application/json")
                elif full and url.path == "/tap":
                    control._tap(self, parse_qs(url.query))
                else:
                    self._send(404, b"not found\n", "text/plain")

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                body = redacted(body)
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = ThreadingHTTPServer((host, port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name=f"etl-control-{port}", daemon=True).start()
        self._servers.append(server)
        return server

    def close(self) -> None:
        self.closed.set()
        if self._run_file is not None:
            try:
                self._run_file.unlink()
            except OSError:
                pass
        for s in self._servers:
            s.shutdown()
            s.server_close()

    # --------------------------------------------------------- runner hooks
    def started(self, graph: Any, queries: list[Any], progress: Any) -> None:
        self.components = {nid: n.kind for nid, n in graph.nodes.items()}
        self.queries = [q.name for q in queries]
        # what a micro-batch computes by itself: each query's root, the stages after it, its outputs (the stages
        # before a window or join run inside Spark's streaming plan, ahead of the state: not seen per batch)
        self.tappable = {c for q in queries for c in (q.root, *q.nodes, *(o.id for o in q.outputs))}
        self.metrics.bind(graph, queries)
        progress.observers.append(self.metrics.on_progress)

    def sink_result(self, component: str, result: Any) -> None:
        self.metrics.sink_result(component, result)

    def batch_counts(self, query: str, rows_out: dict[tuple[str, str | None], int]) -> None:
        self.metrics.rows_out(query, rows_out)

    def sample(self, query: Any, batch: Any, batch_id: int) -> None:
        """Rows of this micro-batch for the attached taps (after every sink has written it)."""
        if not self.taps:
            return
        now = time.monotonic()
        with self._lock:
            taps = list(self.taps)
        for tap in taps:
            for component in sorted(tap.components):
                if not tap.due(component, now):
                    continue
                frame = component_frame(query, batch, component, tap.dead)
                if frame is None:
                    continue
                tap.last[component] = now
                try:
                    rows = frame.limit(tap.limit).toArrow().to_pylist()
                except Exception as e:  # noqa: BLE001 - a tap never fails the run
                    log.debug("tap of %s: %s", component, e)
                    _put(tap, {"component": component, "error": str(e).splitlines()[0][:300]})
                    continue
                for row in rows:
                    _put(tap, {"component": component, "kind": "dead" if tap.dead else "out", "query": query.name,
                               "batch": batch_id, "row": row})

    # ---------------------------------------------------------------- views
    def status(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "pid": os.getpid(), "components": self.components,
                "tappable": sorted(self.tappable), "queries": self.queries, "taps": len(self.taps)}

    def _tap(self, handler: BaseHTTPRequestHandler, args: dict[str, list[str]]) -> None:
        wanted = set(args.get("component") or [])
        unknown = sorted(wanted - set(self.components))
        hidden = sorted(wanted - self.tappable - set(unknown))
        if unknown or hidden or not wanted:
            body = json.dumps({"error": "unknown component" if unknown else "not tappable" if hidden else
                               "no component", "unknown": unknown, "hidden": hidden,
                               "components": sorted(self.components), "tappable": sorted(self.tappable)}).encode()
            body = redacted(body)
            handler.send_response(404)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            return
        tap = Tap(wanted, max(1, int(args.get("limit", ["5"])[0])), max(0.0, float(args.get("every", ["1"])[0])),
                  dead=args.get("dead", ["0"])[0] in ("1", "true"))
        handler.send_response(200)
        handler.send_header("Content-Type", "application/x-ndjson")
        handler.end_headers()
        with self._lock:
            self.taps.append(tap)
        try:
            while not self.closed.is_set():
                try:
                    item = tap.rows.get(timeout=HEARTBEAT)
                    line = json.dumps(item, default=_json_value) + "\n"
                except queue.Empty:
                    line = "\n"
                handler.wfile.write(redacted(line.encode()))
                handler.wfile.flush()
        except OSError:  # the client went away
            pass
        finally:
            with self._lock:
                self.taps.remove(tap)


def component_frame(query: Any, batch: Any, component: str, dead: bool) -> Any:
    """The frame of `component` in this micro-batch of `query` (None when the query does not compute it): a
    sink's input as the sink got it, a source's or transform's output, or a stage's dead letters."""
    from pyspark.sql import functions as F

    from etl.compile import DEAD_LETTER
    from etl.compile.context import ERR, PAYLOAD

    built = getattr(batch, "built", {}) or {}
    if dead:
        node = built.get(component)
        if node is not None and node.dead is not None:
            return node.dead
        frame = batch.frames.get(DEAD_LETTER)
        return None if frame is None else frame.where(F.col("stage") == component)
    if component in batch.frames and any(o.id == component for o in query.outputs):
        frame = batch.frames[component]
        if frame is not None and component in batch.splits:  # a split write: the good rows only
            frame = frame.where(F.col(ERR).isNull()).drop(ERR, PAYLOAD)
        return frame
    node = built.get(component)
    if node is None:
        return None
    try:
        return node.output(None)
    except KeyError:  # labelled outputs only (route): every label's rows
        frames = list((node.outs or {}).values())
        out = frames[0] if frames else None
        for f in frames[1:]:
            out = out.unionByName(f, allowMissingColumns=True)
        return out


def redacted(body: bytes) -> bytes:
    """Every response body of the endpoint (metrics, status, taps, errors) passes here: values read from the
    environment become *** (etl.secrets)."""
    text = body.decode("utf-8", "replace")
    return (redact(text) or text).encode()


def _put(tap: Tap, item: dict[str, Any]) -> None:
    try:
        tap.rows.put_nowait(item)
    except queue.Full:  # a client that does not read: its rows are dropped, never the pipeline slowed
        pass


def _json_value(v: Any) -> Any:
    if isinstance(v, datetime.datetime):
        return v.isoformat().replace("+00:00", "Z")
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)
