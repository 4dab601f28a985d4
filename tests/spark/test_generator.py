"""The generator source: event i depends on (seed, i) only; offsets are event indices."""

from __future__ import annotations

import pyarrow as pa
import pytest

from etl.components.sources.generator.reader import generate, spec_options
from etl.runtime.runner import PipelineRun, RunOptions
from etl.runtime.testing import CaptureSink
from etl.components.sources.generator.spec import GeneratorSource
from tests.spark.helpers import checked

FIELDS = {
    "id": {"sequence": 100},
    "level": {"choice": ["info", "warn", "error"], "weights": [8, 1, 1]},
    "code": {"int_range": [200, 599]},
    "latency": {"float_range": [0.5, 2.5]},
    "ip": {"ipv4": True},
    "ts": {"timestamp": "event"},
    "msg": {"template": "{level} from {ip}: {code}"},
    "env": {"const": "prod"},
}


def opts(seed=1, **kw):
    return spec_options(GeneratorSource(id="g", type="generator", fields=FIELDS, seed=seed, rate=10, **kw))


def test_events_depend_on_seed_and_index_only():
    whole = generate(opts(), 0, 1000)
    parts = pa.Table.from_batches([generate(opts(), 0, 333), generate(opts(), 333, 1000)])
    assert pa.Table.from_batches([whole]).equals(parts)
    assert generate(opts(), 0, 50).equals(generate(opts(), 0, 50))
    assert not generate(opts(seed=2), 0, 50).column("code").equals(generate(opts(), 0, 50).column("code"))


def test_field_kinds():
    rows = generate(opts(start_time="2026-01-01T00:00:00Z"), 0, 2000).to_pylist()
    assert [r["id"] for r in rows[:3]] == [100, 101, 102]
    assert all(200 <= r["code"] <= 599 and 0.5 <= r["latency"] < 2.5 and r["env"] == "prod" for r in rows)
    assert all(len(r["ip"].split(".")) == 4 and all(0 <= int(x) <= 255 for x in r["ip"].split(".")) for r in rows)
    assert rows[0]["msg"] == f"{rows[0]['level']} from {rows[0]['ip']}: {rows[0]['code']}"
    assert rows[10]["ts"].isoformat() == "2026-01-01T00:00:01+00:00"  # rate 10/s of event time
    share = sum(r["level"] == "info" for r in rows) / len(rows)
    assert 0.75 < share < 0.85


@pytest.mark.spark
def test_count_bounded_generator_runs_with_available_now_and_resumes(spark, tmp_path):
    c = checked(tmp_path, """
        name: t-gen
        sources:
          - id: g
            type: generator
            count: 2500
            rows_per_batch: 1000
            seed: 7
            fields: {id: {sequence: 0}, code: {int_range: [1, 9]}}
        sinks: [{id: out, type: file, input: g, path: out}]
    """)
    rows: list[dict] = []

    def run(checkpoint):
        r = PipelineRun(c.plan, spark, RunOptions(once=True, checkpoint=str(checkpoint), progress="none",
                                                  sink_factory=lambda o, s, ctx: CaptureSink(s, ctx, rows)))
        r.start()
        r.wait()
        return r

    r = run(tmp_path / "ck")
    assert sorted(x["id"] for x in rows) == list(range(2500))
    assert [s.lastProgress["numInputRows"] for s in r.streams] == [500]  # the third batch: 2000..2499
    first = sorted((x["id"], x["code"]) for x in rows)
    rows.clear()
    run(tmp_path / "ck")  # resumes: everything was read already
    assert rows == []
    run(tmp_path / "ck2")  # a fresh checkpoint replays the very same events
    assert sorted((x["id"], x["code"]) for x in rows) == first
