"""Row errors become dead letters in every expression stage (etl.compile.guard, etl/jvm/Guarded.java).

Each pipeline reads two files, one micro-batch each (max_files_per_trigger: 1), through the real runner: rows
that make an expression throw under ANSI SQL (a bad cast, a division by zero, an unparsable timestamp, an integer
overflow) are dead letters with the stage, `file:line:col` of the expression, Spark's error class and message,
and the input row as JSON; the other rows come out with exactly their values, and the second batch (with a
bad row too) is processed: the stream never stops."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from etl.check import check_file
from etl.runtime.runner import PipelineRun, RunOptions

pytestmark = pytest.mark.spark

SOURCE = ("  - {id: src, type: file, path: input, format: jsonl, max_files_per_trigger: 1, "
          "schema: {id: bigint, a: string, b: int, ts: string}}")
TS = "to_timestamp(ts, 'yyyy-MM-dd HH:mm:ss')"
GOOD = {"a": "5", "b": 4, "ts": "2026-01-01 10:00:00"}
BATCH1 = [
    {"id": 1, **GOOD},
    {"id": 2, **GOOD, "a": "x"},  # cast
    {"id": 3, **GOOD, "b": 0},  # division by zero
    {"id": 4, **GOOD, "ts": "yesterday"},  # unparsable timestamp
    {"id": 5, **GOOD, "b": 2000000000},  # b * 2 overflows int
    {"id": 6, **GOOD, "a": "-1000"},
]
BATCH2 = [{"id": 7, **GOOD, "a": "12"}, {"id": 8, **GOOD, "a": "1e"}]
CAST = "CAST_INVALID_INPUT: The value 'x' of the type \"STRING\" cannot be cast to \"INT\" because it is malformed."
CAST2 = CAST.replace("'x'", "'1e'")
DIV = "DIVIDE_BY_ZERO: Division by zero."
PARSE = "CANNOT_PARSE_TIMESTAMP: Text 'yesterday' could not be parsed at index 0."
OVERFLOW = "ARITHMETIC_OVERFLOW: overflow."


def run(spark, folder: Path, body: str, outputs: tuple[str, ...] = ("output",)) -> tuple[dict, list[dict]]:
    (folder / "input").mkdir(parents=True)
    for i, rows in enumerate((BATCH1, BATCH2)):
        (folder / "input" / f"part-{i}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = "name: guard\nsources:\n" + SOURCE + "\n" + textwrap.dedent(body) + "checkpoint: state/checkpoint\n"
    (folder / "p.yaml").write_text(text)
    c = check_file(folder / "p.yaml", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    r = PipelineRun(c.plan, spark, RunOptions(once=True, progress="none"))
    r.start()
    r.wait()
    assert r.failure is None
    got = {}
    for name in outputs:
        got[name] = sorted((json.loads(x) for f in sorted((folder / name).glob("part-*.jsonl"))
                            for x in f.read_text().splitlines()), key=lambda row: row["id"])
    dl = folder / "state" / "dead_letters"
    dead = [json.loads(x) for f in sorted(dl.glob("part-*.jsonl")) for x in f.read_text().splitlines()]
    return got, sorted(dead, key=lambda d: json.loads(d["payload"])["id"])


def row(i: int) -> dict:
    return next(r for r in BATCH1 + BATCH2 if r["id"] == i)


def check_dead(dead: list[dict], folder: Path, stage: str, expected: list[tuple[int, str, str]]) -> None:
    """expected: (row id, `line:col: <stage what>`, error) per dead letter."""
    assert len(dead) == len(expected), dead
    for d, (i, where, error) in zip(dead, expected, strict=True):
        assert d["pipeline"] == "guard" and d["stage"] == stage
        assert json.loads(d["payload"]) == row(i)
        assert d["reason"].startswith(f"{folder / 'p.yaml'}:{where}: {error}"), d["reason"]
        assert "\n" not in d["reason"] and "SQLSTATE" not in d["reason"] and "== SQL" not in d["reason"]


def test_derive(spark, tmp_path):
    got, dead = run(spark, tmp_path, f"""\
        transforms:
          - id: d
            type: derive
            input: src
            columns:
              n: "cast(a as int)"
              q: "100 div b"
              t: "{TS}"
              big: "b * 2"
              a: "concat(a, '!')"
        sinks:
          - {{id: out, type: file, input: d, path: output, format: jsonl}}
        """)
    t = "2026-01-01T10:00:00.000Z"
    assert got["output"] == [
        {"id": 1, "a": "5!", "b": 4, "ts": GOOD["ts"], "n": 5, "q": 25, "t": t, "big": 8},
        {"id": 6, "a": "-1000!", "b": 4, "ts": GOOD["ts"], "n": -1000, "q": 25, "t": t, "big": 8},
        {"id": 7, "a": "12!", "b": 4, "ts": GOOD["ts"], "n": 12, "q": 25, "t": t, "big": 8},
    ]
    check_dead(dead, tmp_path, "d", [
        (2, "9:10: derive 'd' column 'n'", CAST), (3, "10:10: derive 'd' column 'q'", DIV),
        (4, "11:10: derive 'd' column 't'", PARSE), (5, "12:12: derive 'd' column 'big'", OVERFLOW),
        (8, "9:10: derive 'd' column 'n'", CAST2)])


def test_select(spark, tmp_path):
    got, dead = run(spark, tmp_path, f"""\
        transforms:
          - id: s
            type: select
            input: src
            fields: [id, "cast(a as int) AS n", "100 div b AS q", "{TS} AS t", "b * 2 AS big"]
            drop: [t]
        sinks:
          - {{id: out, type: file, input: s, path: output, format: jsonl}}
        """)
    assert got["output"] == [{"id": 1, "n": 5, "q": 25, "big": 8}, {"id": 6, "n": -1000, "q": 25, "big": 8},
                             {"id": 7, "n": 12, "q": 25, "big": 8}]
    where = "8:{}: select 's' field"
    check_dead(dead, tmp_path, "s", [
        (2, f"{where.format(18)} 'cast(a as int) AS n'", CAST), (3, f"{where.format(41)} '100 div b AS q'", DIV),
        (4, f"{where.format(59)} \"{TS} AS t\"", PARSE), (5, f"{where.format(107)} 'b * 2 AS big'", OVERFLOW),
        (8, f"{where.format(18)} 'cast(a as int) AS n'", CAST2)])


def test_filter_expr(spark, tmp_path):
    got, dead = run(spark, tmp_path, f"""\
        transforms:
          - id: f
            type: filter
            input: src
            expr: "cast(a as int) + 100 div b + b * 2 > 0 AND {TS} IS NOT NULL"
        sinks:
          - {{id: out, type: file, input: f, path: output, format: jsonl}}
        """)
    assert got["output"] == [row(1), row(7)]  # 6 is filtered out (false), not a dead letter
    where = "8:11: filter 'f' expr"
    check_dead(dead, tmp_path, "f", [(2, where, CAST), (3, where, DIV), (4, where, PARSE), (5, where, OVERFLOW),
                                     (8, where, CAST2)])


def test_route(spark, tmp_path):
    got, dead = run(spark, tmp_path, f"""\
        transforms:
          - id: r
            type: route
            input: src
            routes:
              small: "cast(a as int) < 10"
              odd: "b * 2 + 100 div b > 1 AND {TS} IS NOT NULL AND cast(a as int) % 2 = 1"
            default: rest
        sinks:
          - {{id: small, type: file, input: r.small, path: small, format: jsonl}}
          - {{id: odd, type: file, input: r.odd, path: odd, format: jsonl}}
          - {{id: rest, type: file, input: r.rest, path: rest, format: jsonl}}
        """, ("small", "odd", "rest"))
    assert got == {"small": [row(1), row(6)], "odd": [row(1)], "rest": [row(7)]}
    small, odd = "9:14: route 'r' route 'small'", "10:12: route 'r' route 'odd'"
    check_dead(dead, tmp_path, "r", [(2, small, CAST), (3, odd, DIV), (4, odd, PARSE), (5, odd, OVERFLOW),
                                     (8, small, CAST2)])


def run_window(spark, tmp_path: Path, column: str, transforms: str, rows: list[dict]) -> dict[str, list[dict]]:
    """A file source (id, `column`, n, ts with a 0 s watermark), then `transforms` (and sinks); its 9 lines first."""
    from tests.spark.helpers import run_events

    head = f"""\
        name: guard-window
        sources:
          - id: src
            type: file
            path: input
            format: jsonl
            schema: {{id: bigint, {column}, n: int, ts: timestamp}}
            event_time: {{field: ts, watermark: 0s}}
        transforms:
        """
    return run_events(spark, tmp_path, textwrap.dedent(head) + textwrap.dedent(transforms), {"src": rows})


def test_window_group_by_and_having(spark, tmp_path):
    """In the streaming plan: a row whose group_by expression throws, and a window whose `having` throws."""
    t = "2026-01-10T09:00:{:02d}Z"
    got = run_window(spark, tmp_path, "a: string", """\
          - id: w
            type: window
            input: src
            kind: tumbling
            size: 1m
            group_by: ["cast(a as int) % 2"]
            aggregates:
              - {fn: count, as: cnt}
              - {fn: sum, field: n, as: total}
            having: "100 div (total - 10) >= 0"
        sinks:
          - {id: out, type: file, input: w, path: output, format: jsonl}
        """, [{"id": 1, "a": "1", "n": 3, "ts": t.format(1)}, {"id": 2, "a": "3", "n": 7, "ts": t.format(2)},
                      {"id": 3, "a": "x", "n": 1, "ts": t.format(3)}, {"id": 4, "a": "2", "n": 10, "ts": t.format(4)},
                      {"id": 5, "a": "6", "n": 5, "ts": t.format(5)},
                      {"id": 6, "a": "4", "n": 1, "ts": "2026-01-10T09:02:00Z"}])
    start, end = "2026-01-10 09:00:00+00:00", "2026-01-10 09:01:00+00:00"
    assert [{k: str(v) for k, v in r.items()} for r in got["out"]] == [
        {"cast(a as int) % 2": "0", "window_start": start, "window_end": end, "cnt": "2", "total": "15"}]
    dead = sorted(got["dead_letter"], key=lambda d: d["reason"])
    assert [d["stage"] for d in dead] == ["w", "w"]
    p = tmp_path / "p.yaml"
    assert dead[0]["reason"].startswith(f"{p}:15:16: window 'w' group_by 'cast(a as int) % 2': {CAST}")
    assert json.loads(dead[0]["payload"]) == {"id": 3, "a": "x", "n": 1, "ts": "2026-01-10T09:00:03.000Z"}
    assert dead[1]["reason"].startswith(f"{p}:19:13: window 'w' having: {DIV}")
    assert json.loads(dead[1]["payload"]) == {"cast(a as int) % 2": 1, "window_start": "2026-01-10T09:00:00.000Z",
                                              "window_end": "2026-01-10T09:01:00.000Z", "cnt": 2, "total": 10}


def test_having_on_the_state_engine(spark, tmp_path):
    """The state engine (here for late events to dead letters) evaluates `having` itself: a window row on which it
    throws is a dead letter with the window's row as payload; the other windows come out."""
    t = "2026-01-10T09:00:{:02d}Z"
    got = run_window(spark, tmp_path, "a: string", """\
          - id: w
            type: window
            input: src
            kind: tumbling
            size: 1m
            group_by: [a]
            aggregates:
              - {fn: count, as: cnt}
              - {fn: sum, field: n, as: total}
            having: "100 div (total - 10) < 0"
            emit: {late: dead_letter}
        sinks:
          - {id: out, type: file, input: w, path: output, format: jsonl}
        """, [{"id": 1, "a": "1", "n": 3, "ts": t.format(1)}, {"id": 2, "a": "3", "n": 7, "ts": t.format(2)},
              {"id": 3, "a": "2", "n": 10, "ts": t.format(3)}, {"id": 4, "a": "6", "n": 5, "ts": t.format(4)},
              {"id": 5, "a": "4", "n": 1, "ts": "2026-01-10T09:02:00Z"}])
    assert sorted((r["a"], r["cnt"], r["total"]) for r in got["out"]) == [("1", 1, 3), ("3", 1, 7), ("6", 1, 5)]
    [dead] = got["dead_letter"]
    assert dead["stage"] == "w"
    assert dead["reason"].startswith(f"{tmp_path / 'p.yaml'}:19:13: window 'w' having: {DIV}"), dead["reason"]
    assert json.loads(dead["payload"]) == {"a": "2", "window_start": "2026-01-10T09:00:00.000Z",
                                           "window_end": "2026-01-10T09:01:00.000Z", "cnt": 1, "total": 10}


