"""GROK(field, 'pattern' [, library]) in SQL scripts (etl/sql/grok.py): the grok transforms it becomes, and
what validate says of it, at its position in the script. Rows: tests/sql/test_sql_grok_spark.py."""
from pathlib import Path

from etl.check import check_file
from etl.plan.explain import explain_plan

LOGS = "CREATE TABLE logs (msg VARCHAR, host VARCHAR) WITH (type = 'file', path = 'in', format = 'json');\n"
OUT2 = "CREATE TABLE out (client VARCHAR, n INT) WITH (type = 'file', path = 'out');\n"


def _check(tmp_path: Path, body: str, head: str = LOGS + OUT2):
    path = tmp_path / "job.sql"
    path.write_text(head + body)
    return check_file(path)


def _codes(c) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.col) for d in c.report.diagnostics]


def _transforms(c) -> list[dict]:
    return [t.model_dump(exclude_defaults=True) for t in c.pipeline.transforms]


def test_one_grok_per_distinct_call_and_the_struct_it_gives(tmp_path):
    c = _check(tmp_path, "INSERT INTO out SELECT GROK(msg, '%{IP:client} %{INT:n:int}').client,\n"
               "  GROK(msg, '%{IP:client} %{INT:n:int}').n FROM logs\n"
               "WHERE GROK(msg, '%{IP:client} %{INT:n:int}') IS NOT NULL AND GROK(host, '%{WORD:h}').h = 'a';\n")
    assert c.report.diagnostics == []
    assert _transforms(c)[:2] == [
        {"id": "out_grok", "type": "grok", "inputs": ["logs"], "field": "msg",
         "pattern": "%{IP:client} %{INT:n:int}", "target": "_grok1"},
        {"id": "out_grok_2", "type": "grok", "inputs": ["out_grok"], "field": "host", "pattern": "%{WORD:h}",
         "target": "_grok2"}]
    assert _transforms(c)[3]["fields"] == ["_grok1.client AS client", "_grok1.n AS n"]
    text = explain_plan(c.plan)
    assert "columns: msg:string, host:string, _grok1:struct<client:string,n:int>\n" in text
    assert "target: _grok1 (NULL when the line does not match)" in text


def test_hidden_struct_is_not_passed_on(tmp_path):
    """GROK only in the WHERE of `SELECT *`: the struct column stays out of the sink's rows."""
    c = _check(tmp_path, "INSERT INTO out2 SELECT * FROM logs WHERE GROK(msg, '%{IP:client}').client LIKE '10.%';\n",
               LOGS + "CREATE TABLE out2 (msg VARCHAR, host VARCHAR) WITH (type = 'file', path = 'out');\n")
    assert c.report.diagnostics == []
    assert [t["type"] for t in _transforms(c)] == ["grok", "filter", "select"]
    assert _transforms(c)[2]["fields"] == ["msg", "host"]
    assert "out2 (file) <- out2_select\n    columns: msg:string, host:string\n" in explain_plan(c.plan)


def test_library_argument_and_setting(tmp_path):
    c = _check(tmp_path, "INSERT INTO out SELECT GROK(msg, '%{SYSLOGPROG}', 'ecs-v1').process.name, 1 FROM logs;\n")
    assert c.report.diagnostics == []
    assert _transforms(c)[0]["patterns"] == "ecs-v1"
    assert "_grok1:struct<process:struct<name:string,pid:int>>" in explain_plan(c.plan)
    c = _check(tmp_path, "SET 'grok.patterns' = 'ecs-v1';\n" + LOGS + OUT2 +
               "INSERT INTO out SELECT GROK(msg, '%{SYSLOGPROG}').process.name, 1 FROM logs;\n", "")
    assert c.report.diagnostics == []
    assert c.pipeline.transforms[0].patterns == "ecs-v1"
    c = _check(tmp_path, "INSERT INTO out SELECT GROK(msg, '%{SYSLOGPROG}').program, 1 FROM logs;\n")
    assert c.pipeline.transforms[0].patterns == "legacy"


def test_lateral_table_gives_the_top_level_fields(tmp_path):
    c = _check(tmp_path, "INSERT INTO out SELECT t.c, t.n FROM logs, LATERAL TABLE(GROK(msg, '%{IP:client} "
               "%{INT:n:int}')) AS t(c, n);\n")
    assert c.report.diagnostics == []
    ts = _transforms(c)
    assert [(t["id"], t["type"]) for t in ts] == [("out_grok", "grok"), ("out_grok_matched", "filter"),
                                                  ("out_lateral", "select"), ("out_select", "select")]
    assert ts[1]["expr"] == "_grok1 IS NOT NULL"
    assert ts[2]["fields"] == ["msg", "host", "_grok1.client AS c", "_grok1.n AS n"]
    c = _check(tmp_path, "INSERT INTO out SELECT t.c, t.n FROM logs LEFT JOIN LATERAL TABLE(GROK(msg, '%{IP:client} "
               "%{INT:n:int}')) AS t(c, n) ON TRUE;\n")
    assert [t["type"] for t in _transforms(c)] == ["grok", "select", "select"]


