"""Property: for every example pipeline (YAML and SQL), the columns the graph knows for each node (names and
types, as `etl explain` lists them) are the columns Spark produces for that node.

Sources that need a server (kafka, rocketmq, mysql) read the test feed with their declared columns instead;
file and generator sources run their own builders over the examples' data."""

from __future__ import annotations

from pathlib import Path

import pytest

from etl.check import check_file, pipeline_files

ROOT = Path(__file__).resolve().parents[2]
SERVER_SOURCES = ("kafka", "rocketmq", "mysql")
EXAMPLES = [Path(p) for p in pipeline_files([str(ROOT / "pipelines"), str(ROOT / "pipelines" / "sql")])]


def spark_columns(df) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def disagreements(spark, path: Path, tmp: Path) -> list[str] | None:
    from etl.compile import CompileContext, Compiler
    from etl.runtime.testing import feed_sources, source_ddl

    c = check_file(path, programs=True)
    assert c.plan is not None, "\n".join(d.render() for d in c.report.sorted())
    graph = c.plan.graph
    servers = [n for n in graph.of_kind("source") if n.type in SERVER_SOURCES]
    if any(n.type == "lookup" and graph.node(n.spec.table).type in SERVER_SOURCES for n in graph.of_kind("transform")):
        return None  # a lookup reads its table itself when it compiles: a server table needs the server
    ddl = {n.id: source_ddl(graph, n, []) for n in servers}
    (tmp / "feed").mkdir()
    compiler = Compiler(CompileContext(spark, graph, str(tmp / "checkpoint"), plan=c.plan),
                        feed_sources(ddl, str(tmp / "feed")))
    out = []
    for node in graph.nodes.values():
        if node.kind == "sink":
            continue
        built = compiler.stream(node.id)
        frames = {None: built.out} if built.out is not None else dict(built.outs or {})  # a route: per label
        known = graph.columns.get(node.id)
        for label, frame in frames.items():
            got = spark_columns(frame)
            if known is None or list(known) != got:
                out.append(f"{path.relative_to(ROOT)} {node.kind} '{node.id}'{f'.{label}' if label else ''}: "
                           f"graph {list(known) if known else None} != spark {got}")
    return out


@pytest.mark.spark
def test_graph_columns_equal_spark_columns_for_every_example(spark, tmp_path):
    assert len(EXAMPLES) >= 20
    problems, unchecked = [], []
    for i, path in enumerate(EXAMPLES):
        (tmp_path / str(i)).mkdir()
        found = disagreements(spark, path, tmp_path / str(i))
        if found is None:
            unchecked.append(str(path.relative_to(ROOT)))
        else:
            problems += found
    assert unchecked == ["pipelines/lookup_mysql.yaml", "pipelines/sql/connectors.sql",  # MySQL tables
                         "pipelines/sql/rocketmq_es.sql"]
    assert problems == [], "\n".join(problems)
