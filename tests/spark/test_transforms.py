"""Each transform through the real compile + runtime path (memory sources, capturing sinks)."""

from __future__ import annotations

import pytest

from etl.compile.context import CompileError
from etl.runtime.testing import canon
from tests.spark.helpers import checked, run_events

pytestmark = pytest.mark.spark

LOG = '%s - - [10/Jan/2026:12:00:%02d +0000] "GET %s HTTP/1.1" %d %s "-" "curl/8"'


def _sorted(rows, key):
    return sorted(rows, key=lambda r: r[key])


def test_filter_derive_select(spark, tmp_path):
    out = run_events(spark, tmp_path, """
        name: t-cols
        sources: [{id: src, type: file, path: in, format: jsonl, schema: {a: bigint, b: string}}]
        transforms:
          - {id: f, type: filter, input: src, expr: "a > 1"}
          - {id: d, type: derive, input: f, columns: {a2: "a * 2", a3: "a2 + 1"}}
          - {id: s, type: select, input: d, fields: [a, a3, "upper(b) AS B"], rename: {a3: plus}, drop: [a]}
        sinks: [{id: out, type: file, input: s, path: out}]
    """, {"src": [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}, {"a": None, "b": "n"}, {"a": 5, "b": "z"}]})
    assert _sorted(out["out"], "plus") == [{"plus": 5, "B": "Y"}, {"plus": 11, "B": "Z"}]


def test_filter_drop_mode_keeps_null_condition_rows(spark, tmp_path):
    out = run_events(spark, tmp_path, """
        name: t-drop
        sources: [{id: src, type: file, path: in, format: jsonl, schema: {a: bigint}}]
        transforms: [{id: f, type: filter, input: src, expr: "a > 1", mode: drop}]
        sinks: [{id: out, type: file, input: f, path: out}]
    """, {"src": [{"a": 1}, {"a": 2}, {"a": None}]})
    assert sorted(out["out"], key=lambda r: (r["a"] is None, r["a"])) == [{"a": 1}, {"a": None}]


def test_filter_rules_through_the_optimizer(spark, tmp_path):
    out = run_events(spark, tmp_path, """
        name: t-rules
        sources: [{id: src, type: file, path: in, format: jsonl, schema: {msg: string, code: bigint}}]
        transforms:
          - id: f
            type: filter
            input: src
            mode: tag
            rules:
              - {id: err, when: {field: msg, regex: "err(or)?", caseless: true}}
              - {id: server, when: {field: code, ge: 500}}
        sinks: [{id: out, type: file, input: f, path: out}]
    """, {"src": [{"msg": "ERROR x", "code": 200}, {"msg": "ok", "code": 503}, {"msg": "fine", "code": 100}]})
    got = {r["msg"]: sorted(r["matched_rules"]) for r in out["out"]}
    assert got == {"ERROR x": ["err"], "ok": ["server"], "fine": []}


def test_grok_types_dead_letters_and_control_characters(spark, tmp_path):
    lines = [
        LOG % ("1.2.3.4", 1, "/a", 200, "512"),
        "garbage line",
        LOG % ("1.2.3.5", 2, "/b\u0001c", 404, "-"),  # a separator character inside the line: exact path
        None,
    ]
    out = run_events(spark, tmp_path, r"""
        name: t-grok
        sources: [{id: src, type: file, path: in, format: text}]
        transforms:
          - id: g
            type: grok
            input: src
            field: line
            pattern: '%{IPORHOST:ip} %{USER} %{USER} \[%{HTTPDATE}\] "%{WORD:verb} %{NOTSPACE:path} HTTP/%{NUMBER}" %{INT:status:int} (?:%{INT:bytes:int}|-)'
            keep_original: false
        sinks: [{id: out, type: file, input: g, path: out}]
    """, {"src": [{"line": x} for x in lines]})
    assert _sorted(out["out"], "ip") == [
        {"ip": "1.2.3.4", "verb": "GET", "path": "/a", "status": 200, "bytes": 512},
        {"ip": "1.2.3.5", "verb": "GET", "path": "/b\u0001c", "status": 404, "bytes": None},
    ]
    dead = sorted(out["dead_letter"], key=lambda r: str(r["payload"]))
    assert [(d["stage"], d["payload"]) for d in dead] == [("g", None), ("g", "garbage line")]
    assert "no match" in dead[1]["reason"] and "is null" in dead[0]["reason"]
    assert all(d["pipeline"] == "t-grok" for d in dead)