def test_an_overflowing_sum_is_null_for_its_window_and_the_stream_goes_on(spark, tmp_path):
    """Spark's ANSI `sum` throws on overflow, which no row guard can catch (the aggregate, not a row, fails): the
    window's sum and avg are Spark's try_ forms, so that window's total is NULL and the others are exact."""
    t = "2026-01-10T09:00:{:02d}Z"
    big = 9_000_000_000_000_000_000
    got = run_window(spark, tmp_path, "big: bigint", """\
          - id: w
            type: window
            input: src
            kind: tumbling
            size: 1m
            group_by: [n]
            aggregates: [{fn: count, as: cnt}, {fn: sum, field: big, as: total}, {fn: avg, field: big, as: mean}]
        sinks:
          - {id: out, type: file, input: w, path: output, format: jsonl}
        """, [{"id": 1, "big": big, "n": 1, "ts": t.format(1)}, {"id": 2, "big": big, "n": 1, "ts": t.format(2)},
              {"id": 3, "big": 5, "n": 2, "ts": t.format(3)}, {"id": 4, "big": 7, "n": 2, "ts": t.format(4)},
              {"id": 5, "big": 1, "n": 3, "ts": "2026-01-10T09:02:00Z"}])
    assert sorted((r["n"], r["cnt"], r.get("total"), r["mean"]) for r in got["out"]) == [
        (1, 2, None, 9e18), (2, 2, 12, 6.0)]
    assert got.get("dead_letter", []) == []


