"""Which component a failure of `etl run` names, the cause line taken out of a Python traceback, and where
Spark's lines about a failed task go (without Spark: etl/runtime/failure.py, runner._clean, session.log4j_text)."""

from __future__ import annotations

import textwrap

import pytest

from etl import settings
from etl.check import check_file
from etl.runtime.failure import log_file, query_failure, sink_failure, unknown_failure
from etl.runtime.runner import _clean
from etl.runtime.session import QUIET_LOGGERS, log4j_text
from etl.runtime.sink import SinkFailed

PIPELINE = """\
    name: shop
    sources:
      - id: orders
        type: kafka
        bootstrap_servers: broker:9092
        topics: [orders]
      - {id: files, type: file, path: in, format: jsonl, schema: {id: bigint}}
    sinks:
      - {id: db, type: file, input: orders, path: out}
      - {id: copy, type: file, input: files, path: out2}
"""


def graph(tmp_path):
    (tmp_path / "p.yaml").write_text(textwrap.dedent(PIPELINE))
    c = check_file(tmp_path / "p.yaml")
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    return c.plan.graph


def test_an_unreachable_server_source_is_e407_at_its_address(tmp_path):
    g = graph(tmp_path)
    f = query_failure(g, ["orders"], "TimeoutException: Timed out waiting for a node assignment",
                      "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment", "")
    d = f.diagnostic()
    assert (d.code, d.span.line, d.span.col) == ("E407", 5, 24)
    assert d.message == "kafka source 'orders': TimeoutException: Timed out waiting for a node assignment"


def test_any_other_query_failure_is_e401_at_the_pipeline(tmp_path):
    g = graph(tmp_path)
    for sources, text in ((["orders"], "ArithmeticException: [DIVIDE_BY_ZERO] Division by zero"),
                          (["files"], "Connection refused")):  # a file source has no server to blame
        d = query_failure(g, sources, text, text, "").diagnostic()
        assert (d.code, d.span.line, d.span.col) == ("E401", 1, 1)
        assert d.message == f"pipeline 'shop': {text}"


def test_a_sink_past_its_retries_is_e407_at_the_sink_and_a_terminal_error_e401(tmp_path):
    g = graph(tmp_path)
    gone = SinkFailed("file sink 'db' (p.yaml:9:5): write failed after 3 attempts", "db",
                      "write failed after 3 attempts", unreachable=True)
    d = sink_failure(g, gone, "").diagnostic()
    assert (d.code, d.span.line, d.message) == ("E407", 9, "file sink 'db': write failed after 3 attempts")
    refused = SinkFailed("file sink 'copy' (p.yaml:10:5): x", "copy", "write failed: denied (terminal error)")
    d = sink_failure(g, refused, "").diagnostic()
    assert (d.code, d.span.line, d.message) == ("E401", 10, "file sink 'copy': write failed: denied (terminal error)")


def test_a_full_disk_is_e411_whoever_met_it_never_a_server_that_did_not_answer(tmp_path):
    g = graph(tmp_path)  # (no checkpoint: in the pipeline file: its first line)
    full = SinkFailed("file sink 'db' (p.yaml:9:5): x", "db", "write failed after 8 attempts (retry.max_attempts=8): "
                      "java.io.IOException: No space left on device", unreachable=True)
    d = sink_failure(g, full, "").diagnostic()
    assert (d.code, d.span.line, d.span.col) == ("E411", 1, 1)
    assert d.message == ("pipeline 'shop': disk full: write failed after 8 attempts (retry.max_attempts=8): "
                         "java.io.IOException: No space left on device")
    assert "server" not in d.hint and "please report" not in d.hint
    d = unknown_failure(g, OSError(28, "No space left on device")).diagnostic()
    assert (d.code, d.message) == ("E411", "pipeline 'shop': disk full: OSError: [Errno 28] No space left on device")


def test_a_truncated_state_file_is_e412_but_a_servers_eof_is_not(tmp_path):
    g = graph(tmp_path)
    state = ("org.apache.spark.SparkException: [CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during "
             "loading state.  SQLSTATE: 58030\nCaused by: java.io.EOFException: Stream ended prematurely")
    d = query_failure(g, ["files"], "x", state, "").diagnostic()
    assert (d.code, d.message) == ("E412", "pipeline 'shop': the checkpoint is damaged: org.apache.spark."
                                           "SparkException: [CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error "
                                           "occurred during loading state.  SQLSTATE: 58030")
    eof = ("java.io.EOFException: Can not read response from server\nCurrent Committed Offsets: {}\n"
           "Current State: ACTIVE")  # a first batch that lost its server: no checkpoint reader in it
    assert query_failure(g, ["orders"], "x", eof, "").diagnostic().code == "E401"


def test_the_cause_is_the_innermost_python_exception_of_a_traceback():
    msg = ("An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):\n"
           '  File "x.py", line 1, in f\n'
           "pyspark.errors.exceptions.captured.PythonException: An exception was thrown from the Python worker:\n"
           "Traceback (most recent call last):\n"
           '  File "y.py", line 2, in g\n'
           "ValueError: bad value 7\n")
    assert _clean(msg) == "ValueError: bad value 7"
    assert _clean("[DIVIDE_BY_ZERO] Division by zero.\nmore") == "[DIVIDE_BY_ZERO] Division by zero."


def test_the_log_file_is_beside_the_checkpoint(tmp_path):
    import datetime

    at = datetime.datetime(2026, 1, 10, 12, 0, 5, tzinfo=datetime.UTC)
    assert log_file(str(tmp_path / ".etl" / "shop" / "checkpoint"), at) == \
        tmp_path / ".etl" / "shop" / "logs" / "etl-run-20260110T120005Z.log"


def test_spark_lines_about_failed_tasks_go_to_the_log_file_only(monkeypatch):
    monkeypatch.delenv("ETL_LOG_LEVEL", raising=False)
    text = log4j_text("/x/run.log")
    assert "appender.runlog.fileName = ${sys:etl.runlog}" in text
    assert "rootLogger.appenderRef.runlog.ref = runlog" in text
    for key, name in QUIET_LOGGERS.items():
        assert f"logger.{key}.name = {name}\nlogger.{key}.additivity = false\n" \
               f"logger.{key}.appenderRef.runlog.ref = runlog\n" in text
    assert "org.apache.spark.executor.Executor" in QUIET_LOGGERS.values()
    assert "logger.executor.level = off" in log4j_text(None)  # no log file: nowhere
    monkeypatch.setenv("ETL_LOG_LEVEL", "info")
    settings.reset()
    shown = log4j_text("/x/run.log")
    assert "additivity" not in shown and "rootLogger.level = info" in shown


class Py4JJavaError(Exception):  # as py4j's: its text is asked of the JVM's gateway
    __module__ = "py4j.protocol"

    def __str__(self) -> str:
        raise ConnectionRefusedError(111, "Connection refused")


def test_a_java_error_whose_jvm_has_ended_is_one_line_not_a_traceback(tmp_path):
    d = unknown_failure(graph(tmp_path), Py4JJavaError()).diagnostic()
    assert (d.code, d.span.line, d.message) == (
        "E401", 1, "pipeline 'shop': Py4JJavaError (its text could not be read: the JVM has ended)")

    class Broken(Exception):
        def __str__(self) -> str:
            raise KeyError("a bug of etl's own")

    with pytest.raises(KeyError):  # not the gateway's: not hidden
        unknown_failure(graph(tmp_path), Broken())