def test_grok_conversion_failure_is_a_dead_letter_and_on_error_keep(spark, tmp_path):
    text = """
        name: t-grok2
        sources: [{id: src, type: file, path: in, format: text}]
        transforms:
          - {id: g, type: grok, input: src, field: line, pattern: '%%{WORD:k}=%%{NOTSPACE:v:int}', on_error: %s}
        sinks: [{id: out, type: file, input: g, path: out}]
    """
    events = {"src": [{"line": "a=1"}, {"line": "b=x1"}, {"line": "zzz"}]}
    out = run_events(spark, tmp_path, text % "dead_letter", events)
    assert out["out"] == [{"line": "a=1", "k": "a", "v": 1}]
    reasons = sorted(d["reason"] for d in out["dead_letter"])
    assert reasons[0] == "field 'v': cannot convert 'x1' to int" and reasons[1].startswith("no match")
    out = run_events(spark, tmp_path, text % "keep", events)
    assert len(out["out"]) == 3 and "dead_letter" not in out


def test_grok_line_past_the_regex_step_budget_is_a_dead_letter(spark, tmp_path):
    # java.util.regex answers the lines the matcher program is not sure of (non-ASCII ones); on the first line it
    # would backtrack for hours (4.7 s at 100 repeats, over 2 min at 200): it gives up at its step budget instead,
    # and the line is a dead letter with that reason
    from etl.components.transforms.grok.build import GAVE_UP

    evil = "\u00e9" + "xyz" * 300
    out = run_events(spark, tmp_path, """
        name: t-grok3
        sources: [{id: src, type: file, path: in, format: text}]
        transforms:
          - {id: g, type: grok, input: src, field: line, keep_original: false,
             pattern: '%{GREEDYDATA:a}x%{GREEDYDATA:b}y%{GREEDYDATA:c}z%{GREEDYDATA:d}!$'}
        sinks: [{id: out, type: file, input: g, path: out}]
    """, {"src": [{"line": evil}, {"line": "\u00e9axbyczd!"}, {"line": "axbxyczd!"}, {"line": "no"}]})
    assert _sorted(out["out"], "a") == [{"a": "axb", "b": None, "c": "c", "d": "d"},  # greedy; empty is NULL
                                        {"a": "\u00e9a", "b": "b", "c": "c", "d": "d"}]
    dead = sorted((d["payload"], d["reason"]) for d in out["dead_letter"])
    assert dead == [("no", "no match for grok pattern"), (evil, GAVE_UP)]


def test_grok_pattern_without_captures_filters_lines(spark, tmp_path):
    # a pattern without named captures matches as in Logstash (it was a dead letter with the "gave up" reason):
    # the line passes unchanged, and one that does not match is a dead letter saying so
    out = run_events(spark, tmp_path, """
        name: t-grok4
        sources: [{id: src, type: file, path: in, format: text}]
        transforms:
          - {id: g, type: grok, input: src, field: line, pattern: '^%{IPV4}$'}
        sinks: [{id: out, type: file, input: g, path: out}]
    """, {"src": [{"line": "127.0.0.1"}, {"line": "10.0.0.256"}]})
    assert out["out"] == [{"line": "127.0.0.1"}]
    assert [(d["payload"], d["reason"]) for d in out["dead_letter"]] == [("10.0.0.256", "no match for grok pattern")]


def test_grok_fields_as_logstash_sets_them(spark, tmp_path):
    # Logstash's handle(): a field captured where the input has a string column becomes a list (message), unless
    # in overwrite (msg2); captured twice where both can take part: a list (w); in alternatives: one value (t);
    # ecs-v1 names are nested fields (struct columns), [a][b] references too; named_captures_only: false captures
    # %{INT} into INT (and %{SYSLOGPROG} into SYSLOGPROG); the reference (etl.grok.GrokPattern.match) gives the same rows
    from etl.grok import expand

    out = run_events(spark, tmp_path, r"""
        name: t-grok5
        sources: [{id: src, type: file, path: in, format: jsonl, schema: {message: string, msg2: string}}]
        transforms:
          - {id: g, type: grok, input: src, field: message, overwrite: [msg2], named_captures_only: false,
             pattern: '^%{SYSLOGPROG} (?:%{WORD:t}|\[%{INT:t}\]) %{WORD:w} %{WORD:w} %{INT}:%{GREEDYDATA:message}:%{GREEDYDATA:msg2}$',
             patterns: ecs-v1}
          - {id: r, type: grok, input: src, field: message, pattern: '%{WORD:[a][b]} \[?%{NUMBER:[a][c]:long}'}
        sinks: [{id: out, type: file, input: g, path: out}, {id: out2, type: file, input: r, path: out2}]
    """, {"src": [{"message": "sshd[12] x a b 7:rest:tail", "msg2": "old"},
                  {"message": "cron [3] a b 8::", "msg2": "old"}]})
    got = sorted(out["out"], key=lambda r: r["INT"])
    assert got == [
        {"SYSLOGPROG": "sshd[12]", "process": {"name": "sshd", "pid": 12}, "t": "x", "w": ["a", "b"], "INT": "7",
         "message": ["sshd[12] x a b 7:rest:tail", "rest"], "msg2": "tail"},
        {"SYSLOGPROG": "cron", "process": {"name": "cron", "pid": None}, "t": "3", "w": ["a", "b"], "INT": "8",
         "message": ["cron [3] a b 8::"], "msg2": "old"},
    ]
    g = expand(r"^%{SYSLOGPROG} (?:%{WORD:t}|\[%{INT:t}\]) %{WORD:w} %{WORD:w} %{INT}:%{GREEDYDATA:message}:"
               r"%{GREEDYDATA:msg2}$", library="ecs-v1", named_captures_only=False)
    assert [g.match(r["message"][0], {"message": r["message"][0], "msg2": "old"}, ("msg2",)) for r in got] == got
    assert sorted(out["out2"], key=lambda r: r["message"]) == [
        {"message": "cron [3] a b 8::", "msg2": "old", "a": {"b": "cron", "c": 3}},
        {"message": "sshd[12] x a b 7:rest:tail", "msg2": "old", "a": {"b": "b", "c": 7}}]
    assert out["dead_letter"] == []


