"""The `aggregate` transform (a continuously updated aggregate): positions of its errors, its columns and
what `etl explain` says each sink does with its updates (upsert by key or changelog)."""
from __future__ import annotations

from etl.plan.explain import explain_plan
from tests.unit.helpers import check, codes

PIPE = """
name: agg
sources:
  - id: orders
    type: file
    path: o.jsonl
    schema: {customer: string, amount: double, ts: timestamp}
    event_time: {field: ts, watermark: 1m}
transforms:
  - id: totals
    type: aggregate
    input: orders
    group_by: [GROUP]
    aggregates:
      - {fn: count, as: n}
      - {fn: sum, field: amount, as: AS}
HAVING
sinks:
  - SINK
"""
FILE = "{id: out, type: file, input: totals, path: out}"


def _pipe(group: str = "customer", as_: str = "total", having: str = "", sink: str = FILE) -> str:
    return PIPE.replace("GROUP", group).replace("AS}", as_ + "}").replace("HAVING", having).replace("SINK", sink)


def test_columns_and_changelog_into_an_append_only_sink(tmp_path):
    c = check(tmp_path, _pipe())
    assert c.ok, codes(c)
    assert dict(c.graph.columns["totals"]) == {"customer": "string", "n": "bigint", "total": "double",
                                               "_update": "boolean"}
    text = explain_plan(c.plan)
    assert "    continuous: one row per changed key after each micro-batch (updates keyed by customer)\n" in text
    assert ("    changes: updates of totals (keyed by customer) appended as a changelog: every row of a key is\n"
            "      written, flagged by _update\n") in text


def test_having_adds_retract(tmp_path):
    c = check(tmp_path, _pipe(having="    having: total > 10"))
    assert c.ok, codes(c)
    assert list(dict(c.graph.columns["totals"]))[-2:] == ["_update", "_retract"]
    assert "flagged by _update and _retract" in explain_plan(c.plan)


def test_keyed_sinks_upsert(tmp_path):
    sinks = {
        "{id: out, type: mysql, input: totals, database: d, user: u, table: t, mode: upsert, key: [customer]}":
            "upsert on (customer), the latest row per key is kept",
        "{id: out, type: elasticsearch, input: totals, hosts: ['http://h:9200'], index: i, id_fields: [customer]}":
            "document id from (customer), the latest row per key is kept",
        "{id: out, type: kafka, input: totals, bootstrap_servers: 'h:9092', topic: t, key: customer}":
            "message key customer (a compacted topic keeps the latest), the latest row per key is kept",
    }
    for sink, says in sinks.items():
        c = check(tmp_path, _pipe(sink=sink))
        assert c.ok, codes(c)
        text = " ".join(explain_plan(c.plan).split())
        assert f"changes: updates of totals (keyed by customer): {says}" in text, text


def test_errors_point_at_their_fields(tmp_path):
    assert codes(check(tmp_path, _pipe(group="custmer"))) == [("E310", 12, 16)]
    assert codes(check(tmp_path, _pipe(having="    having: totl > 1"))) == [("E310", 16, 13)]
    c = check(tmp_path, _pipe(as_="_update"))
    assert [d.code for d in c.report.sorted()] == ["E104"]
    assert "repeats another output column" in c.report.sorted()[0].message


def test_a_window_with_early_rows_is_an_update_stream_too(tmp_path):
    text = """
    name: w
    sources:
      - {id: o, type: file, path: o.jsonl, schema: {k: string, ts: timestamp}, event_time: {field: ts, watermark: 1m}}
    transforms:
      - {id: w, type: window, input: o, kind: tumbling, size: 1m, group_by: [k], aggregates: [{fn: count, as: n}],
         emit: {early: 10s}}
      - {id: s, type: select, input: w, fields: [k, window_start, n]}
    sinks:
      - {id: all, type: file, input: w, path: a}
      - {id: some, type: file, input: s, path: b}
      - {id: db, type: mysql, input: w, database: d, user: u, table: t, mode: upsert, key: [k, window_start]}
    """
    c = check(tmp_path, text)
    assert c.ok, codes(c)
    flat = " ".join(explain_plan(c.plan).split())
    head = "changes: updates of w (keyed by k, window_start, window_end)"
    assert f"{head} appended as a changelog: every row of a key is written, flagged by _final and _retract" in flat
    assert (f"{head} appended as a changelog: every row of a key is written, without its flags (not among the "
            "sink's columns)") in flat
    assert f"{head}: upsert on (k, window_start), the latest row per key is kept" in flat
