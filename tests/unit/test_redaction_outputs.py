"""Issue 35: a value read with env() never reaches an output, in any of its escaped forms: explain (YAML rules,
SQL LIKE/REGEXP, wrapped lines), validate (text and JSON), test, the control endpoint (/metrics, /status, /tap)
and the run file; and validate refuses it in the pipeline name or a component id (ids are public)."""

from __future__ import annotations

import json
import os
import re
import threading
from urllib.request import urlopen

import pytest
from typer.testing import CliRunner

from etl.cli import app
from etl import secrets

from .helpers import codes, write

TOKEN = "Zm9vYmFy+c2VjcmV0/dG9rZW4="
GH = "ghp_abc.def-123"
PHRASE = "correct horse battery staple"
ENV = {"API_TOKEN": TOKEN, "GH_TOKEN": GH, "PHRASE": PHRASE}
# the secrets and the telling pieces of their escaped forms (lower-cased, as the output is compared lower-cased)
PIECES = [TOKEN, GH, PHRASE, "zm9vymfy", "c2vjcmv0", "dg9rzw4", "ghp", "abc", "def-123", "def\\-123", "horse",
          "battery", "staple"]
runner = CliRunner()

RULES = """
name: secret-probe
sources:
  - {id: orders, type: file, path: orders.jsonl, format: jsonl, schema: {customer: string, cmd: string}}
transforms:
  - id: flagged
    type: filter
    input: orders
    expr: "customer <> 'the quick brown fox jumps over the lazy dog and some words to {{ env('PHRASE') }}'"
    rules:
      - {id: tok, when: {field: cmd, contains: "{{ env('API_TOKEN') }}"}}
      - {id: gh, when: {field: cmd, contains: "{{ env('GH_TOKEN') }}", caseless: true}}
      - {id: gh2, when: {field: cmd, starts_with: "{{ env('GH_TOKEN') }}"}}
      - {id: phrase, when: {field: customer, regex: "^x{{ env('PHRASE') }}"}}
sinks:
  - {id: out, type: file, input: flagged, path: out}
"""

SQL = """
CREATE TABLE orders (customer VARCHAR, cmd VARCHAR) WITH (type = 'file', filePath = 'orders.jsonl', isJsonData = 'true');
CREATE TABLE out (customer VARCHAR, cmd VARCHAR) WITH (type = 'file', filePath = 'out');
INSERT INTO out SELECT customer, cmd FROM orders
WHERE cmd LIKE '%{{ env("API_TOKEN") }}%' OR cmd LIKE '{{ env("GH_TOKEN") }}_%' OR customer REGEXP '^{{ env("PHRASE") }}';
"""


def leaks(text: str) -> list[str]:
    low = text.lower()
    return [p for p in PIECES if p.lower() in low]


def invoke(*args):
    return runner.invoke(app, list(map(str, args)), env=ENV)


def test_explain_of_yaml_rules_shows_no_form_of_a_secret(tmp_path):
    p = write(tmp_path, "p.yaml", RULES)
    r = invoke("explain", p)
    assert r.exit_code == 0, r.output
    assert leaks(r.output) == [], r.output
    # the pattern listing (Hyperscan escapes inside a JSON string) and the predicates both show the mask
    assert re.findall(r'#\d "(.*?)" \(', r.output) == ["***", "***", "\\\\A***", "^x***"]
    assert "p0 cmd contains \"***\"" in r.output
    assert "    expr: customer <> 'the quick brown fox jumps over the lazy dog and some words to ***'\n" in r.output


def test_explain_of_sql_like_and_regexp_shows_no_form_of_a_secret(tmp_path):
    p = write(tmp_path, "p.sql", SQL)
    r = invoke("explain", p)
    assert r.exit_code == 0, r.output
    assert leaks(r.output) == [], r.output
    assert "***" in r.output


def test_a_line_wrapped_inside_a_secret_shows_neither_half(tmp_path):
    # the filler puts the phrase across the 100-column wrap of explain's detail lines
    for filler in range(30):
        text = RULES.replace("and some words to", "and some words to" + " x" * filler)
        p = write(tmp_path, f"w{filler}.yaml", text)
        r = invoke("explain", p)
        assert r.exit_code == 0, r.output
        assert leaks(r.output) == [], (filler, r.output)
        assert [ln for ln in r.output.splitlines() if ln.endswith(" ***'")], r.output  # the mask whole on a line