def test_a_stage_upstream_of_a_window_is_guarded_in_the_streaming_plan(spark, tmp_path):
    """The derive runs twice: per micro-batch of the source's query (optimistic, its dead letters) and inside the
    window's streaming plan (always guarded): the bad row is one dead letter and is not counted."""
    t = "2026-01-10T09:00:{:02d}Z"
    got = run_window(spark, tmp_path, "k: string", """\
          - {id: d, type: derive, input: src, columns: {q: "100 div n"}}
          - id: w
            type: window
            input: d
            kind: tumbling
            size: 1m
            group_by: [k]
            aggregates: [{fn: count, as: cnt}, {fn: sum, field: q, as: total}]
        sinks:
          - {id: out, type: file, input: w, path: output, format: jsonl}
        """, [{"id": 1, "k": "a", "n": 4, "ts": t.format(1)}, {"id": 2, "k": "a", "n": 0, "ts": t.format(2)},
                      {"id": 3, "k": "a", "n": 50, "ts": t.format(3)},
                      {"id": 4, "k": "b", "n": 1, "ts": "2026-01-10T09:02:00Z"}])
    assert [(r["k"], r["cnt"], r["total"]) for r in got["out"]] == [("a", 2, 27)]
    [dead] = got["dead_letter"]
    assert dead["stage"] == "d"
    assert dead["reason"].startswith(f"{tmp_path / 'p.yaml'}:10:52: derive 'd' column 'q': {DIV}")
    assert json.loads(dead["payload"]) == {"id": 2, "k": "a", "n": 0, "ts": "2026-01-10T09:00:02.000Z"}


