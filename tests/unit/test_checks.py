"""Graph checks: resources (E330/E331), delivery guarantees, event time (E320/E321), references."""
from etl.check import check_paths

from .helpers import check, codes, write

GEN = "{id: gen, type: generator, fields: {a: {sequence: 1}}}"


def test_shared_file_path_normalized(tmp_path):
    c = check(tmp_path, f"""
        name: s
        sources: [{GEN}]
        sinks:
          - {{id: a, type: file, input: gen, path: out/x}}
          - {{id: b, type: file, input: gen, path: out/./y/../x}}
          - {{id: c, type: file, input: gen, path: {tmp_path}/out/x}}
        """)
    assert codes(c) == [("E330", 5, 5), ("E330", 6, 5)]


def test_shared_topic_table_index(tmp_path):
    c = check(tmp_path, f"""
        name: s
        sources: [{GEN}]
        sinks:
          - {{id: k1, type: kafka, input: gen, bootstrap_servers: "h:1", topic: t}}
          - {{id: k2, type: kafka, input: gen, bootstrap_servers: "h:1", topic: t}}
          - {{id: m1, type: mysql, input: gen, database: d, user: u, table: t}}
          - {{id: m2, type: mysql, input: gen, database: d, user: u, table: t}}
          - {{id: e1, type: elasticsearch, input: gen, hosts: ["http://h:9200"], index: i}}
          - {{id: e2, type: elasticsearch, input: gen, hosts: ["http://h:9200"], index: i}}
          - {{id: e3, type: elasticsearch, input: gen, hosts: ["http://h:9200"], index: j}}
        """)
    assert codes(c) == [("E330", 5, 5), ("E330", 7, 5), ("E330", 9, 5)]


def test_shared_checkpoint_and_output_across_pipelines(tmp_path):
    a = write(tmp_path, "a.yaml", f"""
        name: same
        sources: [{GEN}]
        sinks: [{{id: o, type: file, input: gen, path: shared}}]
        """)
    b = write(tmp_path, "b.yaml", f"""
        name: same
        sources: [{GEN}]
        sinks: [{{id: o2, type: file, input: gen, path: shared}}]
        """)
    c = write(tmp_path, "c.yaml", f"""
        name: other
        checkpoint: ck
        sources: [{GEN}]
        sinks: [{{id: o3, type: file, input: gen, path: out3}}]
        """)
    d = write(tmp_path, "d.yaml", f"""
        name: other2
        checkpoint: {{path: ./ck}}
        sources: [{GEN}]
        sinks: [{{id: o4, type: print, input: gen}}]
        """)
    results = check_paths([a, b, c, d], environ={})
    got = {r.file.rsplit("/", 1)[-1]: [(x.code, x.span.line) for x in r.report.sorted()] for r in results}
    assert got == {"a.yaml": [], "b.yaml": [("E331", 1), ("E330", 3)], "c.yaml": [], "d.yaml": [("E331", 2)]}


def test_delivery_per_sink(tmp_path):
    c = check(tmp_path, """
        name: d
        sources:
          - {id: k, type: kafka, bootstrap_servers: "h:1", topics: [t]}
          - {id: dim, type: mysql, database: d, user: u, table: t, schema: {id: int}}
        transforms:
          - {id: l, type: lookup, input: k, table: dim, on: {id: id}}
        sinks:
          - {id: p, type: print, input: l}
          - {id: f, type: file, input: l, path: out/f}
          - {id: kx, type: kafka, input: l, bootstrap_servers: "h:1", topic: o1}
          - {id: ka, type: kafka, input: l, bootstrap_servers: "h:1", topic: o2, delivery: at_least_once}
          - {id: r, type: rocketmq, input: l, namesrv: "h:9876", topic: o3}
          - {id: m, type: mysql, input: l, database: d, user: u, table: o4}
          - {id: e, type: elasticsearch, input: l, hosts: ["http://h:9200"], index: o5}
        """)
    assert c.ok, codes(c)
    got = {d.sink_id: d.guarantee for d in c.plan.delivery}
    assert got == {"p": "at-least-once", "f": "exactly-once", "kx": "exactly-once", "ka": "at-least-once",
                   "r": "at-least-once", "m": "exactly-once", "e": "exactly-once"}
    assert "replayable sources (k)" in c.plan.delivery_of("m").reason  # the static table does not count
    assert "delivery: at_least_once" in c.plan.delivery_of("ka").reason