def test_validate_text_and_json_and_test_output_show_no_secret(tmp_path):
    bad = RULES.replace("type: filter", "type: filter\n    tag_field: {{ env('API_TOKEN') }}")
    p = write(tmp_path, "p.yaml", bad.replace("path: out}", "path: out, batch_size: \"{{ env('GH_TOKEN') }}\"}"))
    for fmt in ("text", "json"):
        r = invoke("validate", "--format", fmt, p)
        assert r.exit_code == 1 and "E10" in r.output, r.output
        assert leaks(r.output) == [], r.output
    r = invoke("test", p)
    assert r.exit_code != 0 and leaks(r.output) == [], r.output


TENANT = "acme_Zq9x7Kp"  # a value that makes a valid id (letters, digits, '_')


@pytest.mark.parametrize("name, expected", [
    ("name: \"probe-{{ env('TENANT') }}\"", [("E102", 1, 7), ("E102", 3, 9)]),
    ("name: probe", [("E102", 3, 9)]),
])
def test_env_in_the_pipeline_name_or_an_id_is_refused_at_its_position(tmp_path, name, expected):
    from etl.check import check_file

    text = (f"{name}\nsources:\n  - id: \"src_{{{{ env('TENANT') }}}}\"\n    type: generator\n"
            "    fields: {a: {sequence: 1}}\nsinks:\n  - {id: out, type: print, input: \"src_{{ env('TENANT') }}\"}\n")
    checked = check_file(write(tmp_path, "p.yaml", text), environ={"TENANT": TENANT})
    assert codes(checked) == expected
    msgs = [d.render() for d in checked.report.sorted()]
    assert all(TENANT.lower() not in m.lower() for m in msgs), msgs
    assert msgs[-1] == ("p.yaml:3:9: E102 the id of source #1 holds a value read from the environment with env()\n"
                        "    hint: the pipeline name and component ids are public (metrics labels, run file, "
                        "checkpoint path, explain): write them literally or take them from vars (`{{ vars.NAME }}`, "
                        "--var NAME=VALUE), not from env()").replace("p.yaml", str(tmp_path / "p.yaml"))
    if len(expected) == 2:
        assert msgs[0].split("\n")[0].endswith("E102 the pipeline name holds a value read from the environment "
                                                "with env()")


def test_a_short_value_is_refused_only_as_the_whole_id(tmp_path):
    from etl.check import check_file

    text = ("name: orders-{{ env('REGION') }}\nsources:\n  - {id: \"{{ env('REGION') }}\", type: generator, "
            "fields: {a: {sequence: 1}}}\nsinks:\n  - {id: q1, type: print, input: eu}\n")
    checked = check_file(write(tmp_path, "p.yaml", text), environ={"REGION": "eu"})
    assert codes(checked) == [("E102", 3, 10)]  # the id "eu", not the name orders-eu nor q1


@pytest.fixture
def control(tmp_path):
    from etl.runtime.control import Control

    secrets.register([TOKEN, GH])
    c = Control(f"pipe-{TOKEN}")  # a name validate refuses: the endpoint hides it all the same
    c.start(str(tmp_path / "state" / "checkpoint"))
    yield c
    c.close()


def _authorized(control, path: str):
    """A request of the control endpoint with the run's token (etl.runtime.control checks it on every request)."""
    from urllib.request import Request

    return Request(f"{control.address}{path}", headers={"Authorization": f"Bearer {control.token}"})


def test_run_file_and_metrics_and_status_bodies_are_redacted(control, tmp_path):
    run_file = (tmp_path / "state" / "run.json").read_text()
    assert json.loads(run_file)["pipeline"] == "pipe-***" and leaks(run_file) == []
    from types import SimpleNamespace

    control.sink_result(f"out_{GH}", SimpleNamespace(rows=3, retries=0, seconds=0.1, skipped=False))
    metrics = urlopen(_authorized(control, "/metrics"), timeout=5).read().decode()
    assert 'etl_component_rows_out_total{component="out_***",pipeline="pipe-***"} 3.0' in metrics and leaks(metrics) == []
    status = json.loads(urlopen(_authorized(control, "/status"), timeout=5).read())
    assert status["pipeline"] == "pipe-***"


