"""Flink's window table functions without a JVM: CUMULATE and offsets assign the windows Flink's documentation
shows (the state engine's assigner, etl.compile.windows.state.windows_of, and the specs the SQL gives), GROUPING
SETS / ROLLUP / CUBE expand as that page says, window Top-N over a TVF's rows translates per window. The rows on
Spark: pipelines/sql/window_tvf.sql (tests/sql/test_sql_spark.py)."""
from __future__ import annotations

import textwrap
from datetime import datetime, UTC
from pathlib import Path

import pytest

from etl.check import check_file
from etl.compile.windows.state import Config, windows_of

BID = """\
CREATE TABLE Bid (bidtime TIMESTAMP(3), price DOUBLE, item STRING, supplier_id STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) WITH (type = 'file', filePath = 'bids.jsonl');
CREATE TABLE o (window_start TIMESTAMP, window_end TIMESTAMP, price DOUBLE) WITH (type = 'print');
"""


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def _hm(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")


def _check(tmp_path: Path, text: str):
    f = tmp_path / "job.sql"
    f.write_text(textwrap.dedent(text))
    return check_file(f, environ={})


def _window(c) -> dict:
    (w,) = [t.model_dump(by_alias=True, exclude_defaults=True) for t in c.pipeline.transforms if t.type == "window"]
    return w


def _assigner(w: dict) -> Config:
    sec = {"m": 60, "s": 1}
    ms = {k: int(str(v)[:-1]) * sec[str(v)[-1]] * 1000 for k, v in w.items() if k in ("size", "slide", "step", "offset")}
    return Config(w["kind"], ms["size"], ms.get("slide") or ms.get("step") or ms["size"], 0, None, False, (), (), (),
                  offset_ms=ms.get("offset", 0))


@pytest.mark.parametrize("offset,window", [  # Flink's "Window Offset" table: a record at 2021-06-30 00:00:04
    ("INTERVAL '-16' MINUTES", ("2021-06-29 23:54", "2021-06-30 00:04")),
    ("INTERVAL '-6' MINUTES", ("2021-06-29 23:54", "2021-06-30 00:04")),
    ("-INTERVAL '4' MINUTES", ("2021-06-29 23:56", "2021-06-30 00:06")),
    ("INTERVAL '0' MINUTES", ("2021-06-30 00:00", "2021-06-30 00:10")),
    ("INTERVAL '4' MINUTES", ("2021-06-29 23:54", "2021-06-30 00:04")),
    ("INTERVAL '6' MINUTES", ("2021-06-29 23:56", "2021-06-30 00:06")),
    ("INTERVAL '16' MINUTES", ("2021-06-29 23:56", "2021-06-30 00:06")),
])
def test_tumble_offsets_assign_flinks_windows(tmp_path, offset, window):
    c = _check(tmp_path, BID + "INSERT INTO o SELECT window_start, window_end, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, "
               f"DESCRIPTOR(bidtime), INTERVAL '10' MINUTES, {offset})) GROUP BY window_start, window_end;\n")
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    w = _window(c)
    assert w.get("offset") == {"23:54": "4m", "23:56": "6m", "00:00": None}[window[0][-5:]]
    (got,) = windows_of(_assigner(w), _ms("2021-06-30 00:00:04"))
    assert (_hm(got[0]), _hm(got[1])) == window


BIDS = [("2020-04-15 08:05", 4.0, "C"), ("2020-04-15 08:07", 2.0, "A"), ("2020-04-15 08:09", 5.0, "D"),
        ("2020-04-15 08:11", 3.0, "B"), ("2020-04-15 08:13", 1.0, "E"), ("2020-04-15 08:17", 6.0, "F")]


def _assigned(c) -> list[tuple[str, str, str, str]]:
    cfg = _assigner(_window(c))
    return [(t[-5:], item, _hm(s)[-5:], _hm(e)[-5:]) for t, _, item in BIDS for s, e in windows_of(cfg, _ms(t))]


def test_cumulate_assigns_the_documented_windows(tmp_path):
    """The 17 rows of Flink's `SELECT * FROM TABLE(CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES,
    INTERVAL '10' MINUTES))`, in its order (bidtime, item, window_start, window_end)."""
    c = _check(tmp_path, BID + "INSERT INTO o SELECT window_start, window_end, SUM(price) FROM TABLE(CUMULATE(TABLE "
               "Bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES)) GROUP BY window_start, "
               "window_end;\n")
    assert _window(c)["kind"] == "cumulating" and (_window(c)["size"], _window(c)["step"]) == ("10m", "2m")
    assert _assigned(c) == [
        ("08:05", "C", "08:00", "08:06"), ("08:05", "C", "08:00", "08:08"), ("08:05", "C", "08:00", "08:10"),
        ("08:07", "A", "08:00", "08:08"), ("08:07", "A", "08:00", "08:10"),
        ("08:09", "D", "08:00", "08:10"),
        ("08:11", "B", "08:10", "08:12"), ("08:11", "B", "08:10", "08:14"), ("08:11", "B", "08:10", "08:16"),
        ("08:11", "B", "08:10", "08:18"), ("08:11", "B", "08:10", "08:20"),
        ("08:13", "E", "08:10", "08:14"), ("08:13", "E", "08:10", "08:16"), ("08:13", "E", "08:10", "08:18"),
        ("08:13", "E", "08:10", "08:20"),
        ("08:17", "F", "08:10", "08:18"), ("08:17", "F", "08:10", "08:20")]


def test_hop_and_cumulate_offsets(tmp_path):
    """HOP's offset counts from the slide (Flink's sliding assigner), CUMULATE's from the size; each keeps only
    the remainder, the same windows."""
    c = _check(tmp_path, BID + "INSERT INTO o SELECT window_start, window_end, SUM(price) FROM TABLE(HOP(TABLE Bid, "
               "DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES, INTERVAL '7' MINUTES)) "
               "GROUP BY window_start, window_end;\n")
    assert (_window(c)["slide"], _window(c)["offset"]) == ("5m", "2m")
    assert _assigned(c)[:2] == [("08:05", "C", "07:57", "08:07"), ("08:05", "C", "08:02", "08:12")]
    c = _check(tmp_path, BID + "INSERT INTO o SELECT window_start, window_end, SUM(price) FROM TABLE(CUMULATE(TABLE "
               "Bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES, INTERVAL '-3' MINUTES)) "
               "GROUP BY window_start, window_end;\n")
    assert _window(c)["offset"] == "7m"
    assert _assigned(c)[:4] == [("08:05", "C", "07:57", "08:07"), ("08:07", "A", "08:07", "08:09"),
                                ("08:07", "A", "08:07", "08:11"), ("08:07", "A", "08:07", "08:13")]


def test_yaml_window_shape_errors(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text(textwrap.dedent("""\
        name: p
        sources:
          - {id: s, type: file, path: in, schema: {ts: timestamp, v: int}, event_time: {field: ts, watermark: 1s}}
        transforms:
          - {id: w, type: window, input: s, kind: tumbling, size: 10m, offset: 10m, aggregates: [{fn: count, as: n}]}
          - {id: c, type: window, input: s, kind: tumbling, size: 10m, step: 1m, aggregates: [{fn: count, as: n}]}
          - {id: u, type: window, input: s, kind: cumulating, size: 10m, aggregates: [{fn: count, as: n}]}
        sinks:
          - {id: o, type: print, inputs: [w, c, u]}
        """))
    c = check_file(f, environ={})
    got = [(d.code, d.span.line, d.span.col, d.message) for d in c.report.sorted()]
    assert got == [
        ("E104", 5, 5, "`offset` 10m is not shorter than the size (10m): it gives the windows of no offset (in "
         "transform 'w')"),
        ("E104", 6, 5, "`step` applies to a cumulating window, not a tumbling one (in transform 'c')"),
        ("E104", 7, 5, "a cumulating window needs `step` (in transform 'u')"),
    ], [d.render() for d in c.report.sorted()]


def _components(c) -> dict:
    return {t.id: t.model_dump(by_alias=True) for t in c.pipeline.components()}


SETS = BID.replace("o (window_start TIMESTAMP, window_end TIMESTAMP, price DOUBLE)",
                   "o (window_start TIMESTAMP, window_end TIMESTAMP, item STRING, supplier_id STRING, price DOUBLE)")


def test_cube_and_rollup_are_their_grouping_sets(tmp_path):
    """Flink's page: CUBE (supplier_id, item) is GROUPING SETS ((supplier_id, item), (supplier_id), (item), ()),
    ROLLUP (supplier_id, item) is ((supplier_id, item), (supplier_id), ()): the same windows, each set's own,
    the keys it lacks NULL, then a union."""
    q = ("INSERT INTO o SELECT window_start, window_end, item, supplier_id, SUM(price) AS price FROM TABLE(TUMBLE("
         "TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY window_start, window_end, {};\n")
    cube = _check(tmp_path, SETS + q.format("CUBE (supplier_id, item)"))
    sets = _check(tmp_path, SETS + q.format("GROUPING SETS ((supplier_id, item), (supplier_id), (item), ())"))
    assert cube.plan is not None and _components(cube) == _components(sets)
    windows = [t for t in cube.pipeline.transforms if t.type == "window"]
    assert [w.group_by for w in windows] == [["supplier_id", "item"], ["supplier_id"], ["item"], []]
    selects = [t.fields for t in cube.pipeline.transforms if t.type == "select"]
    assert selects[-1] == ["window_start", "window_end", "CAST(NULL AS STRING) AS item",
                            "CAST(NULL AS STRING) AS supplier_id", "price"]
    (union,) = [t for t in cube.pipeline.transforms if t.type == "union"]
    assert len(union.inputs) == 4 and cube.pipeline.sinks[0].inputs == [union.id]
    rollup = _check(tmp_path, SETS + q.format("ROLLUP (supplier_id, item)"))
    sets = _check(tmp_path, SETS + q.format("GROUPING SETS ((supplier_id, item), (supplier_id), ())"))
    assert _components(rollup) == _components(sets)


def test_window_top_n_over_a_hop_tvf_per_key(tmp_path):
    """PARTITION BY window_start, window_end, supplier_id over HOP's rows: the window collects per supplier, top_n
    ranks per window and supplier; equal prices: the earlier bid first (Flink: the earlier arrival)."""
    c = _check(tmp_path, BID.replace("o (window_start TIMESTAMP, window_end TIMESTAMP, price DOUBLE)",
                                     "o (item STRING, supplier_id STRING, window_end TIMESTAMP, rownum BIGINT)")
               + "INSERT INTO o SELECT item, supplier_id, window_end, rownum FROM (SELECT *, ROW_NUMBER() OVER ("
               "PARTITION BY window_start, window_end, supplier_id ORDER BY price DESC) AS rownum FROM TABLE(HOP(TABLE "
               "Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))) WHERE rownum <= 2;\n")
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    t = {x.type: x for x in c.pipeline.transforms}
    assert t["derive"].columns == {"_row": "struct(bidtime, price, item, supplier_id)"}
    w = t["window"]
    assert (w.kind, str(w.size), str(w.slide), w.group_by) == ("sliding", "10m", "5m", ["supplier_id"])
    assert [(a.fn, a.field, a.as_) for a in w.aggregates] == [("collect_list", "_row", "_rows")]
    top = t["top_n"]
    assert (top.partition_by, top.order_by, top.n, top.rank) == (
        ["window_start", "window_end", "supplier_id"], ["price DESC", "bidtime"], 2, "rownum")
    rows = [x for x in c.pipeline.transforms if x.type == "select"][0]
    assert rows.fields == ["inline(_rows) AS (bidtime, price, item, supplier_id)", "window_start", "window_end",
                           "window_end - INTERVAL 1 MILLISECOND AS window_time"]


GROUPING_SQL = """\
CREATE TABLE Bid (bidtime TIMESTAMP(3), price DOUBLE, item STRING, supplier_id STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) WITH (type = 'file', filePath = 'bids.jsonl');
CREATE TABLE o (supplier_id STRING, item STRING, g BIGINT, gid BIGINT, price DOUBLE) WITH (type = 'print');
INSERT INTO o SELECT supplier_id, item, GROUPING(supplier_id), GROUPING_ID(supplier_id, item), SUM(price)
FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end, CUBE (supplier_id, item);
"""


def test_grouping_and_grouping_id_of_each_cube_set(tmp_path):
    """GROUPING(x) is 1 in the rows of a set that does not group by x; GROUPING_ID(a, b) the bit vector, a the
    highest bit (Flink / Calcite): CUBE (supplier_id, item) gives 0/0, 0/1, 1/2, 1/3 (it was E011)."""
    (tmp_path / "job.sql").write_text(GROUPING_SQL)
    c = check_file(tmp_path / "job.sql", environ={})
    assert c.report.errors == [], [d.render() for d in c.report.errors]
    selects = [s.model_dump()["fields"] for s in c.pipeline.transforms if s.type == "select"]
    assert [[f for f in fields if f.endswith((" AS g", " AS gid"))] for fields in selects] == [
        ["CAST(0 AS BIGINT) AS g", "CAST(0 AS BIGINT) AS gid"], ["CAST(0 AS BIGINT) AS g", "CAST(1 AS BIGINT) AS gid"],
        ["CAST(1 AS BIGINT) AS g", "CAST(2 AS BIGINT) AS gid"], ["CAST(1 AS BIGINT) AS g", "CAST(3 AS BIGINT) AS gid"]]


def test_grouping_outside_grouping_sets_is_refused_at_the_call(tmp_path):
    (tmp_path / "job.sql").write_text(GROUPING_SQL.replace("CUBE (supplier_id, item)", "supplier_id, item"))
    c = check_file(tmp_path / "job.sql", environ={})
    assert [(d.code, d.span.line, d.span.col) for d in c.report.errors] == [("E011", 4, 41)]
