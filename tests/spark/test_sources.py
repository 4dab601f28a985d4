"""The file source in every format, with a declared schema, a per-batch limit and malformed lines."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from etl.runtime.runner import PipelineRun, RunOptions
from etl.runtime.testing import CaptureSink
from tests.spark.helpers import checked

pytestmark = pytest.mark.spark


def test_csv_parquet_jsonl_sources_union_with_dead_letters(spark, tmp_path):
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "a.csv").write_text("id;name\n1;one\n2;two\nthree;3\n")
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.table({"id": [10, 11], "name": ["ten", "eleven"]}), tmp_path / "pq" / "a.parquet")
    (tmp_path / "js").mkdir()
    for i in range(3):
        (tmp_path / "js" / f"f{i}.jsonl").write_text(json.dumps({"id": 20 + i, "name": f"j{i}"}) + "\n{oops\n")
    c = checked(tmp_path, """
        name: t-sources
        sources:
          - {id: c, type: file, path: csv, format: csv, delimiter: ";", schema: {id: bigint, name: string}}
          - {id: p, type: file, path: pq, format: parquet, schema: {id: bigint, name: string}}
          - {id: j, type: file, path: js, format: jsonl, schema: {id: bigint, name: string}, max_files_per_trigger: 1}
        transforms:
          - {id: u, type: union, inputs: [c, p, j]}
        sinks: [{id: out, type: file, input: u, path: out}]
    """)
    captured: dict[str, list] = {}
    r = PipelineRun(c.plan, spark, RunOptions(
        once=True, checkpoint=str(tmp_path / "ck"), progress="none",
        sink_factory=lambda o, s, ctx: CaptureSink(s, ctx, captured.setdefault(o.id, []))))
    r.start()
    r.wait()
    assert sorted(x["id"] for x in captured["out"]) == [1, 2, 10, 11, 20, 21, 22]
    dead = sorted((d["stage"], d["payload"], d["reason"]) for d in captured["dead_letter"])
    assert dead == [("c", "three;3", "malformed csv line")] + [("j", "{oops", "malformed json line")] * 3
    # the jsonl source read one file per micro-batch
    j_query = next(s for s in r.streams if s.name.endswith("/j"))
    assert [p["numInputRows"] for p in j_query.recentProgress if p["numInputRows"]] == [2, 2, 2]


def test_missing_path_is_a_compile_error_at_the_source_line(spark, tmp_path):
    from etl.compile import CompileContext, CompileError, Compiler

    c = checked(tmp_path, """
        name: t-missing
        sources: [{id: s, type: file, path: nowhere, format: text}]
        sinks: [{id: out, type: print, input: s}]
    """)
    with pytest.raises(CompileError) as e:
        Compiler(CompileContext(spark, c.plan.graph)).queries()
    assert "does not exist" in str(e.value) and e.value.diagnostic(c.plan.graph).span.line == 3
