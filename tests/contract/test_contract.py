"""One contract for every connector (tests/contract/adapters.py lists them): write and read back,
restart (the second run resumes, nothing doubled), replay (the same batch id twice -> once, also
after a crash in the middle of a batch), the server stopped for 20 s in the middle of a run
(retries with backoff, then no loss and no duplicates), and a wrong address or bad credentials
failing with a message naming the component and its line in the pipeline file.

Connectors with a server are marked `servers`: they FAIL when their server cannot start.
Run: .venv/bin/python -m pytest tests/contract -m servers
"""

# ruff: noqa: F811  (pytest fixtures imported by name)
from __future__ import annotations

import logging
import time

import pytest

from etl import registry
from etl.runtime.runner import RunFailed
from etl.runtime.sink import SinkContext
from tests.contract.adapters import ADAPTERS, Adapter, Target
from tests.contract.harness import (
    SCHEMA,
    SINK_LINE,
    assert_exactly,
    check_running,
    file_source,
    pipeline_text,
    rows,
    run_once,
    start_continuous,
    wait_until,
    write_input,
)
from tests.servers.fixtures import kafka_server, mariadb_server, opensearch_server, rocketmq_server  # noqa: F401

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

OUTAGE_SECONDS = 20
# enough attempts to ride out the outage plus a restart (OpenSearch: up to ~15 s)
OUTAGE_RETRY = {"max_attempts": 60, "initial_backoff": "200ms", "max_backoff": "2s"}
FAIL_FAST = {"max_attempts": 2, "initial_backoff": "100ms", "max_backoff": "100ms"}


def _params(pred=lambda a: True) -> list:
    return [pytest.param(n, id=n, marks=[pytest.mark.servers] if a.fixture else [])
            for n, a in sorted(ADAPTERS.items()) if pred(a)]


@pytest.fixture
def target(request, tmp_path) -> tuple[Adapter, Target]:
    a = ADAPTERS[request.param]
    server = request.getfixturevalue(a.fixture) if a.fixture else None
    if server is not None:
        server.ensure_running()
    return a, a.target(server, tmp_path)


def _run(spark, t: Target, sink: dict, work: str = "run", **kw):
    return run_once(spark, t.tmp / work, pipeline_text(t.name, file_source(t.tmp / "input", None), sink, **kw))


@pytest.mark.parametrize("target", _params(), indirect=True)
def test_write_and_read_back(spark, target):
    a, t = target
    data = rows(0, 120)
    write_input(t.tmp / "input", 0, data[:70])
    write_input(t.tmp / "input", 1, data[70:])
    _run(spark, t, a.sink(t))
    assert_exactly(a.read_back(t, len(data)), data)


@pytest.mark.parametrize("target", _params(), indirect=True)
def test_restart_resumes_without_doubling(spark, target):
    a, t = target
    first, second = rows(0, 60), rows(60, 45)
    write_input(t.tmp / "input", 0, first)
    _run(spark, t, a.sink(t))
    write_input(t.tmp / "input", 1, second)
    _run(spark, t, a.sink(t))  # same checkpoint: resumes after the first file
    _run(spark, t, a.sink(t))  # nothing new: writes nothing
    assert_exactly(a.read_back(t, len(first) + len(second)), first + second)


def _sink(a: Adapter, t: Target, spark) -> tuple:
    conf = {"id": "out", "inputs": ["events"], **a.sink(t)}
    spec = registry.lookup("sink", conf["type"]).spec.model_validate(conf)
    ckpt = t.tmp / "replay-ckpt"
    (ckpt / "q").mkdir(parents=True, exist_ok=True)
    ctx = SinkContext(t.name, "out", "q", str(ckpt), str(t.tmp), checkpoint=str(ckpt / "q"), where="replay.yaml:1:1")
    return registry.builder_for(spec)(spec, ctx)


def _frame(spark, data: list[dict]):
    from pyspark.sql import functions as F

    ddl = ", ".join(f"{k} {v if v != 'timestamp' else 'string'}" for k, v in SCHEMA.items())
    return spark.createDataFrame([tuple(r[k] for k in SCHEMA) for r in data], ddl) \
        .withColumn("ts", F.to_timestamp("ts"))