def test_tap_response_body_is_redacted(control):
    control.components, control.tappable = {"d": "transform"}, {"d"}
    reason = f"p.yaml:9:10: derive 'd' column 'n': CAST_INVALID_INPUT: The value 'x{GH}' of the type \"STRING\""
    item = {"component": "d", "kind": "dead", "query": "src", "batch": 0,
            "row": {"stage": "d", "reason": reason, "payload": json.dumps({"a": f"{TOKEN}"})}}

    def feed():
        while not control.taps:
            threading.Event().wait(0.01)
        control.taps[0].rows.put(item)

    threading.Thread(target=feed, daemon=True).start()
    with urlopen(_authorized(control, "/tap?component=d&dead=1"), timeout=10) as resp:
        line = resp.readline().decode()
    got = json.loads(line)
    assert got["row"]["reason"] == ("p.yaml:9:10: derive 'd' column 'n': CAST_INVALID_INPUT: The value 'x***' of "
                                    "the type \"STRING\"")
    assert got["row"]["payload"] == '{"a": "***"}' and leaks(line) == []


def test_a_failure_cause_is_redacted_before_it_is_cut(tmp_path):
    from types import SimpleNamespace

    from etl.diagnostics import Span
    from etl.runtime.failure import redact_log, unknown_failure

    secrets.register([PHRASE])
    graph = SimpleNamespace(name="p", nodes={"s": SimpleNamespace(span=Span("p.yaml", 3, 5))})
    cause = "x" * 490 + f" {PHRASE} and the rest"  # the cut at 500 falls inside the phrase
    failure = unknown_failure(graph, RuntimeError(cause))
    assert failure.diagnostic().message.endswith("x *** and t")  # 490 x, the mask, cut at 500 and leaks(failure.diagnostic().render()) == []
    log = tmp_path / "etl-run.log"
    log.write_text(f"WARN TaskSetManager: Lost task: The value '{PHRASE}' of the type \"STRING\"\n" * 3)
    log.chmod(0o600)
    redact_log(log)
    assert log.read_text() == "WARN TaskSetManager: Lost task: The value '***' of the type \"STRING\"\n" * 3
    assert log.stat().st_mode & 0o777 == 0o600


def test_a_new_command_printing_a_secret_gets_the_redaction_for_free(tmp_path):
    import os
    import subprocess
    import sys

    script = tmp_path / "leaky.py"
    script.write_text(
        "import logging, os, sys, typer\n"
        "from etl import secrets\n"
        "from etl.cli import app, main\n"
        "SECRET = os.environ['LEAKY_SECRET']\n"
        "@app.command()\n"
        "def leak():\n"
        "    print('print', SECRET)\n"
        "    typer.echo('echo ' + SECRET.upper(), err=True)\n"
        "    logging.basicConfig()\n"
        "    logging.getLogger('x').warning('log %s', SECRET)\n"
        "secrets.register([SECRET])\n"
        "sys.argv = ['etl', 'leak']\n"
        "main()\n")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "LEAKY_SECRET": GH})
    assert p.returncode == 0, p.stderr
    assert (p.stdout, p.stderr) == ("print ***\n", "echo ***\nWARNING:x:log ***\n")


def test_the_run_log_is_redacted_as_it_is_written(tmp_path):
    # etl.runtime.runlog: the JVM (here another process) writes into the log's FIFO; each line reaches the file
    # redacted while the run goes on, so a kill at any moment leaves no secret on disk
    import subprocess
    import sys
    import time

    from etl.runtime.runlog import RunLog

    secrets.register([PHRASE])
    log = tmp_path / "logs" / "etl-run-1.log"
    runlog = RunLog(log)
    assert runlog.target == str(tmp_path / "logs" / f".etl-run-1.log.{os.getpid()}.pipe")
    writer = ("import sys, time\nout = open(sys.argv[1], 'w')\nout.write('INFO one: ' + sys.argv[2] + '\\n')\n"
              "out.flush()\nout.write('INFO two: '); out.flush(); time.sleep(0.3); out.write('half ' + sys.argv[2] + '\\n')\n")
    subprocess.run([sys.executable, "-c", writer, runlog.target, PHRASE], check=True, timeout=60)
    deadline = time.monotonic() + 10
    while log.read_text().count("\n") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log.read_text() == "INFO one: ***\nINFO two: half ***\n"  # before close: on disk as written
    with open(runlog.target, "w") as last:  # a write without its line end, at the end
        last.write(f"tail {PHRASE}")
    runlog.close()
    assert log.read_text() == "INFO one: ***\nINFO two: half ***\ntail ***"
    assert [p.name for p in log.parent.iterdir()] == ["etl-run-1.log"]  # the FIFO is gone


