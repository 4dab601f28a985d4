"""`etl tap` against a fake control endpoint: rows of one sample print as one table; an unknown component and a
stage inside a window's streaming plan are refused (exit 2) with what can be tapped; no run file is exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.unit import fake_control

ROOT = Path(__file__).resolve().parents[2]
STATUS = {"pipeline": "demo", "components": {"src": "source", "pages": "transform", "typed": "transform",
                                             "out": "sink"}, "tappable": ["out", "pages", "src"], "queries": ["src"]}
ROWS = [{"component": "pages", "kind": "out", "query": "src", "batch": 3, "row": {"user": "u1", "n": 1}},
        {"component": "pages", "kind": "out", "query": "src", "batch": 3, "row": {"user": "u2", "n": None}},
        {"component": "pages", "kind": "out", "query": "src", "batch": 4, "row": {"user": "u3", "n": 3}}]


def respond(path: str) -> tuple[int, bytes]:
    if path == "/status":
        return 200, json.dumps(STATUS).encode()
    if "component=pages" in path and "limit=2" in path:
        return 200, b"".join(json.dumps(r).encode() + b"\n" for r in ROWS) + b"\n"
    return 404, json.dumps({"error": "x", "unknown": ["nope"] if "nope" in path else [],
                            "hidden": ["typed"] if "typed" in path else [],
                            "components": sorted(STATUS["components"]), "tappable": STATUS["tappable"]}).encode()


def etl(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "etl", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def test_tap_prints_each_sample_as_a_table_and_refuses_what_it_cannot_tap(tmp_path):
    server = fake_control.serve(respond)
    addr = f"127.0.0.1:{server.server_address[1]}"
    try:
        r = etl("tap", "unused.yaml", "pages", "--address", addr, "--limit", "2", "--format", "table")
        bad = etl("tap", "unused.yaml", "nope", "--address", addr)
        hidden = etl("tap", "unused.yaml", "typed", "--address", addr)
    finally:
        server.shutdown()
    assert r.returncode == 0, r.stderr
    lines = [ln.strip() for ln in r.stdout.splitlines() if ln.strip()]
    assert lines[0] == "pages (out) batch 3" and lines[4] == "│ u1   │ 1 │" and lines[5] == "│ u2   │   │"
    assert lines[7] == "pages (out) batch 4" and lines[11] == "│ u3   │ 3 │"
    assert bad.returncode == 2
    assert bad.stderr.strip() == "etl tap: unknown component 'nope'; components: out, pages, src, typed"
    assert hidden.returncode == 2
    assert hidden.stderr.strip() == ("etl tap: 'typed' run inside Spark's streaming plan (before a window or join's "
                                     "state) and are not seen per micro-batch; tappable: out, pages, src")
    (tmp_path / "p.yaml").write_text("name: p\nsources: [{id: s, type: file, path: in, format: text}]\n"
                                     "sinks: [{id: o, type: print, input: s}]\ncheckpoint: state\n")
    none = etl("tap", "p.yaml", cwd=tmp_path)
    assert none.returncode == 1
    assert none.stderr.splitlines()[0] == (f"etl tap: no running `etl run` of 'p' on this host (no live run file "
                                           f"{tmp_path / 'run.json'})")
