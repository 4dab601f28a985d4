"""The generator source: event i depends on (seed, i) only; offsets are event indices, kept by the JVM
(etl/jvm/GeneratorIndex.java, engine index-jvm) or by the Python data source (python-source): the same rows and
offsets."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from etl.components.sources.generator.build import indexed_events
from etl.components.sources.generator.reader import NAME, GeneratorDataSource, generate, spec_options
from etl.runtime.runner import PipelineRun, RunOptions
from etl.runtime.testing import CaptureSink
from etl.components.sources.generator.spec import GeneratorSource
from etl.connectors.api import register_data_source
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


# every field kind and its edges: weights (one zero), a null among the choices, integer choices (bigint), negative
# ranges, constants, a template of numbers and timestamps, a declared schema (its columns only) casting some
EDGES = {
    "seq": {"sequence": -5},
    "level": {"choice": ["info", None, "error"], "weights": [3, 0, 1]},
    "port": {"choice": [22, 443, 8080]},
    "delta": {"int_range": [-9_223_372_036_854_775_808, 9_223_372_036_854_775_807]},
    "small": {"int_range": [-3, -1]},
    "temp": {"float_range": [-40.5, -0.25]},
    "ip": {"ipv4": True},
    "ts": {"timestamp": "event"},
    "msg": {"template": "{seq}/{small} {temp} at {ts} {level}"},
    "word": {"const": "prod"},
    "n": {"const": 7},
    "plain": {"template": "no refs"},
}


def edge_source(count, **kw):
    return GeneratorSource(id="g", type="generator", fields=EDGES, seed=-3, rate=3, count=count,
                           start_time="2025-12-31T23:59:59.5+01:00", **kw)


@pytest.mark.spark
@pytest.mark.parametrize("schema", [None, {"seq": "string", "n": "int", "small": "double", "word": "string",
                                           "msg": "string", "ts": "timestamp"}],
                         ids=["declared-by-fields", "schema-casts"])
def test_jvm_indices_give_the_python_sources_rows(spark, schema):
    """GeneratorIndex.java's indices through mapInArrow give the Python data source's rows, value for value, over
    three partitions (25,001 events), each field kind and edge above, with the declared schema's casts."""
    opts = spec_options(edge_source(25_001, **({"schema": schema} if schema else {})))
    register_data_source(spark, GeneratorDataSource)
    old = spark.read.format(NAME).option("spec", json.dumps(opts)).option("partitions", "3").load()
    new = indexed_events(spark.read, opts, "3")
    assert new.schema == old.schema
    assert new.rdd.getNumPartitions() == old.rdd.getNumPartitions() == 3
    got, want = new.collect(), old.collect()
    assert len(got) == 25_001 and got == want  # each partition's rows in index order
    assert (want[0]["seq"], want[-1]["seq"], want[0]["word"]) == ((-5, 24_995, "prod") if schema is None else
                                                                   ("-5", "24995", "prod"))
    if schema is None:
        assert {r["level"] for r in want} == {"info", "error"}  # the null choice has weight 0


@pytest.mark.spark
def test_a_python_source_checkpoint_resumes_with_the_jvm_indices(spark, tmp_path, monkeypatch):
    """A checkpoint the Python data source wrote ({"index": 1500}, its offsets) resumes with GeneratorIndex.java:
    the next run reads events 1500..2499 in one batch, and all 2,500 are a fresh run's, each once."""
    from etl import settings

    def pipeline(count):
        return checked(tmp_path, f"""
            name: t-gen
            sources:
              - id: g
                type: generator
                count: {count}
                rows_per_batch: 1000
                seed: 7
                fields: {{id: {{sequence: 0}}, code: {{int_range: [1, 9]}}, msg: {{template: "{{code}}-{{id}}"}}}}
            sinks: [{{id: out, type: file, input: g, path: out}}]
        """)

    rows: list[dict] = []

    def run(count, checkpoint, engine):
        monkeypatch.setenv("ETL_FORCE_ENGINES", engine)
        settings.reset()
        plan = pipeline(count).plan
        r = PipelineRun(plan, spark, RunOptions(once=True, checkpoint=str(checkpoint), progress="none",
                                                sink_factory=lambda o, s, ctx: CaptureSink(s, ctx, rows)))
        r.start()
        r.wait()
        assert r.compiler.ctx.executed[("g", "offsets")] == engine
        return r

    run(1500, tmp_path / "ck", "python-source")
    assert sorted(x["id"] for x in rows) == list(range(1500))
    offsets = sorted((tmp_path / "ck").rglob("offsets/1"))
    assert offsets and offsets[0].read_text().splitlines()[-1] == '{"index": 1500}'
    r = run(2500, tmp_path / "ck", "index-jvm")
    assert [s.lastProgress["numInputRows"] for s in r.streams] == [1000]
    resumed = sorted((x["id"], x["code"], x["msg"]) for x in rows)
    rows.clear()
    run(2500, tmp_path / "fresh", "index-jvm")
    assert resumed == sorted((x["id"], x["code"], x["msg"]) for x in rows)
    assert [x[0] for x in resumed] == list(range(2500))


def test_int_range_of_every_int64():
    """[min, max] of int64 (2**64 values: the span does not fit a uint64) takes the hash's bits as they are."""
    o = spec_options(GeneratorSource(id="g", type="generator", seed=1, fields={
        "all": {"int_range": [-9_223_372_036_854_775_808, 9_223_372_036_854_775_807]},
        "top": {"int_range": [9_223_372_036_854_775_806, 9_223_372_036_854_775_807]}}))
    rows = generate(o, 0, 1000).to_pylist()
    assert min(r["all"] for r in rows) < -2**62 and max(r["all"] for r in rows) > 2**62
    assert {r["top"] for r in rows} == {9_223_372_036_854_775_806, 9_223_372_036_854_775_807}


@pytest.mark.spark
def test_an_unbounded_generator_gives_one_batch_per_once_run(spark, tmp_path):
    """--once (AvailableNow) of a generator without `count`: one micro-batch of rows_per_batch events, the next run
    the next ones (GeneratorIndex.java's offsets)."""
    c = checked(tmp_path, """
        name: t-gen
        sources: [{id: g, type: generator, rate: 5, rows_per_batch: 300, fields: {id: {sequence: 0}}}]
        sinks: [{id: out, type: file, input: g, path: out}]
    """)
    rows: list[dict] = []
    for n in (1, 2):
        r = PipelineRun(c.plan, spark, RunOptions(once=True, checkpoint=str(tmp_path / "ck"), progress="none",
                                                  sink_factory=lambda o, s, ctx: CaptureSink(s, ctx, rows)))
        r.start()
        r.wait()
        assert r.compiler.ctx.executed[("g", "offsets")] == "index-jvm"
        assert [s.lastProgress["numInputRows"] for s in r.streams] == [300]
        assert sorted(x["id"] for x in rows) == list(range(300 * n))