def test_parse_and_grok_conversions_already_make_dead_letters(spark, tmp_path):
    """parse (json) and grok convert types without throwing (PERMISSIVE from_json, try_cast): a value that does
    not convert makes its row a dead letter, not a failed query."""
    from tests.spark.helpers import run_events

    got = run_events(spark, tmp_path, """\
        name: guard-parse
        sources:
          - {id: src, type: file, path: input, format: text}
        transforms:
          - {id: p, type: parse, input: src, field: line, format: json, schema: {n: int, t: timestamp}}
          - {id: g, type: grok, input: src, field: line, pattern: "n=%{NUMBER:n:int}"}
        sinks:
          - {id: out, type: file, input: p, path: output, format: jsonl}
          - {id: out2, type: file, input: g, path: output2, format: jsonl}
        """, {"src": [{"line": '{"n": 1, "t": "2026-01-10T09:00:00Z"}'}, {"line": '{"n": "x", "t": "2026-01-10"}'},
                      {"line": '{"n": 2, "t": "yesterday"}'}, {"line": "n=99999999999"}]})
    assert [r["n"] for r in got["out"]] == [1]
    assert got["out2"] == []
    reasons = sorted((d["stage"], d["reason"], d["payload"]) for d in got["dead_letter"])
    assert [(s, r) for s, r, _ in reasons] == [
        ("g", "field 'n': cannot convert '99999999999' to int"), ("g", "no match for grok pattern"),
        ("g", "no match for grok pattern"),
        ("g", "no match for grok pattern"), ("p", "malformed json"), ("p", "malformed json"), ("p", "malformed json")]


