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


def test_a_select_of_two_columns_of_one_name(tmp_path):
    """Spark's select keeps k and K side by side; a later reference to either is AMBIGUOUS_REFERENCE."""
    path = tmp_path / "s.yaml"
    path.write_text("""name: s
sources:
  - {id: a, type: file, path: ./a, format: jsonl, schema: {k: string, h: string}}
transforms:
  - {id: s, type: select, input: a, fields: ["k", "h", "upper(h) AS K", "H"]}
sinks:
  - {id: out, type: print, input: s}
""")
    checked = check_file(path)
    assert [(d.code, d.span.line, d.span.col) for d in checked.report.diagnostics] == [("E104", 5, 56),
                                                                                         ("E104", 5, 73)], \
        [d.render() for d in checked.report.diagnostics]
