"""Rows in and out of every transform (etl.compile.counts, etl.runtime.metrics): observed per micro-batch, exact,
for stages evaluated per batch and stages inside a streaming plan (before a window), and none when switched off."""

from __future__ import annotations

import re
from pathlib import Path
from prometheus_client.parser import text_string_to_metric_families

import pytest

from etl import settings
from etl.compile import CompileContext, Compiler
from etl.runtime.control import Control
from etl.runtime.runner import PipelineRun, RunOptions
from tests.spark.helpers import checked

EVENTS = 1000
KEPT = sum(1 for i in range(EVENTS) if i % 8 in (0, 3, 5))  # 375

PIPELINE = """\
    name: counts
    sources:
      - {id: src, type: file, path: input, format: jsonl, schema: {i: bigint, k: string}}
    transforms:
      - {id: keep, type: filter, input: src, expr: "i % 8 IN (0, 3, 5)"}
      - {id: doubled, type: derive, input: keep, columns: {j: "i * 2"}}
    sinks:
      - {id: out, type: file, input: doubled, path: output, format: jsonl}
      - {id: also, type: file, input: doubled, path: also, format: jsonl}
    checkpoint: state
"""

WINDOWED = """\
    name: counts-window
    sources:
      - {id: src, type: file, path: input, format: jsonl, schema: {i: bigint, k: string, ts: timestamp}}
    transforms:
      - {id: keep, type: filter, input: src, expr: "i % 8 IN (0, 3, 5)"}
      - id: per_key
        type: window
        input: keep
        kind: tumbling
        size: 1h
        group_by: [k]
        aggregates: [{fn: count, as: n}]
        event_time: {field: ts, watermark: 1s}
      - {id: big, type: filter, input: per_key, expr: "n > 100"}
    sinks:
      - {id: out, type: file, input: big, path: output, format: jsonl}
    checkpoint: state
"""


PARSED = """\
    name: counts-split
    sources:
      - {id: src, type: file, path: input, format: text}
    transforms:
      - {id: fields, type: parse, input: src, field: line, format: kv, schema: {i: int, k: string},
         keep_original: false}
    sinks:
      - {id: out, type: file, input: fields, path: output, format: jsonl}
    checkpoint: state
"""


def samples(control: Control) -> dict[tuple[str, str], float]:
    return {(s.name, s.labels.get("component") or s.labels.get("query")): s.value
            for fam in text_string_to_metric_families(control.metrics.text().decode()) for s in fam.samples}


@pytest.fixture(autouse=True)
def _counts_on(monkeypatch):
    """Transforms are counted only with ETL_COMPONENT_COUNTS=on (off by default: etl.settings)."""
    monkeypatch.setenv("ETL_COMPONENT_COUNTS", "on")
    settings.reset()


def run_once(spark, tmp_path: Path, yaml_text: str, drain: bool = False,
             lines: list[str] | None = None) -> tuple[dict[tuple[str, str], float], PipelineRun]:
    """One run over one input file of EVENTS rows; the run's `splits` lists each batch's split writes, `observing`
    whether it observed its stages."""
    (tmp_path / "input").mkdir()
    if lines is None:
        lines = [f'{{"i": {i}, "k": "k{i % 3}", "ts": "2026-01-10T12:00:{i % 60:02d}Z"}}' for i in range(EVENTS)]
    (tmp_path / "input" / "a.jsonl").write_text("\n".join(lines) + "\n")
    c = checked(tmp_path, yaml_text)
    control = Control(c.plan.graph.name)
    run = PipelineRun(c.plan, spark, RunOptions(once=not drain, drain=drain, progress="none", control=control,
                                                echo=lambda s: None))
    evaluate, run.splits, run.observing = run.compiler.evaluate, [], []  # type: ignore[attr-defined]

    def spied(*args, **kwargs):
        batch = evaluate(*args, **kwargs)
        run.splits.append(dict(batch.splits))  # type: ignore[attr-defined]
        run.observing.append(batch.observed is not None)  # type: ignore[attr-defined]
        return batch

    run.compiler.evaluate = spied  # type: ignore[method-assign]
    run.start()
    run.wait()
    return samples(control), run


def test_a_filter_and_a_derive_per_micro_batch_count_exactly(spark, tmp_path):
    """Two sinks read the derive: it is cached for the batch, and counted once (by the write that fills the cache)."""
    m, run = run_once(spark, tmp_path, PIPELINE)
    assert [q.counted for q in run.queries] == [("keep", "doubled")]
    assert run.observing == [True]  # type: ignore[attr-defined]
    assert m[("etl_component_rows_in_total", "src")] == EVENTS
    assert m[("etl_component_rows_out_total", "src")] == EVENTS
    assert m[("etl_component_rows_in_total", "keep")] == EVENTS
    assert m[("etl_component_rows_out_total", "keep")] == KEPT
    assert m[("etl_component_rows_in_total", "doubled")] == KEPT
    assert m[("etl_component_rows_out_total", "doubled")] == KEPT
    assert m[("etl_component_rows_in_total", "out")] == KEPT
    assert m[("etl_component_rows_in_total", "also")] == KEPT


