"""The graph and plan layers take spec objects and an optional source map: no YAML involved.

This is what a SQL front-end would do: construct the same spec models and call
build_graph / check_graph / build_plan."""
import subprocess
import sys

from etl.diagnostics import Report, Span
from etl.graph import build_graph
from etl.graph.checks import check_graph
from etl.plan import build_plan
from etl.plan.explain import explain_plan
from etl.spec.pipeline import Pipeline
from etl.components.sinks.file.spec import FileSink
from etl.components.sources.kafka.spec import KafkaSource
from etl.components.transforms.filter.spec import FilterTransform
from etl.components.transforms.select.spec import SelectTransform


def _pipeline(expr="status >= 500"):
    return Pipeline(
        name="from-sql",
        sources=[KafkaSource(id="logs", type="kafka", bootstrap_servers="h:1", topics=["logs"],
                             schema={"status": "int", "host": "string"})],
        transforms=[FilterTransform(id="where_1", type="filter", inputs=["logs"], expr=expr),
                    SelectTransform(id="select_1", type="select", inputs=["where_1"], fields=["host"])],
        sinks=[FileSink(id="errors", type="file", inputs=["select_1"], path="out/errors")],
    )


def test_graph_and_plan_from_spec_objects():
    report = Report()
    graph = check_graph(build_graph(_pipeline(), None, report), report)
    assert not report.diagnostics
    assert dict(graph.columns["select_1"]) == {"host": "string"}
    plan = build_plan(graph, report)
    text = explain_plan(plan)
    assert "where_1 (filter) <- logs" in text and "errors: exactly-once" not in text
    assert "delivery: exactly-once" in text


def test_diagnostics_without_source_map_point_at_the_node():
    report = Report()
    check_graph(build_graph(_pipeline("stauts >= 500"), None, report), report)
    [d] = report.errors
    assert (d.code, d.span) == ("E310", Span("<pipeline>"))
    assert "did you mean 'status'?" in d.hint


def test_graph_and_plan_do_not_import_yaml_or_jinja():
    code = ("import sys, etl.graph, etl.graph.checks, etl.graph.columns, etl.plan, etl.plan.explain; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ruamel', 'jinja2', 'pyspark') "
            "or m.startswith('etl.load')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
