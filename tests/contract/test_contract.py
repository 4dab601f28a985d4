"""One contract for every connector (tests/contract/adapters.py lists them): write and read back,
restart (the second run resumes, nothing doubled), replay (the same batch id twice -> once, also
after a crash in the middle of a batch), the server stopped for 20 s in the middle of a run
(retries with backoff, then no loss and no duplicates), and a wrong address or bad credentials
failing with a message naming the component and its line in the pipeline file.

Connectors with a server are marked `servers`: they FAIL when their server cannot start.
Run: .venv/bin/python -m pytest tests/contract -m servers
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

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

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

OUTAGE_SECONDS = 12  # a floor: the outage lasts until a batch has also waited 10 s at its sink (held)
# enough attempts to ride out the outage plus a restart (OpenSearch: up to ~15 s)
OUTAGE_RETRY = {"max_attempts": 60, "initial_backoff": "200ms", "max_backoff": "2s"}
FAIL_FAST = {"max_attempts": 2, "initial_backoff": "100ms", "max_backoff": "100ms"}


def _params(pred=lambda a: True) -> list:
    return [pytest.param(n, id=n, marks=[pytest.mark.servers(a.fixture)] if a.fixture else [])
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
def test_write_read_back_and_restart(spark, target):
    """Write and read back; a second run on the same checkpoint resumes after what the first wrote
    (nothing doubled); connectors with a source read it all back through that source."""
    a, t = target
    first, second = rows(0, 70), rows(70, 45)
    write_input(t.tmp / "input", 0, first[:40])
    write_input(t.tmp / "input", 1, first[40:])
    _run(spark, t, a.sink(t))
    assert_exactly(a.read_back(t, len(first)), first)
    write_input(t.tmp / "input", 2, second)
    _run(spark, t, a.sink(t))  # same checkpoint: resumes after the first two files
    assert_exactly(a.read_back(t, len(first) + len(second)), first + second)
    if a.has_source():
        out = t.tmp / "readback"
        text = pipeline_text(t.name + "_rb", a.source(t), {"type": "file", "path": str(out), "format": "jsonl"})
        run_once(spark, t.tmp / "rb", text)
        got = [json.loads(line) for f in sorted(out.glob("part-*.jsonl")) for line in f.read_text().splitlines()]
        assert_exactly(got, first + second)


def _sink(a: Adapter, t: Target, spark, partition: int | None = None) -> Any:
    """The sink as the driver builds it (`partition`: as an executor builds it to write that partition)."""
    conf = {"id": "out", "inputs": ["events"], **a.sink(t)}
    spec = registry.lookup("sink", conf["type"]).spec.model_validate(conf)
    ckpt = t.tmp / "replay-ckpt"
    (ckpt / "q").mkdir(parents=True, exist_ok=True)
    scope = "q" if partition is None else f"q.p{partition}"
    ctx = SinkContext(t.name, "out", scope, str(ckpt), str(t.tmp), checkpoint=str(ckpt / "q"), where="replay.yaml:1:1",
                      partition=partition)
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
    # a crash in the middle of batch 1 (in its partition 0, where rows are written): half written, never committed ...
    crashed = _sink(a, t, spark, partition=0)
    shaped = crashed.prepare(_frame(spark, b1)).toArrow()
    assert not crashed.is_committed(1)
    crashed.begin(1, shaped.schema)
    crashed.batch_insert(shaped.slice(0, 20))
    a.crash(crashed)  # what dies with the process (a connection, ...) dies now; nothing is committed
    # ... then replayed in full by the restarted run
    replay = _sink(a, t, spark)
    assert replay.write_batch(_frame(spark, b1), 1).rows == 50
    replay.close()
    assert_exactly(a.read_back(t, 100), b0 + b1)


class _RetryLog(logging.Handler):
    """Retry warnings of the sinks (their label holds the pipeline file, so one adapter's are told apart)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "retrying in" in msg:
            self.lines.append(msg)


def _wait_for_a_batch_held_by_the_outage(run, not_before: float, name: str, held: float = 10.0) -> None:
    """Until `not_before` (the outage's length), and then until a micro-batch with data has been running for
    `held` seconds without finishing: its sink is retrying against the stopped server. On a loaded machine the
    batch of the files written during the outage may start late in it; ending the outage before that batch
    reached its sink would let it through without one retry."""
    deadline = not_before + 180
    since = None
    while time.monotonic() < deadline:
        check_running(run)
        busy = any(s.status.get("isTriggerActive") and s.status.get("isDataAvailable") for s in run.streams)
        now = time.monotonic()
        since = (since or now) if busy else None
        if now >= not_before and since is not None and now - since >= held:
            return
        time.sleep(0.2)
    raise AssertionError(f"{name}: no micro-batch waited on the stopped server")


def _outage_scenario(spark, a: Adapter, t: Target, retries: _RetryLog, outages: int = 3) -> str:
    """File source -> the connector's sink, continuous; the server stops for OUTAGE_SECONDS after the first
    batch is stored, files keep arriving; afterwards every row must be stored exactly once.

    The scenarios of all connectors run at once on the session's two task slots: a sink whose task found both
    slots taken by the others' retrying sinks can see its whole outage go by without reaching its server (its
    batch waits for a slot; a retry would only show when its task ends). So an outage the sink did not notice
    is followed by another one (at most `outages`): the others have finished by then."""
    folder = t.tmp / "input"
    files = 0
    expected: list = []

    def arrive(n: int, pace: float = 0.0) -> None:
        nonlocal files
        for _ in range(n):
            batch = rows(files * 30, 30)
            write_input(folder, files, batch)
            expected.extend(batch)
            files += 1
            time.sleep(pace)

    arrive(3)
    sink = {**a.sink(t), "retry": OUTAGE_RETRY}
    text = pipeline_text(t.name, file_source(folder, 1), sink, trigger={"mode": "interval", "interval": "300ms"})
    run = start_continuous(spark, t.tmp / "run", text)
    downs: list[float] = []
    try:
        wait_until(lambda: len(a.read_back(t, 0)) >= 30, 240, run, f"{a.name}: the first batch")
        while len(downs) < outages:
            t.server.stop()
            down_at = time.monotonic()
            try:
                arrive(3, pace=2.0)  # while the server is down
                _wait_for_a_batch_held_by_the_outage(run, down_at + OUTAGE_SECONDS, a.name)
            finally:
                t.server.start()
            downs.append(time.monotonic() - down_at)
            arrive(3)
            wait_until(lambda: len(a.read_back(t, 0)) >= len(expected), 240, run,
                       f"{a.name}: every row after outage {len(downs)}")
            check_running(run)
            if a.waits_out_outages or any(str(t.tmp) in m for m in retries.lines):
                break
    finally:
        run.request_stop()
        run.wait()
    assert_exactly(a.read_back(t, len(expected)), expected)
    mine = [m for m in retries.lines if str(t.tmp) in m]
    # a micro-batch was held at the sink while the server was down (checked then): for a client that rides out
    # the outage itself (Adapter.waits_out_outages) that held batch is the evidence, with no retry of etl's to log
    assert min(downs) >= OUTAGE_SECONDS and (mine or a.waits_out_outages), \
        f"{a.name}: the sink never had to retry in {len(downs)} outages: they were not noticed"
    first = mine[0][:160] if mine else "none (the producer waited for the broker)"
    down_for = sum(downs)
    return f"{a.name}: down {down_for:.0f}s in {len(downs)} outage(s), {len(mine)} retries; first: {first}"


@pytest.fixture(scope="module")
def outages(request, spark, tmp_path_factory):
    """Every server connector's outage scenario, started together (they run concurrently: the whole
    case costs one outage, not one per connector); each parametrized test waits for its own."""
    from concurrent.futures import ThreadPoolExecutor

    handler = _RetryLog()
    logging.getLogger("etl.sink").addHandler(handler)
    pool = ThreadPoolExecutor(max_workers=len(ADAPTERS))
    futures = {}
    selected = {item.callspec.params["name"] for item in request.session.items
                if getattr(item, "originalname", "") == "test_server_outage_mid_run_no_loss_no_duplicates"}
    for name, a in sorted(ADAPTERS.items()):
        if a.fixture is None or name not in selected:
            continue
        server = request.getfixturevalue(a.fixture)
        server.ensure_running()
        t = a.target(server, tmp_path_factory.mktemp(f"outage-{name}"))
        futures[name] = pool.submit(_outage_scenario, spark, a, t, handler)
    yield futures
    pool.shutdown(wait=True)
    logging.getLogger("etl.sink").removeHandler(handler)


@pytest.mark.parametrize("name", [p.values[0] for p in _params(lambda a: a.fixture is not None)],
                         ids=[p.id for p in _params(lambda a: a.fixture is not None)])
@pytest.mark.servers
def test_server_outage_mid_run_no_loss_no_duplicates(outages, name):
    print(f"\n[contract] {outages[name].result(timeout=900)}")


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