@pytest.mark.parametrize("jar", [True, False])
def test_the_guard_over_a_frame_with_and_without_etls_jar(spark, tmp_path, monkeypatch, jar):
    """build_derive inside guarding(): Guarded (etl's jar) names Spark's error; without the jar, Catalyst's
    TryEval still keeps the stream going, with a reason that says less."""
    from etl.compile import guard, jvm
    from etl.compile.context import CompileContext
    from etl.components.transforms.derive.build import build_derive
    from tests.spark.helpers import checked

    if not jar:
        monkeypatch.setattr(jvm, "available", lambda spark: False)
    c = checked(tmp_path, """\
        name: g
        sources: [{id: src, type: file, path: input, format: jsonl, schema: {a: string, b: int}}]
        transforms: [{id: d, type: derive, input: src, columns: {n: "cast(a as int) div b", a: "upper(a)"}}]
        sinks: [{id: out, type: print, input: d}]
        """)
    df = spark.createDataFrame([("4", 2), ("x", 1), ("9", 0), (None, 1)], "a string, b int")
    with guard.guarding():
        built = build_derive(CompileContext(spark, c.graph), c.graph.node("d"), [df])
    assert sorted(map(tuple, built.out.collect()), key=str) == [("4", 2, 2), (None, 1, None)]
    dead = sorted((json.loads(r.payload)["a"], r.reason) for r in built.dead.collect())
    where = f"{tmp_path / 'p.yaml'}:3:61: derive 'd' column 'n': "
    if jar:
        assert [(a, r[:len(where) + 19]) for a, r in dead] == [("9", where + "DIVIDE_BY_ZERO: Div"),
                                                              ("x", where + "CAST_INVALID_INPUT:")]
    else:
        assert dead == [("9", where + guard.UNGUARDED_REASON), ("x", where + guard.UNGUARDED_REASON)]


def test_filter_rules_and_expr(spark, tmp_path):
    """Rules first (kept: cmd starts with curl), then the guarded `expr` on the rows they keep."""
    from etl.compile import guard
    from etl.compile.context import CompileContext
    from etl.components.transforms.filter.build import build
    from tests.spark.helpers import checked

    c = checked(tmp_path, """\
        name: g
        sources: [{id: src, type: file, path: input, format: jsonl, schema: {cmd: string, code: string}}]
        transforms:
          - {id: f, type: filter, input: src, expr: "cast(code as int) < 300",
             rules: [{id: c, when: {field: cmd, regex: '^curl'}}]}
        sinks: [{id: out, type: print, input: f}]
        """)
    df = spark.createDataFrame([("curl a", "200"), ("curl b", "x"), ("ls", "y"), ("curl c", "404")],
                               "cmd string, code string")
    with guard.guarding():
        built = build(CompileContext(spark, c.graph), c.graph.node("f"), [df])
    assert [tuple(r) for r in built.out.collect()] == [("curl a", "200")]
    [dead] = built.dead.collect()
    assert json.loads(dead.payload) == {"cmd": "curl b", "code": "x"}
    assert dead.reason.startswith(f"{tmp_path / 'p.yaml'}:4:45: filter 'f' expr: CAST_INVALID_INPUT: The value 'x'")
