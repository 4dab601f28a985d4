"""The local control endpoint of a running pipeline: metrics, status and taps.

`etl run` serves it over HTTP on 127.0.0.1 (a free port) and records its
address in a run file next to the checkpoint folder, where `etl tap` and
`etl top` find it:

* `GET /metrics`: Prometheus text (etl.runtime.metrics); `--metrics-port`
  serves the same text on a port of the user's choice (and nothing else);
* `GET /status`: the pipeline, its components and queries (JSON);
* `GET /tap?component=ID&limit=N&every=S[&dead=1]`: JSON lines, one per
  sampled row, as long as the client stays connected;
* `POST /drain`: drain the run (`etl drain`; etl/runtime/draining.py);
* `etl serve` only: `GET /jobs` (the jobs and their states), `POST /jobs/OP?name=NAME` with OP stop, start,
  restart or drain (`etl jobs`; etl/runtime/jobs.py).

Every request needs the run's token (`Authorization: Bearer TOKEN`; a random
one per run, in the 0600 token file beside the run file, compared in constant
time): without it the answer is 401 and no data. On 127.0.0.1 the Host header
must name 127.0.0.1, localhost or [::1] with the server's port (403 otherwise:
a web page's script reaching the port through DNS rebinding sends its own).
A malformed query parameter is a 400 answer naming it.

Sampling happens only while a tap is attached: after a micro-batch has been
written by every sink, `limit(N)` over the component's frame of that batch
(cached when several outputs read it), at most once every `every` seconds per
component and tap. The sinks' writes are over by then: what they receive never
changes.
"""

from __future__ import annotations

import contextlib
import datetime
import hmac
import json
import logging
import math
import os
import queue
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from etl.compile import DEAD_LETTER
from etl.compile.context import ERR, PAYLOAD
from etl.compile.unions import union_by_name
from etl.runtime.metrics import Metrics
from etl.runtime.statedir import write_private
from etl.secrets import redact

log = logging.getLogger("etl.control")
HEARTBEAT = 1.0  # seconds between keep-alive lines of an idle tap (a closed client is noticed on write)


def run_file(checkpoint: str) -> Path:
    """Where a running pipeline records its control address: next to its checkpoint folder."""
    return Path(checkpoint).resolve().parent / "run.json"


def token_file(checkpoint: str) -> Path:
    """The run's control token (0600), beside its run file: `etl tap/top/drain` and Prometheus read it."""
    return Path(checkpoint).resolve().parent / "control.token"


LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


class BadParameter(ValueError):
    def __init__(self, name: str, expected: str):
        super().__init__(f"{name}: expected {expected}")
        self.name, self.expected = name, expected