def test_errors_at_their_position(tmp_path):
    # an unknown pattern name: at the name inside the string literal, with the closest one
    c = _check(tmp_path, "INSERT INTO out SELECT GROK(msg, '%{IP:client} %{INTT:n:int}').client, 1 FROM logs;\n")
    assert _codes(c) == [("E302", 3, 50)]
    assert c.report.diagnostics[0].hint == "did you mean 'INT' or 'POSINT' or 'MINUTE'?"
    # a field the pattern does not capture: like any column, with did-you-mean
    c = _check(tmp_path, "INSERT INTO out SELECT GROK(msg, '%{IP:client}').clinet, 1 FROM logs;\n")
    assert _codes(c) == [("E310", 3, 24)]
    assert c.report.diagnostics[0].hint == "did you mean 'client'?"
    # an unknown library, arity, a pattern that is not a literal, a column that is not one
    c = _check(tmp_path, "INSERT INTO out SELECT GROK(msg, '%{IP:client}', 'ecs').client, 1 FROM logs;\n")
    assert _codes(c) == [("E102", 3, 50)]
    assert c.report.diagnostics[0].hint == "did you mean 'ecs-v1'?"
    c = _check(tmp_path, "INSERT INTO out SELECT GROK(msg).client, 1 FROM logs;\n")
    assert _codes(c) == [("E012", 3, 24)]
    c = _check(tmp_path, "INSERT INTO out SELECT GROK(msg, host).client, 1 FROM logs;\n")
    assert _codes(c) == [("E011", 3, 34)]
    c = _check(tmp_path, "INSERT INTO out SELECT GROK(lower(msg), '%{IP:client}').client, 1 FROM logs;\n")
    assert _codes(c) == [("E011", 3, 29)]
    c = _check(tmp_path, "INSERT INTO out SELECT GROK(mgs, '%{IP:client}').client, 1 FROM logs;\n")
    assert _codes(c) == [("E310", 3, 29)]
    # a pattern without captures has no struct to give
    c = _check(tmp_path, "INSERT INTO out SELECT msg, 1 FROM logs WHERE GROK(msg, '^%{IP}$') IS NOT NULL;\n",
               LOGS + "CREATE TABLE out (a VARCHAR, n INT) WITH (type = 'file', path = 'out');\n")
    assert _codes(c) == [("E302", 3, 57)]
    # LATERAL TABLE names each top-level field
    c = _check(tmp_path, "INSERT INTO out SELECT t.c, 1 FROM logs, LATERAL TABLE(GROK(msg, '%{IP:client} "
               "%{INT:n:int}')) AS t(c);\n")
    assert _codes(c) == [("E104", 3, 50)]
    assert "GROK gives 2 columns (client, n): name them AS t(client, n)" in c.report.diagnostics[0].message


def test_a_view_of_grok_and_a_group_by_its_field(tmp_path):
    """A view's GROK struct is read as Flink reads a ROW column (`g.w`, `v.g.w`); a GROUP BY key may be a field."""
    head = ("CREATE TABLE logs (msg VARCHAR, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
            "WITH (type = 'file', path = 'in', format = 'json');\n"
            "CREATE TABLE out (w VARCHAR, n INT) WITH (type = 'file', path = 'out');\n"
            "CREATE TABLE counts (w VARCHAR, c BIGINT) WITH (type = 'file', path = 'counts');\n"
            "CREATE VIEW v AS SELECT GROK(msg, '%{WORD:w} %{INT:n:int}') AS g, ts FROM logs;\n")
    c = _check(tmp_path, "INSERT INTO out SELECT g.w, v.g.n FROM v WHERE g.n > 2;\n"
               "INSERT INTO counts SELECT GROK(msg, '%{WORD:w}').w, COUNT(*) FROM logs\n"
               "GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), GROK(msg, '%{WORD:w}').w;\n", head)
    assert c.report.diagnostics == []
    by_id = {t["id"]: t for t in _transforms(c)}
    assert by_id["v"]["fields"] == ["_grok1 AS g", "ts"]
    assert by_id["out_where"]["expr"] == "g.n > 2"
    assert by_id["out_select"]["fields"] == ["g.w AS w", "g.n AS n"]
    assert by_id["counts_derive"]["columns"] == {"_key0": "_grok1.w"}
    c = _check(tmp_path, "INSERT INTO out SELECT g.x, 1 FROM v;\n", head)
    assert _codes(c) == [("W204", 3, 14), ("E310", 5, 24)]  # counts: nothing writes into it
    assert c.report.diagnostics[1].hint == "its fields: w, n"


def test_an_unnamed_grok_column_is_named_as_flink_names_it(tmp_path):
    c = _check(tmp_path, "CREATE VIEW v AS SELECT host, GROK(msg, '%{IP:client}') FROM logs;\n"
               "INSERT INTO out SELECT `EXPR$1`.client, 1 FROM v;\n")
    assert c.report.diagnostics == []
    assert {t["id"]: t for t in _transforms(c)}["v"]["fields"] == ["host", "_grok1 AS `EXPR$1`"]
