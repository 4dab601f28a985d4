"""Flink's window SEMI / ANTI joins ([NOT] IN / [NOT] EXISTS over two TUMBLE window TVFs) -> a `join` with `how:
semi` / `anti`: the translation of the four documented forms and what is E011 where; window joins of HOP and
CUMULATE windows (no JVM). The documented rows on Spark: pipelines/sql/window_join.tests.yaml (IN, NOT IN, HOP)."""
from pathlib import Path

import pytest

from etl.check import check_file

TABLES = "".join(
    f"CREATE TABLE {t} (row_time TIMESTAMP(3), num INT, id STRING, WATERMARK FOR row_time AS row_time - INTERVAL "
    f"'1' SECOND) WITH (type = 'file', filePath = '{t}.jsonl');\n" for t in ("LeftTable", "RightTable"))
OUT = ("CREATE TABLE o (row_time TIMESTAMP, num INT, id STRING, window_start TIMESTAMP, window_end TIMESTAMP, "
       "window_time TIMESTAMP) WITH (type = 'print');\n")
TVF = "(SELECT * FROM TABLE(TUMBLE(TABLE {}, DESCRIPTOR(row_time), INTERVAL '5' MINUTES)))"
WINDOWS = "L.window_start = R.window_start AND L.window_end = R.window_end"
QUERY = "INSERT INTO o SELECT * FROM " + TVF.format("LeftTable") + " L WHERE {};\n"
FORMS = {
    "IN": f"L.num IN (SELECT num FROM {TVF.format('RightTable')} R WHERE {WINDOWS})",
    "EXISTS": f"EXISTS (SELECT * FROM {TVF.format('RightTable')} R WHERE L.num = R.num AND {WINDOWS})",
    "NOT IN": f"L.num NOT IN (SELECT num FROM {TVF.format('RightTable')} R WHERE {WINDOWS})",
    "NOT EXISTS": f"NOT EXISTS (SELECT * FROM {TVF.format('RightTable')} R WHERE L.num = R.num AND {WINDOWS})",
}


def _check(tmp_path: Path, where: str):
    f = tmp_path / "job.sql"
    f.write_text(TABLES + OUT + QUERY.format(where), encoding="utf-8")
    return check_file(f, environ={})


def _codes(c) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.col) for d in c.report.sorted()]


@pytest.mark.parametrize("form,how,on,condition", [
    ("IN", "semi", ["num", "window_start", "window_end"], None),
    ("EXISTS", "semi", ["num", "window_start", "window_end"], None),
    # SQL's NOT IN (Calcite's, Flink's): a row of R in the window with an equal key, or a NULL on either side,
    # makes the predicate not TRUE: the left row is left out
    ("NOT IN", "anti", ["window_start", "window_end"],
     "(num = o_windowed_2_num OR num IS NULL OR o_windowed_2_num IS NULL)"),
    ("NOT EXISTS", "anti", ["num", "window_start", "window_end"], None),
])
def test_flinks_window_semi_and_anti_joins_are_semi_and_anti_joins(tmp_path, form, how, on, condition):
    c = _check(tmp_path, FORMS[form])
    assert _codes(c) == [], [d.render() for d in c.report.sorted()]
    join = {t.id: t for t in c.pipeline.transforms}[f"o_{how}"]
    expected = {"id": f"o_{how}", "type": "join", "inputs": ["o_windowed", "o_windowed_2"], "on": on, "how": how,
                "within": 300.0}
    if condition:
        expected["condition"] = condition
    assert join.model_dump(exclude_defaults=True) | {"within": join.within.upper} == expected
    assert join.within.lower == -300.0
    # the left rows as they are, with their window: SELECT * needs no select
    assert [t.type for t in c.pipeline.transforms] == ["derive", "derive", "join"]
    assert [n for n, _ in c.graph.columns["o_" + how]] == ["row_time", "num", "id", "window_start", "window_end",
                                                 "window_time"]


def test_a_semi_join_keeps_the_rest_of_the_where(tmp_path):
    c = _check(tmp_path, FORMS["IN"] + " AND L.id <> 'L9'")
    assert _codes(c) == []
    assert [(t.type, getattr(t, "expr", None)) for t in c.pipeline.transforms][-1] == ("filter", "id <> 'L9'")


@pytest.mark.parametrize("where,col,message", [
    (f"L.num IN (SELECT num FROM {TVF.format('RightTable')} R WHERE L.window_start = R.window_start)", 254,
     "a window semi / anti join's sub-query WHERE has L.window_start = R.window_start AND L.window_end = "
     "R.window_end"),
    (f"L.num IN (SELECT num FROM RightTable R WHERE {WINDOWS})", 154,
     "a window semi / anti join's sub-query reads a window table function's rows"),
    (f"EXISTS (SELECT * FROM {TVF.format('RightTable')} R WHERE num = R.num AND {WINDOWS})", 250,
     "qualify column 'num' with L or R in a window semi / anti join"),
])
def test_what_a_window_semi_join_cannot_read_is_an_error_at_its_position(tmp_path, where, col, message):
    c = _check(tmp_path, where)
    assert [(d.line, d.col) for d in [x.span for x in c.report.errors]] == [(4, col)], \
        [d.render() for d in c.report.sorted()]
    assert c.report.errors[0].message == message


@pytest.mark.parametrize("fn,args", [("HOP", "INTERVAL '5' MINUTES, INTERVAL '10' MINUTES"),
                                     ("CUMULATE", "INTERVAL '5' MINUTES, INTERVAL '10' MINUTES")])
def test_a_window_join_of_hop_or_cumulate_windows_joins_a_row_per_window(tmp_path, fn, args):
    tvf = "(SELECT * FROM TABLE(" + fn + "(TABLE {}, DESCRIPTOR(row_time), " + args + ")))"
    f = tmp_path / "job.sql"
    f.write_text(TABLES + "CREATE TABLE o (l STRING, r STRING) WITH (type = 'print');\n"
                 f"INSERT INTO o SELECT L.id, R.id FROM {tvf.format('LeftTable')} L JOIN {tvf.format('RightTable')} R "
                 f"ON L.num = R.num AND {WINDOWS};\n", encoding="utf-8")
    c = check_file(f, environ={})
    assert _codes(c) == []
    ts = {t.id: t for t in c.pipeline.transforms}
    assert [t.type for t in ts.values()] == ["derive", "select", "derive", "select", "join", "select"]
    assert ts["o_windows"].fields == ["row_time", "num", "id",
                                      "INLINE(window_bounds) AS (window_start, window_end, window_time)"]
    join = ts["o_join"]
    assert (join.inputs, join.on, join.within.lower, join.within.upper) == \
        (["o_windows", "o_windows_2"], ["num", "window_start", "window_end"], -600.0, 600.0)
