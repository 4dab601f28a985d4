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


def test_a_lookup_renames_a_table_column_the_events_have(tmp_path):
    """As etl.compile.lookups (tests/lookup/test_lookup_spark.py): a table column whose name the events have,
    case-insensitively, is <table id>_<name>; one the events do not have keeps its name (users_tier: E310)."""
    (tmp_path / "users.csv").write_text("id,name,tier\nu1,Ann,gold\n")
    path = tmp_path / "l.yaml"
    path.write_text("""name: l
sources:
  - {id: ev, type: file, path: ./ev, format: jsonl, schema: {user: string, Name: string}}
  - {id: users, type: file, path: ./users.csv, format: csv, static: true, schema: {id: string, name: string, tier: string}}
transforms:
  - {id: l, type: lookup, input: ev, table: users, on: {user: id}}
  - {id: d, type: derive, input: l, columns: {x: "upper(users_name)", y: "users_tier"}}
sinks:
  - {id: out, type: print, input: d}
""")
    checked = check_file(path)
    assert [n for n, _ in checked.graph.columns["l"]] == ["user", "Name", "users_name", "tier"]
    assert [(d.code, d.span.line, d.span.col) for d in checked.report.diagnostics] == [("E310", 7, 75)], \
        [d.render() for d in checked.report.diagnostics]


def test_a_sql_lookup_reads_the_table_s_column(tmp_path):
    """`d.name` beside the events' own `name` is the table's (users_name at run: it read the events' before); an
    unqualified column only the table has is one of the lookup's fields; one both have is E310 (Flink: ambiguous,
    tests/fixtures/sql_invalid/lookup_ambiguous_column.sql)."""
    (tmp_path / "d.csv").write_text("order_id,name,region\n1,a,eu\n")
    path = tmp_path / "l.sql"
    path.write_text("""CREATE TABLE orders (order_id VARCHAR, name VARCHAR) WITH (type = 'file', filePath = 'o.jsonl');
CREATE TABLE out (order_id VARCHAR, name VARCHAR, dname VARCHAR, region VARCHAR) WITH (type = 'print');
CREATE TABLE dim (order_id VARCHAR, name VARCHAR, region VARCHAR) WITH (type = 'file', filePath = 'd.csv', format = 'csv');
INSERT INTO out SELECT o.order_id, o.name, d.name, region FROM orders AS o
  JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() AS d ON o.order_id = d.order_id;
""")
    checked = check_file(path)
    assert not checked.report.diagnostics, [d.render() for d in checked.report.diagnostics]
    lookup = next(t for t in checked.pipeline.transforms if t.type == "lookup")
    assert lookup.fields == ["name", "region"]
    select = next(t for t in checked.pipeline.transforms if t.type == "select")
    assert select.fields == ["order_id", "name", "dim_name AS dname", "region"]
