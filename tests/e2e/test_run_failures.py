"""A failure that stops `etl run` (a server gone past its retries, a bug), as a user sees it: exactly one
positioned `file:line:col: E4xx` line and a hint naming the run's log file, exit 1, no Python or Java stack and
no Spark ERROR/WARN line on the console; the log file holds the stacks. A rerun once the cause is fixed writes
exactly the rows the failed run did not commit."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]
POSITIONED = re.compile(r"^(\S+):(\d+):(\d+): (E\d{3}) (.*)$")
SPARK_LINE = re.compile(r"^\d\d:\d\d:\d\d (ERROR|WARN) ")


def run(work: Path, *env: str) -> subprocess.CompletedProcess:
    import os

    extra = dict(e.split("=", 1) for e in env)
    return subprocess.run([sys.executable, "-m", "etl", "run", "p.yaml", "--once", "--quiet",
                           "--conf", "spark.ui.enabled=false"], cwd=work, capture_output=True, text=True,
                          timeout=500, env={**os.environ, **extra})


def failure(r: subprocess.CompletedProcess, work: Path) -> tuple[re.Match, str]:
    """The one positioned line (and the log it names); checks the console holds nothing else of the failure."""
    err = r.stderr
    assert r.returncode == 1, err[-3000:]
    lines = err.splitlines()
    found = [(i, m) for i, m in ((i, POSITIONED.match(ln)) for i, ln in enumerate(lines)) if m]
    assert len(found) == 1, err[-3000:]
    i, m = found[0]
    assert lines[i + 1].startswith("    hint: "), err
    assert "Traceback" not in err and "at org.apache" not in err and "Py4J" not in err, err[-3000:]
    assert not [ln for ln in lines if SPARK_LINE.match(ln)], err[-3000:]
    named = re.search(r"full stack in (\S+\.log)$", lines[i + 1])
    assert named, lines[i + 1]
    log = work / named.group(1)
    assert log.parent == work / ".etl" / "state" / "logs" and log.name.startswith("etl-run-"), log
    return m, log.read_text()


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write(work: Path, text: str) -> None:
    work.mkdir(parents=True, exist_ok=True)
    (work / "p.yaml").write_text(textwrap.dedent(text))


def rows(work: Path, name: str, ids: range) -> None:
    (work / "input").mkdir(parents=True, exist_ok=True)
    (work / "input" / name).write_text("".join(json.dumps({"id": i, "name": f"n{i}"}) + "\n" for i in ids))


SOURCE = """\
    name: failing
    checkpoint: .etl/state/checkpoint
    sources:
      - {id: src, type: file, path: input, format: jsonl, schema: {id: bigint, name: string}}
"""


def test_unreachable_kafka_source_is_one_e407_line_at_its_address(tmp_path):
    write(tmp_path, f"""\
        name: failing
        checkpoint: .etl/state/checkpoint
        sources:
          - id: events
            type: kafka
            bootstrap_servers: 127.0.0.1:{free_port()}
            topics: [t]
        sinks:
          - {{id: out, type: file, input: events, path: out}}
    """)
    m, log = failure(run(tmp_path), tmp_path)
    assert m.group(1, 2, 3, 4) == ("p.yaml", "6", "24", "E407"), m.group(0)
    assert m.group(5).startswith("kafka source 'events': cannot reach Kafka at 127.0.0.1:"), m.group(0)
    assert "Traceback (most recent call last)" in log and "CompileError" in log


def test_unreachable_mysql_sink_is_one_e407_line_at_the_sink(tmp_path):
    rows(tmp_path, "a.jsonl", range(3))
    write(tmp_path, SOURCE + f"""\
    sinks:
      - id: out
        type: mysql
        input: src
        host: 127.0.0.1
        port: {free_port()}
        database: db
        user: u
        password: p
        table: t
        retry: {{max_attempts: 2, initial_backoff: 100ms}}
    """)
    m, log = failure(run(tmp_path), tmp_path)
    assert m.group(1, 2, 3, 4) == ("p.yaml", "6", "5", "E407"), m.group(0)
    assert m.group(5).startswith("mysql sink 'out': commit check failed after 2 attempts (retry.max_attempts=2): "
                                 "cannot connect to u@127.0.0.1:"), m.group(0)
    assert "etl.runtime.sink.SinkFailed" in log and "Traceback (most recent call last)" in log
    assert "ERROR org.apache.spark.sql.execution.streaming" in log and "\tat org.apache.spark" in log


def test_a_bug_in_a_python_worker_is_one_e401_line_at_the_pipeline(tmp_path):
    rows(tmp_path, "a.jsonl", range(3))
    write(tmp_path, SOURCE + """\
    sinks:
      - {id: out, type: file, input: src, path: out}
    """)
    m, log = failure(run(tmp_path, "ETL_TEST_WORKER_CRASH=simulated bug 42"), tmp_path)
    assert m.group(0) == "p.yaml:1:1: E401 pipeline 'failing': RuntimeError: simulated bug 42"
    # Spark's lines about the lost task are in the log, with the Python traceback and the Java stack
    assert "ERROR org.apache.spark.executor.Executor: Exception in task" in log
    assert "WARN org.apache.spark.scheduler.TaskSetManager" in log and "aborting job" in log
    assert "RuntimeError: simulated bug 42" in log and "Java stack:" in log
    assert not list((tmp_path / "out").glob("part-*"))


@pytest.mark.servers
def test_mysql_down_mid_run_stops_at_the_sink_and_a_rerun_writes_the_rest_once(mariadb_server, tmp_path):
    s = mariadb_server
    table = f"t_{tmp_path.name[-12:].replace('-', '_')}"
    write(tmp_path, SOURCE + f"""\
    sinks:
      - id: out
        type: mysql
        input: src
        host: {s.host}
        port: {s.port}
        database: {s.database}
        user: {s.user}
        password: {s.password}
        table: {table}
        create_table: true
        key: [id]
        retry: {{max_attempts: 2, initial_backoff: 100ms}}
    """)
    rows(tmp_path, "a.jsonl", range(0, 40))
    first = run(tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    rows(tmp_path, "b.jsonl", range(40, 100))
    with s.down():
        m, log = failure(run(tmp_path), tmp_path)
    assert m.group(1, 2, 3, 4) == ("p.yaml", "6", "5", "E407"), m.group(0)
    assert m.group(5).startswith("mysql sink 'out': ") and "(MySQL error 2003)" in m.group(5), m.group(0)
    again = run(tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    conn = s.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT id, name FROM `{table}` ORDER BY id")
            got = cur.fetchall()
            cur.execute("SELECT batch_id, rows_written FROM _etl_commits WHERE pipeline='failing' AND sink='out' "
                        "ORDER BY batch_id")
            markers = cur.fetchall()
    finally:
        conn.close()
    assert got == tuple((i, f"n{i}") for i in range(100))
    assert [n for _, n in markers] == [40, 60]