def test_parse_json_kv_csv_with_malformed_rows(spark, tmp_path):
    out = run_events(spark, tmp_path, """
        name: t-parse
        sources: [{id: src, type: file, path: in, format: jsonl, schema: {j: string, kv: string, c: string}}]
        transforms:
          - {id: pj, type: parse, input: src, field: j, format: json, schema: {a: int, b: string}, keep_original: false}
          - {id: pk, type: parse, input: pj, field: kv, format: kv, schema: {x: int, y: string}, keep_original: false}
          - {id: pc, type: parse, input: pk, field: c, format: csv, schema: {n: int, m: string}, keep_original: false}
        sinks: [{id: out, type: file, input: pc, path: out}]
    """, {"src": [
        {"j": '{"a": 1, "b": "u"}', "kv": "x=5 y=hi", "c": "7,z"},
        {"j": "{broken", "kv": "x=1", "c": "1,a"},
        {"j": '{"a": 2}', "kv": "x=oops", "c": "1,a"},
        {"j": '{"a": 3}', "kv": "x=1 y", "c": "1,a"},
        {"j": '{"a": 4}', "kv": "x=1", "c": "1,a,extra"},
        {"j": '{"a": 5}', "kv": "y=2  x=3", "c": "9,q"},
    ]})
    assert _sorted(out["out"], "a") == [
        {"a": 1, "b": "u", "x": 5, "y": "hi", "n": 7, "m": "z"},
        {"a": 5, "b": None, "x": 3, "y": "2", "n": 9, "m": "q"},
    ]
    dead = {(d["stage"], d["payload"]): d["reason"] for d in out["dead_letter"]}
    assert dead == {
        ("pj", "{broken"): "malformed json",
        ("pk", "x=oops"): "field 'x': cannot convert 'oops' to int",
        ("pk", "x=1 y"): "malformed key-value pair (no '=')",
        ("pc", "1,a,extra"): "malformed csv",
    }


def test_union_and_route(spark, tmp_path):
    out = run_events(spark, tmp_path, """
        name: t-route
        sources:
          - {id: a, type: file, path: in, format: jsonl, schema: {n: bigint}}
          - {id: b, type: file, path: in, format: jsonl, schema: {n: bigint, tag: string}}
        transforms:
          - {id: u, type: union, inputs: [a, b]}
          - {id: r, type: route, input: u, routes: {small: "n < 10", even: "n % 2 = 0"}, default: rest, exclusive: true}
          - {id: r2, type: route, input: u, routes: {even: "n % 2 = 0"}}
        sinks:
          - {id: small, type: file, input: r.small, path: o1}
          - {id: even, type: file, input: r.even, path: o2}
          - {id: rest, type: file, input: r.rest, path: o3}
          - {id: all_even, type: file, input: r2.even, path: o4}
    """, {"a": [{"n": 1}, {"n": 12}], "b": [{"n": 4, "tag": "x"}, {"n": 13, "tag": "y"}]})
    assert sorted(r["n"] for r in out["small"]) == [1, 4]
    assert [r["n"] for r in out["even"]] == [12]
    assert [r["n"] for r in out["rest"]] == [13]
    assert sorted(r["n"] for r in out["all_even"]) == [4, 12]
    assert {r["n"]: r["tag"] for r in out["small"]} == {1: None, 4: "x"}