EVENT = """
name: e
sources:
  - id: a
    type: generator
    fields: {ts: {timestamp: event}, k: {int_range: [1, 3]}}
    event_time: {field: ts, watermark: 10s}
  - id: b
    type: generator
    fields: {ts: {timestamp: event}, k: {int_range: [1, 3]}}
transforms:
TRANSFORMS
sinks:
  - {id: out, type: print, input: last}
"""


def ev(tmp_path, transforms):
    return check(tmp_path, EVENT.replace("TRANSFORMS", transforms))


def test_event_time_rules(tmp_path):
    ok = [
        "  - {id: last, type: window, input: a, kind: tumbling, size: 1m, aggregates: [{fn: count, as: n}]}",
        "  - {id: last, type: window, input: b, kind: tumbling, size: 1m, time: processing, aggregates: [{fn: count, as: n}]}",
        "  - {id: last, type: window, input: b, kind: tumbling, size: 1m, event_time: {field: ts, watermark: 1s},"
        " aggregates: [{fn: count, as: n}]}",
        "  - {id: last, type: join, inputs: [a, b], on: [k], within: 1m, right_time: {field: ts, watermark: 5s}}",
        "  - {id: last, type: dedupe, input: b, keys: [k], event_time: {field: ts, watermark: 5s}}",
        "  - {id: f, type: filter, input: a, expr: 'k > 1'}\n"
        "  - {id: w, type: window, input: f, kind: sliding, size: 1m, slide: 10s, aggregates: [{fn: count, as: n}]}\n"
        "  - {id: last, type: window, input: w, kind: tumbling, size: 5m, aggregates: [{fn: sum, field: n, as: t}],"
        " event_time: {field: window_end, watermark: 1m}}",
    ]
    for t in ok:
        c = ev(tmp_path, t)
        assert c.ok, (t, codes(c))
    bad = {
        "  - {id: last, type: window, input: b, kind: session, gap: 1m, aggregates: [{fn: count, as: n}]}": "E320",
        "  - {id: last, type: join, inputs: [a, b], on: [k], within: 1m}": "E321",
        "  - {id: last, type: join, inputs: [b, a], on: [k], within: 1m}": "E321",
        "  - {id: last, type: dedupe, input: b, keys: [k]}": "E321",
        "  - {id: u, type: union, inputs: [a, b]}\n"
        "  - {id: last, type: window, input: u, kind: tumbling, size: 1m, aggregates: [{fn: count, as: n}]}": "E320",
        "  - {id: w, type: window, input: b, kind: tumbling, size: 1m, time: processing, aggregates: [{fn: count, as: n}]}\n"
        "  - {id: last, type: dedupe, input: w, keys: [n]}": "E321",
        # a processing-time window needs its own watermark, and Spark allows one per query: not over a's event time
        "  - {id: last, type: window, input: a, kind: tumbling, size: 1m, time: processing, aggregates: [{fn: count, as: n}]}":
        "E320",
        "  - {id: w, type: window, input: a, kind: sliding, size: 1m, slide: 10s, aggregates: [{fn: count, as: n}]}\n"
        "  - {id: last, type: window, input: w, kind: tumbling, size: 5m, aggregates: [{fn: sum, field: n, as: t}]}":
        "E320",
        "  - {id: s, type: select, input: a, fields: [k]}\n"
        "  - {id: last, type: window, input: s, kind: tumbling, size: 1m, aggregates: [{fn: count, as: n}]}": "E320",
    }
    for t, code in bad.items():
        c = ev(tmp_path, t)
        assert [d.code for d in c.report.errors] == [code], (t, codes(c))


def test_unused_warnings_and_strict(tmp_path):
    c = check(tmp_path, f"""
        name: u
        sources:
          - {GEN}
          - {{id: spare, type: generator, fields: {{a: {{sequence: 1}}}}}}
        transforms:
          - {{id: dangling, type: filter, input: gen, expr: "a > 1"}}
        sinks:
          - {{id: out, type: print, input: gen}}
        """)
    assert c.ok
    assert codes(c) == [("W204", 4, 5), ("W206", 6, 5)]
    assert c.report.has_errors(strict=True) and not c.report.has_errors()


def test_internal_error_becomes_e999(tmp_path, monkeypatch):
    import etl.graph.checks as checks

    def boom(graph, report):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(checks, "check_outputs", boom)
    c = check(tmp_path, f"""
        name: x
        sources: [{GEN}]
        sinks: [{{id: o, type: print, input: gen}}]
        """)
    assert [(d.code, d.message) for d in c.report.errors] == [("E999", "internal error: RuntimeError: kaboom")]
    assert c.plan is None
