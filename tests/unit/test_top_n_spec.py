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


CONTINUOUS = """
name: top
sources:
  - {id: orders, type: file, path: o.jsonl, schema: {country: string, amount: double, ts: timestamp}}
transforms:
  - {id: totals, type: aggregate, input: orders, group_by: [country], aggregates: [{fn: sum, field: amount, as: amount}]}
  - id: top
    type: top_n
    input: INPUT
    continuous: true
    PARTorder_by: [amount DESC]
    n: 2
    RANK
sinks:
  - {id: out, type: file, input: top, path: out}
  - {id: db, type: mysql, input: top, database: d, user: u, table: t, mode: upsert, key: [country, rownum]}
  - {id: t, type: file, input: totals, path: t}
"""


def _continuous(inp: str = "orders", part: str = "partition_by: [country]\n    ", rank: str = "rank: rownum") -> str:
    return CONTINUOUS.replace("INPUT", inp).replace("PART", part).replace("RANK", rank)


def test_continuous_top_n_columns_explain_and_changes(tmp_path):
    c = check(tmp_path, _continuous())
    assert c.ok, codes(c)
    assert dict(c.graph.columns["top"]) == {"country": "string", "amount": "double", "ts": "timestamp",
                                            "rownum": "int", "_update": "boolean"}
    flat = " ".join(explain_plan(c.plan).split())
    assert ("continuous: the rows whose rank changed, per changed key after each micro-batch (updates keyed by "
            "country, rownum) first 2 per country by amount DESC, rank in rownum (state: the first 2 rows per key)"
            in flat)
    assert ("changes: updates of top (keyed by country, rownum) appended as a changelog: every row of a key is "
            "written, flagged by _update") in flat
    assert "changes: updates of top (keyed by country, rownum): upsert on (country, rownum)" in flat
    from etl.physical import Target, physical_plan
    from etl.physical.explain import explain_text

    physical = " ".join(explain_text(c.plan, physical_plan(c.plan, Target())).split())
    assert "query top: streaming from top" in physical
    assert "top: spark-stream - in the streaming plan (state in RocksDB)" in physical
    c = check(tmp_path, _continuous(part=""))  # no partition_by: one global ranking
    assert c.ok, codes(c)
    assert "first 2 overall by amount DESC, rank in rownum (state: the first 2 rows)" in explain_plan(c.plan)


def test_continuous_top_n_errors(tmp_path):
    c = check(tmp_path, _continuous(inp="totals"))  # updates of keys are not rows as they arrive
    assert codes(c) == [("E104", 8, 12)]
    assert c.report.errors[0].message == ("top_n 'top' ranks rows as they arrive: it reads the updates of aggregate "
                                          "'totals' (a key's later rows replace its earlier ones)")
    c = check(tmp_path, _continuous(rank=""))  # the rank is the updates' key
    assert [d.code for d in c.report.sorted()] == ["E104"]
    assert "a continuous top_n writes updates keyed by partition_by and the rank" in c.report.errors[0].message
    c = check(tmp_path, _continuous(part="partition_by: [contry]\n    "))
    assert codes(c) == [("E310", 10, 20)]
    c = check(tmp_path, _pipe(part=""))  # per window, partition_by holds the window's start or end
    assert [d.code for d in c.report.sorted()] == ["E104"], codes(c)
    assert "a top_n per window needs partition_by with the window's start or end column" in c.report.errors[0].message


def test_ranking_keeps_incumbents_on_ties_and_nulls_lowest():
    from etl.components.transforms.top_n.state import changes, compare, ranked

    desc = compare(((1, True),))
    old = [("a", 30.0), ("b", 20.0)]
    top = ranked(old, [("c", 30.0), ("d", None), ("e", 25.0)], 2, desc)
    assert top == [("a", 30.0), ("c", 30.0)]  # a (ranked before) stays ahead of the tie c
    assert list(changes(old, top)) == [(2, ("c", 30.0), True)]
    assert ranked([], [("x", None), ("y", 1.0)], 2, desc) == [("y", 1.0), ("x", None)]  # DESC: nulls last
    asc = compare(((1, False), (0, True)))  # amount ASC, then name DESC
    assert ranked([], [("a", 2.0), ("b", 2.0), ("c", None)], 3, asc) == [("c", None), ("b", 2.0), ("a", 2.0)]
    assert list(changes([("c", None)], [("c", None), ("b", 2.0)])) == [(2, ("b", 2.0), False)]
