"""The control endpoint of a run (etl/runtime/control.py) without Spark: the token file is the owner's only,
every endpoint answers 401 and no data without the run's bearer token, a Host header other than the loopback
names with the right port is refused (403: DNS rebinding), a malformed /tap parameter is a 400 naming it, and the
console gets no traceback; `etl run --metrics-port` outside 1..65535 is a usage error, never an OverflowError."""

from __future__ import annotations

import http.client
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from etl.runtime import statedir
from etl.runtime.control import Control, run_file, token_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def control(tmp_path):
    c = Control("p", metrics_port=None)
    with statedir.private():
        c.start(str(tmp_path / "state" / "checkpoint"))
    c.components, c.tappable = {"src": "source"}, {"src"}
    yield c
    c.close()


def get(c: Control, path: str, token: str | None = None, host: str | None = None) -> tuple[int, bytes]:
    port = int(c.address.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    headers = {"Host": f"127.0.0.1:{port}" if host is None else host}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    conn.request("GET", path, headers=headers)
    r = conn.getresponse()
    return r.status, r.read()


def test_the_token_file_and_run_file_are_the_owners_only_and_go_with_the_run(tmp_path):
    c = Control("p")
    with statedir.private():
        c.start(str(tmp_path / "state" / "checkpoint"))
    tok, run = token_file(str(tmp_path / "state" / "checkpoint")), run_file(str(tmp_path / "state" / "checkpoint"))
    assert tok.read_text() == c.token and len(c.token) >= 40
    assert json.loads(run.read_text())["token_file"] == str(tok)
    assert [stat.S_IMODE(p.stat().st_mode) for p in (tok, run)] == [0o600, 0o600]
    c.close()
    assert not tok.exists() and not run.exists()


def test_no_token_no_data(control):
    for path in ("/status", "/metrics", "/tap?component=src", "/nope"):
        for token in (None, "", "x" * len(control.token), control.token[:-1]):
            assert get(control, path, token) == (401, b"unauthorized\n"), (path, token)
    port = int(control.address.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)  # another scheme with the right token
    conn.request("GET", "/status", headers={"Authorization": f"Basic {control.token}"})
    assert conn.getresponse().status == 401
    status, body = get(control, "/status", control.token)
    assert status == 200 and json.loads(body)["pipeline"] == "p"


def test_a_foreign_host_header_is_refused(control):
    port = int(control.address.rsplit(":", 1)[1])
    for host in (f"evil.example:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}", f"localhost.evil:{port}", ""):
        assert get(control, "/status", control.token, host=host)[0] == 403, host
    for host in (f"localhost:{port}", f"[::1]:{port}"):
        assert get(control, "/status", control.token, host=host)[0] == 200


LIMIT, EVERY = "an integer from 1 to 10000", "a number from 0 to 86400"


@pytest.mark.parametrize("query, name, expected", [
    ("limit=abc", "limit", LIMIT), ("limit=0", "limit", LIMIT), ("limit=1.5", "limit", LIMIT),
    ("limit=99999999999", "limit", LIMIT), ("every=x", "every", EVERY), ("every=nan", "every", EVERY),
    ("every=-1", "every", EVERY), ("every=inf", "every", EVERY)])
def test_a_bad_tap_parameter_is_a_400_naming_it(control, capfd, query, name, expected):
    status, body = get(control, f"/tap?component=src&{query}", control.token)
    assert status == 400
    assert json.loads(body) == {"error": "bad parameter", "parameter": name, "expected": expected}
    assert capfd.readouterr().err == ""  # no traceback on the run's console


@pytest.mark.parametrize("port, said", [("99999", "less than or equal to 65535"), ("-1", "greater than or equal to 1"),
                                        ("0", "greater than or equal to 1")])
def test_a_metrics_port_out_of_range_is_a_usage_error(tmp_path, port, said):
    (tmp_path / "p.yaml").write_text("name: p\nsources: [{id: s, type: file, path: in, format: text}]\n"
                                     "sinks: [{id: o, type: print, input: s}]\n")
    r = subprocess.run([sys.executable, "-m", "etl", "run", "p.yaml", "--metrics-port", port], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "ETL_NO_SPARK": "on"})
    assert r.returncode == 2
    assert f"Invalid value for '--metrics-port': Input should be {said}" in r.stderr
    assert "Traceback" not in r.stderr and "OverflowError" not in r.stderr


def test_etl_drain_asks_the_run_with_its_token_and_nothing_else_can(tmp_path):
    """`etl drain` POSTs /drain with the token the run file names (no request file then); without the token the
    run is not asked (401); with no run alive the request file is written for the next run."""
    from typer.testing import CliRunner

    from etl.cli import app
    from etl.compile import drain

    (tmp_path / "p.yaml").write_text("name: p\nsources: [{id: s, type: file, path: in, format: text}]\n"
                                     "sinks: [{id: o, type: print, input: s}]\ncheckpoint: state/checkpoint\n")
    ck = tmp_path / "state" / "checkpoint"
    asked: list[str] = []
    c = Control("p")
    c.on_drain = lambda: asked.append("drain")
    with statedir.private():
        c.start(str(ck))
    try:
        assert get_post(c, "/drain", None) == 401 and get_post(c, "/drain", "x") == 401 and asked == []
        r = CliRunner().invoke(app, ["drain", str(tmp_path / "p.yaml")])
        assert r.exit_code == 0, r.output
        assert asked == ["drain"] and not drain.requested(str(ck))
        assert get_post(c, "/tap", c.token) == 404
    finally:
        c.close()
    r = CliRunner().invoke(app, ["drain", str(tmp_path / "p.yaml")])  # no run alive: for the next one
    assert r.exit_code == 0 and asked == ["drain"] and drain.requested(str(ck))


def get_post(c: Control, path: str, token: str | None) -> int:
    port = int(c.address.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("POST", path, body=b"", headers={"Authorization": f"Bearer {token}"} if token else {})
    return conn.getresponse().status