def test_dedupe_within_watermark(spark, tmp_path):
    out = run_events(spark, tmp_path, """
        name: t-dedupe
        sources:
          - {id: src, type: file, path: in, format: jsonl, schema: {id: string, ts: timestamp},
             event_time: {field: ts, watermark: 1m}}
        transforms: [{id: d, type: dedupe, input: src, keys: [id]}]
        sinks: [{id: out, type: file, input: d, path: out}]
    """, {"src": [{"id": "a", "ts": "2026-01-01T00:00:00Z"}, {"id": "a", "ts": "2026-01-01T00:00:10Z"},
                  {"id": "b", "ts": "2026-01-01T00:00:20Z"}]})
    assert sorted(r["id"] for r in out["out"]) == ["a", "b"]


def test_sliding_window_with_having(spark, tmp_path):
    out = run_events(spark, tmp_path, """
        name: t-window
        sources:
          - {id: src, type: file, path: in, format: jsonl, schema: {k: string, v: bigint, ts: timestamp},
             event_time: {field: ts, watermark: 0s}}
        transforms:
          - id: w
            type: window
            input: src
            kind: sliding
            size: 2m
            slide: 1m
            group_by: [k]
            aggregates: [{fn: sum, field: v, as: total}, {fn: count, as: n}]
            having: "n >= 2"
        sinks: [{id: out, type: file, input: w, path: out}]
    """, {"src": [{"k": "a", "v": 1, "ts": "2026-01-01T00:00:10Z"}, {"k": "a", "v": 2, "ts": "2026-01-01T00:01:10Z"},
                  {"k": "b", "v": 5, "ts": "2026-01-01T00:01:20Z"}, {"k": "z", "v": 0, "ts": "2026-01-01T00:10:00Z"}]})
    # a: windows [-1m, 1m) and [0m, 2m) hold 1 event / 2 events; only the second passes `having`
    assert canon(out["out"]) == [{"k": "a", "window_start": "2026-01-01T00:00:00Z",
                                  "window_end": "2026-01-01T00:02:00Z", "total": 3, "n": 2}]


def test_a_component_without_a_runtime_builder_fails_at_compile_time_not_validate(spark, tmp_path, monkeypatch):
    from etl import registry
    from etl.compile import CompileContext, Compiler

    (tmp_path / "in").mkdir()  # the file source is compiled for real here
    c = checked(tmp_path, """
        name: t-later
        sources: [{id: a, type: file, path: in, format: jsonl, schema: {k: string}}]
        transforms: [{id: d, type: derive, input: a, columns: {x: "1"}}]
        sinks: [{id: out, type: file, input: d, path: out}]
    """)
    real = registry.Entry.load_builder

    def load(entry):
        if entry.type == "derive":
            raise ImportError("no module named etl.compile.columns")
        return real(entry)

    monkeypatch.setattr(registry.Entry, "load_builder", load)
    with pytest.raises(CompileError) as e:
        Compiler(CompileContext(spark, c.plan.graph)).queries()
    d = e.value.diagnostic(c.plan.graph)
    assert "transform type 'derive' is not supported by `etl run` yet" in d.message and d.code == "E402"
    assert d.span.line == 4  # points at the component in the YAML


def test_bad_sql_expression_points_at_its_node(spark, tmp_path):
    from etl.compile import CompileContext, Compiler

    (tmp_path / "in").mkdir()  # the file source is compiled for real here
    c = checked(tmp_path, """
        name: t-badsql
        sources: [{id: a, type: file, path: in, format: jsonl, schema: {k: string}}]
        transforms: [{id: d, type: derive, input: a, columns: {x: "array_contains(k, 1)"}}]
        sinks: [{id: out, type: file, input: d, path: out}]
    """)
    with pytest.raises(CompileError) as e:
        Compiler(CompileContext(spark, c.plan.graph)).queries()
    d = e.value.diagnostic(c.plan.graph)
    assert "derive 'd'" in d.message and d.span.line == 4


def test_a_static_lookup_table_is_not_a_query(spark, tmp_path):
    """A static table feeds lookups only (they load it themselves): no streaming pass and no dead-letter query
    over it -- only the events' queries run (the lookup's output, the events' dead letters)."""
    from etl.compile import CompileContext, Compiler

    (tmp_path / "users.csv").write_text("id,name\nu1,Ann\n")
    c = checked(tmp_path, """
        name: t-static
        sources:
          - {id: ev, type: file, path: ev, format: jsonl, schema: {user: string}}
          - {id: users, type: file, path: users.csv, format: csv, static: true, schema: {id: string, name: string}}
        transforms: [{id: e, type: lookup, input: ev, table: users, on: {user: id}, how: left, store: rocksdb}]
        sinks: [{id: out, type: file, input: e, path: out}]
    """)
    (tmp_path / "ev").mkdir()
    queries = Compiler(CompileContext(spark, c.plan.graph)).queries()
    assert sorted((q.name, [o.id for o in q.outputs]) for q in queries) == [("e", ["out"]), ("ev", ["dead_letter"])]
