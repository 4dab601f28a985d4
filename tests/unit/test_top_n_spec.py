"""The `top_n` transform and `dedupe` `keep: last`: positions of their errors, columns, explain lines."""
from __future__ import annotations

from etl.plan.explain import explain_plan
from tests.unit.helpers import check, codes

PIPE = """
name: top
sources:
  - id: orders
    type: file
    path: o.jsonl
    schema: {customer: string, amount: double, ts: timestamp}
    event_time: {field: ts, watermark: 1m}
transforms:
  - id: w
    type: window
    input: orders
    kind: tumbling
    size: 10m
    group_by: [customer]
    aggregates: [{fn: sum, field: amount, as: total}]
    EMIT
  - id: s
    type: select
    input: w
    fields: [window_start AS ws, customer, total]
  - id: top
    type: top_n
    input: INPUT
    partition_by: [PART]
    order_by: [ORDER]
    n: 2
    rank: rownum
sinks:
  - {id: out, type: file, input: top, path: out}
"""


def _pipe(inp: str = "s", part: str = "ws", order: str = "total DESC", emit: str = "") -> str:
    return PIPE.replace("INPUT", inp).replace("PART", part).replace("ORDER", order).replace("EMIT", emit)


def test_columns_and_explain(tmp_path):
    c = check(tmp_path, _pipe())
    assert c.ok, codes(c)
    assert dict(c.graph.columns["top"]) == {"ws": "timestamp", "customer": "string", "total": "double",
                                            "rownum": "int"}
    assert ("    first 2 per ws by total DESC, rank in rownum (each window's final rows, per micro-batch)\n"
            in explain_plan(c.plan))


def test_top_n_reads_a_window_with_final_rows_per_window(tmp_path):
    # the window `w` is then unused (W206)
    assert codes(check(tmp_path, _pipe(inp="orders", part="customer", order="amount"))) == [("W206", 17, 5),
                                                                                            ("E203", 23, 12)]
    assert codes(check(tmp_path, _pipe(part="customer"))) == [("E104", 24, 19)]
    # renamed by the select: window_start is `ws` at the top_n's input
    assert codes(check(tmp_path, _pipe(part="window_start"))) == [("E104", 24, 19), ("E310", 24, 20)]
    c = check(tmp_path, _pipe(emit="emit: {early: 1m}"))
    assert codes(c) == [("E104", 23, 12)]
    assert "several micro-batches" in c.report.sorted()[0].message


def test_a_window_or_select_that_did_not_validate_is_reported_there_only(tmp_path):
    """(a fuzz case: the top_n's checks read the invalid window's `emit` and stopped validation with E999)"""
    c = check(tmp_path, _pipe().replace("size: 10m", "size: banana"))
    assert [d.code for d in c.report.sorted()] == ["E102"], codes(c)
    c = check(tmp_path, _pipe().replace("fields: [window_start AS ws, customer, total]", "fields: 7"))
    assert "E999" not in [d.code for d in c.report.sorted()] and not c.ok, codes(c)


def test_order_by_entries(tmp_path):
    assert codes(check(tmp_path, _pipe(order="totl DESC"))) == [("E310", 25, 16)]
    c = check(tmp_path, _pipe(order="total DOWN"))
    assert codes(c) == [("E104", 25, 15)]
    assert "invalid order_by entry 'total DOWN': a column, optionally followed by ASC or DESC" in c.report.sorted()[0].message


def test_dedupe_keep_last_is_an_update_stream(tmp_path):
    text = """
    name: last
    sources:
      - {id: o, type: file, path: o.jsonl, schema: {k: string, ts: timestamp}, event_time: {field: ts, watermark: 1m}}
    transforms:
      - {id: d, type: dedupe, input: o, keys: [k], keep: last}
    sinks:
      - {id: out, type: file, input: d, path: out}
    """
    c = check(tmp_path, text)
    assert c.ok, codes(c)
    flat = " ".join(explain_plan(c.plan).split())
    assert "keep last: a key's newest event by event time" in flat
    assert "changes: updates of d (keyed by k) appended: every row is its key's newest so far" in flat
    assert codes(check(tmp_path, text.replace("keep: last", "keep: newest"))) == [("E102", 5, 54)]
