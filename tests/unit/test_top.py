"""`etl top` in a pseudo-terminal against a fake control endpoint serving recorded metrics: its rows (a source, a
transform, sinks) show the totals, the rates over the last interval, sink flush times, retries, batches, dead letters, watermark, lag and
state rows of the second scrape."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

from etl.graph.model import Edge
from etl.runtime.metrics import Metrics
from tests.unit import fake_control

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|\][^\x07]*\x07|[()][A-Z0-9])")


def recorded() -> list[bytes]:
    """Two scrapes of a run: the second after a batch of 1,000 rows (4 dead letters, a 2-attempt write)."""
    m = Metrics("demo")
    nodes = {"src": SimpleNamespace(id="src", kind="source", inputs=[]),
             "keep": SimpleNamespace(id="keep", kind="transform", inputs=[Edge("src", "keep")])}
    m.bind(SimpleNamespace(nodes=nodes, upstream_sources=lambda _: []),
           [SimpleNamespace(name="src", root="src", outputs=[SimpleNamespace(id="out"), SimpleNamespace(id="dead_letter")],
                            counted=("keep",))])
    batch = {"numInputRows": 500, "timestamp": "2026-01-10T12:00:40.000Z", "durationMs": {"triggerExecution": 800},
             "eventTime": {"watermark": "2026-01-10T12:00:30.000Z"}, "stateOperators": [{"numRowsTotal": 12}]}
    m.on_progress("src", {**batch, "batchId": 0}, dead_letters=1)
    m.rows_out("src", {("keep", None): 499})
    m.sink_result("out", SimpleNamespace(rows=499, retries=0, seconds=0.1, skipped=False))
    first = m.text()
    m.on_progress("src", {**batch, "batchId": 1, "numInputRows": 1000, "durationMs": {"triggerExecution": 1200},
                          "timestamp": "2026-01-10T12:01:00.000Z", "stateOperators": [{"numRowsTotal": 30}]},
                  dead_letters=4)
    m.rows_out("src", {("keep", None): 996})
    m.sink_result("out", SimpleNamespace(rows=996, retries=1, seconds=0.3, skipped=False))
    m.sink_result("dead_letter", SimpleNamespace(rows=4, retries=0, seconds=0.02, skipped=False))
    return [first, m.text()]


def serve(snapshots: list[bytes]) -> ThreadingHTTPServer:
    scrapes = {"n": 0}

    def respond(path: str) -> tuple[int, bytes]:
        if path == "/status":
            return 200, json.dumps({"components": {"src": "source", "keep": "transform", "out": "sink"}}).encode()
        scrapes["n"] += 1
        return 200, snapshots[min(scrapes["n"] - 1, len(snapshots) - 1)]

    return fake_control.serve(respond)


def run_in_pty(args: list[str], timeout: float = 60.0) -> str:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    p = subprocess.Popen([sys.executable, "-m", "etl", *args], stdin=slave, stdout=slave, stderr=slave, env=env,
                         close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    p.wait(timeout=10)
    os.close(master)
    assert p.returncode == 0, out.decode(errors="replace")[-2000:]
    return ANSI.sub("", out.decode(errors="replace"))


def table(screen: str, title: str) -> dict[str, list[str]]:
    """The rows (first cell -> cells) of the last drawing of the table titled `title`."""
    lines = screen.splitlines()
    start = max(i for i, ln in enumerate(lines) if ln.strip() == title)
    rows: dict[str, list[str]] = {}
    for ln in lines[start + 1:]:
        if ln.strip() in ("components", "queries"):
            break
        if ln.strip()[:1] in ("│", "┃"):
            c = [x.strip() for x in re.split("[│┃]", ln.strip().strip("│┃"))]
            rows[c[0]] = c
    return rows


def test_top_in_a_terminal_shows_rates_and_totals_per_component_and_query():
    server = serve(recorded())
    try:
        t0 = time.monotonic()
        screen = run_in_pty(["top", "unused.yaml", "--address", f"127.0.0.1:{server.server_address[1]}",
                             "--interval", "0.5", "--iterations", "2"])
        elapsed = time.monotonic() - t0
    finally:
        server.shutdown()
    comp = table(screen, "components")
    assert list(comp) == ["component", "src", "keep", "dead_letter", "out"]
    assert comp["component"] == ["component", "kind", "in/s", "out/s", "in", "out", "flush ms", "retries"]
    src, out, dead = comp["src"], comp["out"], comp["dead_letter"]
    assert src[:2] == ["src", "source"] and src[4:] == ["1,500", "1,500", "-", "-"]
    assert 1000 / elapsed <= float(src[2].replace(",", "")) <= 1000 / 0.5  # 1,000 rows in one interval
    keep = comp["keep"]  # a transform: rows in are its input's rows out
    assert keep[:2] == ["keep", "transform"] and keep[4:] == ["1,500", "1,495", "-", "-"]
    assert 1000 / elapsed <= float(keep[2].replace(",", "")) <= 1000 / 0.5
    assert 996 / elapsed <= float(keep[3].replace(",", "")) <= 996 / 0.5
    assert out[:2] == ["out", "sink"] and out[4:] == ["1,495", "1,495", "300", "1"]
    assert 996 / elapsed <= float(out[3].replace(",", "")) <= 996 / 0.5
    assert dead[:2] == ["dead_letter", "sink"] and dead[4:] == ["4", "4", "20", "0"]
    queries = table(screen, "queries")
    assert queries["query"] == ["query", "batches", "in/s", "batch ms", "dead letters", "watermark", "lag s",
                                "state rows"]
    q = queries["src"]
    assert q[:2] == ["src", "2"] and q[3:] == ["1,200", "5", "2026-01-10 12:00:30", "30.0", "30"]
    assert 1000 / elapsed <= float(q[2].replace(",", "")) <= 1000 / 0.5