def number(args: dict[str, list[str]], name: str, default: str, kind: type, least: float, most: float) -> Any:
    """A query parameter as `kind` (int or float) within [least, most]; BadParameter otherwise."""
    try:
        value = kind(args.get(name, [default])[0])
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or not least <= value <= most:
        raise BadParameter(name, f"{'an integer' if kind is int else 'a number'} from {least:g} to {most:g}")
    return value


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
        self.token = secrets.token_urlsafe(32)
        self._token_file: Path | None = None
        self.on_drain: Any = None  # called by POST /drain (the runner's request_drain)
        self.jobs: Any = None  # etl serve's etl.runtime.jobs.JobSet: GET /jobs, POST /jobs/OP?name=NAME

    # ------------------------------------------------------------ lifecycle
    def start(self, checkpoint: str) -> None:
        """Serve the control endpoint (and the metrics port); record the address in the run file."""
        server = self._serve("127.0.0.1", 0, full=True)
        self.address = f"http://127.0.0.1:{server.server_address[1]}"
        if self.metrics_port is not None:
            self._serve(self.metrics_host, self.metrics_port, full=False)
        path, token = run_file(checkpoint), token_file(checkpoint)
        try:
            write_private(token, self.token)
            self._token_file = token
            write_private(path, redact(json.dumps({"pipeline": self.pipeline, "address": self.address,
                                                   "pid": os.getpid(), "token_file": str(token),
                                                   "started": datetime.datetime.now(datetime.UTC).isoformat()})))
            self._run_file = path
        except OSError as e:
            log.warning("cannot write the run file %s (etl tap/top need --address): %s", path, e)

    def _serve(self, host: str, port: int, full: bool) -> ThreadingHTTPServer:
        control = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _admitted(self) -> bool:
                """The request carries the token and a loopback Host (else it is answered 401/403 here)."""
                refused = control.refused(self.headers, host, self.server.server_address[1])  # type: ignore[index,arg-type]  # TCP: (host, port)
                if refused:
                    self._send(refused, b"unauthorized\n" if refused == 401 else b"forbidden\n", "text/plain",
                               {"WWW-Authenticate": 'Bearer realm="etl"'} if refused == 401 else {})
                return not refused

            def do_GET(self) -> None:
                if not self._admitted():
                    return
                url = urlparse(self.path)
                if url.path == "/metrics":
                    self._send(200, control.metrics.text(), "text/plain; version=0.0.4; charset=utf-8")
                elif full and url.path == "/status":
                    self._send(200, json.dumps(control.status()).encode(), "application/json")
                elif full and url.path == "/tap":
                    try:
                        control._tap(self, parse_qs(url.query))
                    except BadParameter as e:
                        self._send(400, json.dumps({"error": "bad parameter", "parameter": e.name,
                                                    "expected": e.expected}).encode(), "application/json")
                else:
                    self._send(*control.other("GET", url, full))

            def do_POST(self) -> None:
                if not self._admitted():
                    return
                url = urlparse(self.path)
                if full and url.path == "/drain" and control.on_drain is not None:
                    control.on_drain()
                    self._send(202, b'{"draining": true}', "application/json")
                else:
                    self._send(*control.other("POST", url, full))

            def _send(self, code: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
                body = redacted(body)
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = Server((host, port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name=f"etl-control-{port}", daemon=True).start()
        self._servers.append(server)
        return server

    def other(self, method: str, url: Any, full: bool) -> tuple[int, bytes, str]:
        """The answer to a request the routes above do not take: `etl serve`'s jobs (GET /jobs, POST
        /jobs/OP?name=NAME), else 404."""
        if full and self.jobs is not None and method == "GET" and url.path == "/jobs":
            return 200, json.dumps({"jobs": self.jobs.listing()}).encode(), "application/json"
        if full and self.jobs is not None and method == "POST" and url.path.startswith("/jobs/"):
            code, answer = self.jobs.act(url.path[len("/jobs/"):], parse_qs(url.query).get("name", [""])[0])
            return code, json.dumps(answer).encode(), "application/json"
        return 404, b"not found\n", "text/plain"

    def refused(self, headers: Any, host: str, port: int) -> int:
        """0 when a request may be answered: its Host header names this loopback server (any, on an address
        other than loopback: scraped from other machines) and it carries the run's token; else 403 or 401."""
        if host in ("127.0.0.1", "::1", "localhost") and headers.get("Host", "") not in \
                {f"{h}:{port}" for h in LOOPBACK}:
            return 403
        given = headers.get("Authorization", "")
        scheme, _, token = given.partition(" ")
        ok = scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self.token.encode())
        return 0 if ok else 401

    def close(self) -> None:
        self.closed.set()
        for f in (self._run_file, self._token_file):
            if f is not None:
                with contextlib.suppress(OSError):
                    f.unlink()
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
        limit = number(args, "limit", "5", int, 1, 10_000)  # (a tap's queue holds 10,000 rows)
        every = number(args, "every", "1", float, 0, 86_400)
        tap = Tap(wanted, limit, every, dead=args.get("dead", ["0"])[0] in ("1", "true"))
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


class Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A request that failed is logged (debug), never a traceback on the run's console."""
        log.debug("control request from %s failed", client_address, exc_info=True)


def component_frame(query: Any, batch: Any, component: str, dead: bool) -> Any:
    """The frame of `component` in this micro-batch of `query` (None when the query does not compute it): a
    sink's input as the sink got it, a source's or transform's output, or a stage's dead letters."""
    from pyspark.sql import functions as F

    built = getattr(batch, "built", {}) or {}
    if dead:
        node = built.get(component)
        if node is not None and node.dead is not None:
            if component in getattr(batch, "carried", {}):  # a stage carrying its source's dead letters: its own
                return node.dead.where(F.col("stage") == component)
            return node.dead
        frame = batch.frame(DEAD_LETTER)
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
        return union_by_name(frames) if frames else None


def redacted(body: bytes) -> bytes:
    """Every response body of the endpoint (metrics, status, taps, errors) passes here: values read from the
    environment become *** (etl.secrets)."""
    text = body.decode("utf-8", "replace")
    return (redact(text) or text).encode()


def _put(tap: Tap, item: dict[str, Any]) -> None:
    try:  # noqa: SIM105 - once per row: cheaper than contextlib.suppress
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