def test_the_run_log_takes_what_its_writers_write_until_they_have_exited(tmp_path):
    # etl run stops the JVM, then closes the log with a wait: the lines the JVM writes while it exits (its shutdown
    # hooks') reach the log, redacted; before, the FIFO was gone first and they were lost
    import subprocess
    import sys
    import time

    from etl.runtime.runlog import RunLog

    secrets.register([PHRASE])
    log = tmp_path / "logs" / "etl-run-1.log"
    runlog = RunLog(log)
    writer = ("import sys, time\nout = open(sys.argv[1], 'w')\nout.write('INFO running\\n'); out.flush()\n"
              "time.sleep(1.5)\nout.write('INFO Shutdown hook called: ' + sys.argv[2] + '\\n'); out.flush()\n"
              "time.sleep(0.5)\nout.write('INFO Deleting directory')\n")
    jvm = subprocess.Popen([sys.executable, "-c", writer, runlog.target, PHRASE])
    try:
        deadline = time.monotonic() + 30
        while not log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        t = time.monotonic()
        runlog.close(30)  # returns when the writer has closed the FIFO, its last line (without its end) in the log
        waited = time.monotonic() - t
        assert jvm.wait(timeout=1) == 0
    finally:
        jvm.kill()
    assert log.read_text() == "INFO running\nINFO Shutdown hook called: ***\nINFO Deleting directory"
    assert 0.5 < waited < 20, waited
    assert [p.name for p in log.parent.iterdir()] == ["etl-run-1.log"]
    runlog = RunLog(tmp_path / "logs" / "etl-run-2.log")  # a writer that never ends: close gives up after wait_s
    with open(runlog.target, "w") as held:
        t = time.monotonic()
        runlog.close(0.5)
        assert 0.4 < time.monotonic() - t < 10
        assert held.writable()


def test_a_run_removes_the_log_fifos_of_runs_no_longer_going(tmp_path):
    # a run ended by SIGKILL leaves its FIFO: the next run in the folder removes it, never one of a run still going
    import subprocess
    import sys

    from etl.runtime.runlog import RunLog

    logs = tmp_path / "logs"
    logs.mkdir()
    done = subprocess.Popen([sys.executable, "-c", "pass"])  # a run that ended: its pid names no process now
    done.wait()
    going = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for name in (f".etl-run-1.log.{done.pid}.pipe", f".etl-run-2.log.{going.pid}.pipe", ".etl-run-3.log.pipe",
                     ".etl-run-4.log.pipe"):
            os.mkfifo(logs / name, 0o600)
        (logs / ".etl-run-5.log.pipe").write_text("")  # not a FIFO: not etl's
        reader = os.open(logs / ".etl-run-4.log.pipe", os.O_RDONLY | os.O_NONBLOCK)  # a run of an older etl, going
        runlog = RunLog(logs / "etl-run-6.log")
        try:
            assert sorted(p.name for p in logs.iterdir()) == [
                ".etl-run-2.log." + str(going.pid) + ".pipe", ".etl-run-4.log.pipe", ".etl-run-5.log.pipe",
                f".etl-run-6.log.{os.getpid()}.pipe", "etl-run-6.log"]
        finally:
            runlog.close()
            os.close(reader)
    finally:
        going.kill()
        going.wait()
    assert RunLog(logs / "etl-run-7.log").close() is None
    assert sorted(p.name for p in logs.iterdir()) == [".etl-run-5.log.pipe", "etl-run-6.log", "etl-run-7.log"]
