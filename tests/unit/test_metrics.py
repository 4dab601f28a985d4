"""etl.runtime.metrics without Spark: a progress event and sink results become exact Prometheus samples, and the
README lists every metric as the definitions say."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from prometheus_client.parser import text_string_to_metric_families

from etl.graph.model import Edge
from etl.runtime.metrics import DEFINITIONS, Metrics, markdown_table

ROOT = Path(__file__).resolve().parents[2]


def samples(m: Metrics) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(v for k, v in sorted(s.labels.items()) if k != "pipeline")): s.value
            for fam in text_string_to_metric_families(m.text().decode()) for s in fam.samples}


def test_progress_and_sink_results_become_exact_samples():
    m = Metrics("p")
    m.on_progress("win", {"batchId": 3, "numInputRows": 10, "inputRowsPerSecond": 20.0,
                          "processedRowsPerSecond": 40.5, "timestamp": "2026-01-10T12:05:00.000Z",
                          "durationMs": {"triggerExecution": 1500, "addBatch": 1200},
                          "eventTime": {"watermark": "2026-01-10T12:04:30.000Z"},
                          "stateOperators": [{"numRowsTotal": 7, "memoryUsedBytes": 4096}]}, dead_letters=2)
    m.on_progress("win", {"batchId": 4, "numInputRows": 0, "eventTime": {"watermark": "1970-01-01T00:00:00.000Z"},
                          "durationMs": {"triggerExecution": 100}}, dead_letters=0)
    m.sink_result("out", SimpleNamespace(rows=5, retries=2, seconds=0.3, skipped=False))
    m.sink_result("out", SimpleNamespace(rows=0, retries=0, seconds=0.0, skipped=True))
    s = samples(m)
    assert s[("etl_batches_total", ("win",))] == 2
    assert s[("etl_query_input_rows_total", ("win",))] == 10
    assert s[("etl_dead_letters_total", ("win",))] == 2
    assert s[("etl_batch_duration_seconds_count", ("win",))] == 2
    assert s[("etl_batch_duration_seconds_sum", ("win",))] == 1.6
    assert s[("etl_batch_duration_seconds_bucket", ("1.0", "win"))] == 1  # 0.1 s in, 1.5 s not
    assert s[("etl_spark_duration_seconds", ("addBatch", "win"))] == 1.2
    assert s[("etl_spark_batch_id", ("win",))] == 4
    assert s[("etl_spark_processed_rows_per_second", ("win",))] == 0.0  # the last batch's
    assert s[("etl_state_rows", ("win",))] == 0
    assert s[("etl_watermark_lag_seconds", ("win",))] == 30.0  # from batch 3; the epoch watermark is no watermark
    assert s[("etl_watermark_seconds", ("win",))] == 1768046670.0
    assert s[("etl_component_rows_out_total", ("out",))] == 5
    assert s[("etl_sink_retries_total", ("out",))] == 2
    assert s[("etl_sink_replays_skipped_total", ("out",))] == 1
    assert s[("etl_sink_flush_seconds_count", ("out",))] == 1
    assert {name for name, _ in s} >= {d.exposed for d in DEFINITIONS if d.kind != "histogram"}


def graph(*nodes: tuple[str, str, list[tuple[str, str | None]]]) -> SimpleNamespace:
    """(id, kind, [(input node, route label)]) -> a graph as Metrics.bind reads it."""
    return SimpleNamespace(
        nodes={nid: SimpleNamespace(id=nid, kind=kind, inputs=[Edge(src, nid, label) for src, label in ins])
               for nid, kind, ins in nodes},
        upstream_sources=lambda nid: [])


def test_transforms_rows_out_are_observed_and_their_rows_in_are_their_inputs_rows_out():
    """src -> keep (filter, per micro-batch) -> split (route: hi, lo) -> hi_sum (a window, streaming) -> out;
    split.lo -> low; the window's counts come from the progress's observedMetrics, the others per batch."""
    m = Metrics("p")
    g = graph(("src", "source", []), ("keep", "transform", [("src", None)]),
              ("split", "transform", [("keep", None)]), ("hi_sum", "transform", [("split", "hi")]),
              ("low", "sink", [("split", "lo")]), ("out", "sink", [("hi_sum", None)]))
    m.bind(g, [SimpleNamespace(name="src", root="src", outputs=[SimpleNamespace(id="low")], counted=("keep", "split")),
               SimpleNamespace(name="hi_sum", root="hi_sum", outputs=[SimpleNamespace(id="out")],
                               counted=("hi_sum", "keep", "split"))])
    s = samples(m)
    assert s[("etl_component_rows_in_total", ("keep",))] == 0  # every transform shows up before its first batch
    assert s[("etl_component_rows_out_total", ("hi_sum",))] == 0
    m.on_progress("src", {"batchId": 0, "numInputRows": 1000}, dead_letters=0)
    m.rows_out("src", {("keep", None): 372, ("split", "hi"): 300, ("split", "lo"): 72})
    m.on_progress("hi_sum", {"batchId": 0, "numInputRows": 1000, "observedMetrics": {
        "etl.rows/hi_sum": {"rows": 4}, "etl.rows/keep": {"rows": 372}, "etl.rows/split/hi": {"rows": 300},
        "other": {"rows": 9}}}, dead_letters=0)
    m.rows_out("hi_sum", {("keep", None): 5})  # not the query that counts keep: ignored
    s = samples(m)
    assert s[("etl_component_rows_out_total", ("src",))] == 1000
    assert s[("etl_component_rows_in_total", ("keep",))] == 1000
    assert s[("etl_component_rows_out_total", ("keep",))] == 372
    assert s[("etl_component_rows_in_total", ("split",))] == 372
    assert s[("etl_component_rows_out_total", ("split",))] == 372  # both labels
    assert s[("etl_component_rows_in_total", ("hi_sum",))] == 300
    assert s[("etl_component_rows_out_total", ("hi_sum",))] == 4
    assert s[("etl_component_rows_in_total", ("low",))] == 0  # a sink's rows in are its own results (none yet)


def test_the_readme_lists_every_metric():
    assert markdown_table() in (ROOT / "docs" / "reference" / "metrics.md").read_text()


def test_a_taken_metrics_port_is_a_usage_error_before_the_jvm_starts(tmp_path):
    import os
    import socket
    import subprocess
    import sys

    (tmp_path / "p.yaml").write_text("name: p\nsources: [{id: s, type: file, path: in, format: text}]\n"
                                     "sinks: [{id: o, type: print, input: s}]\ncheckpoint: state\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "etl", "run", "p.yaml", "--metrics-port", str(port)], cwd=tmp_path,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120,
                           check=False)
    assert r.returncode == 2
    assert r.stderr.startswith(f"etl run: --metrics-port {port}: cannot listen on 127.0.0.1: [Errno 98] Address "
                               "already in use"), r.stderr
    assert not (tmp_path / "run.json").exists() and not (tmp_path / "logs").exists()  # no run file, no JVM log
