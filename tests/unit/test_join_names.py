"""A YAML join's right column whose name the left has, case-insensitively as Spark resolves names, is renamed
`<right id>_<name>` (etl.compile.joining does the same): `Host` and `host` side by side were an ambiguous reference
at run."""

from etl.check import check_file


def test_a_right_column_differing_in_case_is_renamed(tmp_path):
    path = tmp_path / "j.yaml"
    path.write_text("""name: j
sources:
  - {id: a, type: file, path: ./a, format: jsonl, schema: {k: string, Host: string, ts: timestamp},
     event_time: {field: ts, watermark: 10s}}
  - {id: b, type: file, path: ./b, format: jsonl, schema: {k: string, host: string, n: int, ts2: timestamp},
     event_time: {field: ts2, watermark: 10s}}
transforms:
  - {id: j, type: join, inputs: [a, b], on: [k], within: 1m}
  - {id: d, type: derive, input: j, columns: {x: "upper(host)", y: "b_host", z: "upper(b_hst)"}}
sinks:
  - {id: out, type: print, input: d}
""")
    checked = check_file(path)
    assert [n for n, _ in checked.graph.columns["j"]] == ["k", "Host", "ts", "b_host", "n", "ts2"]
    assert [(d.code, d.span.line, d.span.col) for d in checked.report.diagnostics] == [("E310", 9, 88)], \
        [d.render() for d in checked.report.diagnostics]