@pytest.mark.parametrize("target", _params(), indirect=True)
def test_replayed_batch_is_written_once(spark, target):
    a, t = target
    b0, b1 = rows(0, 50), rows(50, 50)
    first = _sink(a, t, spark)
    assert first.write_batch(_frame(spark, b0), 0).rows == 50
    first.close()
    # Spark replays batch 0 after a crash between the sink's commit and its own commit log
    again = _sink(a, t, spark)
    res = again.write_batch(_frame(spark, b0), 0)
    assert res.skipped and res.rows == 0
    # a crash in the middle of batch 1: half written, never committed ...
    crashed = _sink(a, t, spark)
    shaped = crashed.prepare(_frame(spark, b1)).toArrow()
    assert not crashed.is_committed(1)
    crashed.begin(1, shaped.schema)
    crashed.batch_insert(shaped.slice(0, 20))
    a_crash = getattr(crashed, "producer", None) or getattr(crashed, "conn", None)
    if hasattr(a_crash, "close") and a.name == "mysql":
        a_crash.close()  # the connection dies with the process: the server rolls back
    # ... then replayed in full by the restarted run
    replay = _sink(a, t, spark)
    assert replay.write_batch(_frame(spark, b1), 1).rows == 50
    replay.close()
    assert_exactly(a.read_back(t, 100), b0 + b1)


@pytest.mark.parametrize("target", _params(lambda a: a.fixture is not None), indirect=True)
def test_server_outage_mid_run_no_loss_no_duplicates(spark, target, caplog):
    a, t = target
    caplog.set_level(logging.WARNING, logger="etl.sink")
    folder = t.tmp / "input"
    batches = [rows(i * 30, 30) for i in range(9)]
    for i in range(3):
        write_input(folder, i, batches[i])
    sink = {**a.sink(t), "retry": OUTAGE_RETRY}
    text = pipeline_text(t.name, file_source(folder, 1), sink, trigger={"mode": "interval", "interval": "300ms"})
    run = start_continuous(spark, t.tmp / "run", text)
    try:
        wait_until(lambda: len(a.read_back(t, 0)) >= 30, 120, run, "the first batch")
        outage = t.server.outage(OUTAGE_SECONDS)
        outage.wait_stopped()
        down_at = time.monotonic()
        for i in range(3, 6):  # arrives while the server is down
            write_input(folder, i, batches[i])
            time.sleep(2)
        outage.join(180)
        up_after = time.monotonic() - down_at
        for i in range(6, 9):
            write_input(folder, i, batches[i])
        expected = [r for b in batches for r in b]
        wait_until(lambda: len(a.read_back(t, 0)) >= len(expected), 180, run, "every row after the outage")
        check_running(run)
    finally:
        run.request_stop()
        run.wait()
    assert_exactly(a.read_back(t, len(expected)), expected)
    retried = [r.getMessage() for r in caplog.records if "retrying in" in r.getMessage()]
    assert up_after >= OUTAGE_SECONDS and retried, "the sink never had to retry: the outage was not noticed"
    print(f"\n[contract] {a.name}: {len(retried)} retries during the outage; first: {retried[0][:200]}")


@pytest.mark.parametrize("target", _params(), indirect=True)
def test_wrong_address_names_component_and_line(spark, target):
    a, t = target
    write_input(t.tmp / "input", 0, rows(0, 5))
    with pytest.raises(RunFailed) as err:
        _run(spark, t, {**a.bad_address(t), "retry": FAIL_FAST})
    msg = str(err.value)
    assert f"sink 'out' ({t.tmp / 'run' / 'p.yaml'}:{SINK_LINE}:" in msg, msg
    assert a.bad_address_error in msg, msg


@pytest.mark.parametrize("target", _params(lambda a: a.bad_credentials), indirect=True)
def test_bad_credentials_name_component_and_line(spark, target):
    a, t = target
    write_input(t.tmp / "input", 0, rows(0, 5))
    started = time.monotonic()
    with pytest.raises(RunFailed) as err:
        _run(spark, t, a.bad_credentials_sink(t))  # default retry policy: terminal errors are not retried
    msg = str(err.value)
    assert f"sink 'out' ({t.tmp / 'run' / 'p.yaml'}:{SINK_LINE}:" in msg, msg
    assert "terminal error" in msg and ("denied" in msg or "password" in msg), msg
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("target", _params(lambda a: a.has_source()), indirect=True)
def test_source_reads_back_what_the_sink_wrote(spark, target):
    a, t = target
    src = a.source(t)
    data = rows(0, 80)
    write_input(t.tmp / "input", 0, data)
    _run(spark, t, a.sink(t))
    out = t.tmp / "readback"
    text = pipeline_text(t.name + "_rb", src, {"type": "file", "path": str(out), "format": "jsonl"})
    run_once(spark, t.tmp / "rb", text)
    import json

    got = [json.loads(line) for f in sorted(out.glob("part-*.jsonl")) for line in f.read_text().splitlines()]
    assert_exactly(got, data)