def test_transforms_inside_a_streaming_plan_count_through_the_query_progress(spark, tmp_path):
    m, run = run_once(spark, tmp_path, WINDOWED, drain=True)
    # src also finds the window's input rows whose declared event time is past the horizon (bounded input: etl.
    # compile.watermark.beyond_rows); the window's streaming plan counts its filter
    assert [(q.name, q.counted) for q in run.queries] == [("src", ()), ("per_key", ("per_key", "keep", "big"))]
    assert m[("etl_component_rows_in_total", "keep")] == EVENTS
    assert m[("etl_component_rows_out_total", "keep")] == KEPT
    assert m[("etl_component_rows_in_total", "per_key")] == KEPT
    # --drain closes the hour's window of each key: 3 rows (125 events each) out of the window and its filter
    assert m[("etl_component_rows_out_total", "per_key")] == 3
    assert m[("etl_component_rows_in_total", "big")] == 3
    assert m[("etl_component_rows_out_total", "big")] == 3
    assert m[("etl_component_rows_in_total", "out")] == 3


def test_switched_off_no_transform_is_counted_and_the_plan_has_no_observation(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("ETL_COMPONENT_COUNTS", "off")
    settings.reset()
    m, run = run_once(spark, tmp_path, PIPELINE)
    assert [q.counted for q in run.queries] == [()]
    assert run.observing == [False]  # type: ignore[attr-defined]
    assert ("etl_component_rows_out_total", "keep") not in m
    assert m[("etl_component_rows_in_total", "out")] == KEPT
    # the streaming plan in front of a window carries the filter's and the window's metrics only when on
    for setting, names in (("off", []), ("on", ["etl.rows/keep", "etl.rows/per_key"])):
        settings.configure({"ETL_COMPONENT_COUNTS": setting})
        (tmp_path / setting / "input").mkdir(parents=True)
        c = checked(tmp_path / setting, WINDOWED)
        queries = Compiler(CompileContext(spark, c.plan.graph, str(tmp_path / setting / "state"), plan=c.plan)).queries()
        plan = next(q for q in queries if q.name == "per_key").stream._jdf.queryExecution().analyzed().toString()
        assert sorted(re.findall(r"CollectMetrics (etl\.rows/\w+)", plan)) == names


def test_a_stage_a_sink_splits_while_writing_counts_its_good_rows(spark, tmp_path):
    """The sink writes the parse's shared frame and splits it: the stage's `out` frame is not computed, its good
    rows are counted on the shared frame."""
    lines = [f"i={'x' if i % 10 == 0 else i} k=k{i % 3}" for i in range(EVENTS)]
    m, run = run_once(spark, tmp_path, PARSED, lines=lines)
    assert run.splits == [{"out": "fields"}]  # type: ignore[attr-defined]
    assert m[("etl_component_rows_in_total", "fields")] == EVENTS
    assert m[("etl_component_rows_out_total", "fields")] == 900
    assert m[("etl_component_rows_in_total", "out")] == 900
    assert m[("etl_dead_letters_total", "src")] == 100


SIGMA = """\
    name: counts-sigma
    sources:
      - {id: src, type: file, path: input, format: jsonl, schema: {i: bigint, k: string, ts: timestamp}}
    transforms:
      - {id: alerts, type: filter, input: src, mode: alerts, sigma: {paths: [rules]}}
      - {id: corr, type: sigma_correlation, input: alerts, event_time: {field: ts, watermark: 1s}}
    sinks:
      - {id: out, type: file, input: corr, path: output, format: jsonl}
    checkpoint: state
"""


def test_a_sigma_correlation_counts_the_rows_its_condition_lets_through(spark, tmp_path):
    """Its windows stream, its condition runs on each micro-batch (Built.tail): the rows out are counted there;
    its filter's rows out are the alerts it emits (not those of rules only `generate: false` correlations
    reference, which the correlation reads all the same)."""
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "r.yml").write_text(
        "title: Zeros\nname: zeros\nlogsource: {product: test}\ndetection:\n  sel: {k: k0}\n  condition: sel\n"
        "---\ntitle: Ones\nname: ones\nlogsource: {product: test}\ndetection:\n  sel: {k: k1}\n  condition: sel\n"
        "---\ntitle: Busy Key\nname: busy\ncorrelation:\n  type: event_count\n  rules: [zeros, ones]\n"
        "  group-by: [k]\n  timespan: 1h\n  condition: {gte: 334}\n---\ntitle: Any Ones\nname: any_ones\n"
        "correlation:\n  type: event_count\n  rules: [ones]\n  timespan: 1h\n  condition: {gte: 1}\n"
        "  generate: true\n")
    m, run = run_once(spark, tmp_path, SIGMA, drain=True)
    assert [(q.name, q.counted) for q in run.queries] == [("src", ()), ("corr", ("corr", "alerts"))]
    # zeros (k0: 334 alerts) feeds the correlations only (generate: false); ones (k1: 333) is emitted too
    assert m[("etl_component_rows_out_total", "alerts")] == 333
    assert m[("etl_component_rows_in_total", "corr")] == 333  # what the filter emits (its output's rows)
    # busy: k0 334 >= 334 holds, k1 333 does not; any_ones: 333 >= 1
    assert m[("etl_component_rows_out_total", "corr")] == 2
