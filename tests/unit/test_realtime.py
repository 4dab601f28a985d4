"""`trigger: {mode: realtime}` (Spark's real-time mode, etl.graph.realtime): what etl validate refuses, each reason an
E415 at the trigger's `mode` naming the component and its position; the interval's floor (E102); the delivery explain
states; the planner keeping Python engines out of the mode; the run refusing one it still had to pick."""

from __future__ import annotations

from pathlib import Path

import pytest

from etl.check import check_file
from etl.physical import Target, physical_plan

ROOT = Path(__file__).resolve().parents[2]
KAFKA = 'bootstrap_servers: "127.0.0.1:9092"'
SOURCE = f"  - {{id: a, type: kafka, {KAFKA}, topics: [x], schema: {{id: bigint, cmd: string}}}}\n"
FILTER = "  - {id: f, type: filter, input: a, rules: [{id: r, when: {field: cmd, regex: 'curl\\s'}}]}\n"
SINK = f"  - {{id: b, type: kafka, input: f, {KAFKA}, topic: y, delivery: at_least_once}}\n"
DEAD = f"dead_letter: {{type: kafka, {KAFKA}, topic: d, delivery: at_least_once}}\n"
TRIGGER = "trigger: {mode: realtime}\n"
AT = "p.yaml:9:17: E415 trigger mode realtime: "


def _text(source: str = SOURCE, transforms: str = FILTER, sinks: str = SINK, dead: str = DEAD,
          trigger: str = TRIGGER) -> str:
    return f"name: rt\nsources:\n{source}transforms:\n{transforms}sinks:\n{sinks}{dead}{trigger}"


def _check(tmp_path: Path, text: str, programs: bool = False):
    p = tmp_path / "p.yaml"
    p.write_text(text)
    return check_file(str(p), environ={}, programs=programs)


def _render(tmp_path: Path, **parts: str) -> list[str]:
    checked = _check(tmp_path, _text(**parts))
    return [d.render().replace(str(tmp_path / "p.yaml"), "p.yaml") for d in checked.report.sorted()]


def test_a_stateless_kafka_chain_validates(tmp_path):
    assert _render(tmp_path) == []


def test_dead_letters_go_to_any_sink(tmp_path):
    """The dead letters run in micro-batches (etl.runtime.realtime): the default jsonl files, or an exactly-once
    Kafka topic."""
    assert _render(tmp_path, dead="") == []
    assert _render(tmp_path, dead=f"dead_letter: {{type: kafka, {KAFKA}, topic: d}}\n") == []


def test_the_example_pipeline_validates():
    checked = check_file(str(ROOT / "pipelines" / "realtime_kafka_filter.yaml"), environ={})
    assert [d.render() for d in checked.report.sorted()] == []
    assert checked.pipeline.trigger.mode == "realtime" and checked.pipeline.trigger.interval.seconds == 5.0


SINK_EO = f"  - {{id: b, type: kafka, input: f, {KAFKA}, topic: y}}\n"


@pytest.mark.parametrize("parts,expected", [
    ({"sinks": SINK_EO},
     [AT + "sink 'b' (7:5) is written at least once in real-time mode (Spark's Kafka sink has no transactions: a "
      "batch restarted after a failure writes its rows again), not exactly once\n    hint: say `delivery: "
      "at_least_once` on sink 'b'"]),
    ({"sinks": "  - {id: b, type: file, input: f, path: out/, format: jsonl}\n"},
     [AT + "sink 'b' (7:5) is of type file, which Spark's real-time mode cannot write\n    hint: real-time mode runs "
      "a stateless Kafka -> filter/select -> Kafka chain (docs/pipeline-format.md#real-time-mode); use `mode: "
      "interval` for the others"]),
    ({"sinks": SINK + f"  - {{id: c, type: kafka, input: a, {KAFKA}, topic: z, delivery: at_least_once}}\n"},
     ["p.yaml:10:17: E415 trigger mode realtime: 2 sinks: a real-time pipeline writes one (each sink would read the "
      "sources again)\n    hint: one pipeline per sink in real-time mode"]),
    ({"sinks": f"  - {{id: b, type: kafka, input: f, {KAFKA}, topic: y, delivery: at_least_once, "
               "options: {linger.ms: '5'}}\n"},
     [AT + "sink 'b' (7:5) gives `options` (librdkafka names), which Spark's Kafka producer does not take\n"
      "    hint: leave out `options` in real-time mode"]),
    ({"source": "  - {id: a, type: file, path: in/, format: jsonl, schema: {id: bigint, cmd: string}}\n"},
     [AT + "source 'a' (3:5) is of type file, which Spark's real-time mode cannot read\n    hint: real-time mode "
      "runs a stateless Kafka -> filter/select -> Kafka chain (docs/pipeline-format.md#real-time-mode); use `mode: "
      "interval` for the others"]),
    ({"source": f"  - {{id: a, type: kafka, {KAFKA}, topics: [x], schema: {{id: bigint, cmd: string, ts: "
                "timestamp}, event_time: {field: ts, watermark: 10s}}\n"},
     [AT + "source 'a' (3:5) declares `event_time`: only stateful stages use it, and real-time mode runs none\n"
      "    hint: leave out `event_time` in real-time mode"]),
    ({"source": f"  - {{id: a, type: kafka, {KAFKA}, topics: [x], schema: {{id: bigint, cmd: string}}, "
                "max_offsets_per_trigger: 100, options: {minPartitions: '4'}}\n"},
     [AT + "source 'a' (3:5) sets `max_offsets_per_trigger`, which Spark's real-time mode does not take (it reads "
      "each record as it arrives: no micro-batch to size)\n    hint: leave out `max_offsets_per_trigger` in "
      "real-time mode",
      AT + "source 'a' (3:5) sets `minPartitions`, which Spark's real-time mode does not take (it reads each record "
      "as it arrives: no micro-batch to size)\n    hint: leave out `minPartitions` in real-time mode"]),
    ({"transforms": "  - {id: f, type: filter, input: a, expr: \"cmd LIKE 'curl%'\"}\n"},
     [AT + "transform 'f' (5:5) writes the rows it cannot process to dead letters, which a real-time query cannot "
      "split from its output\n    hint: use rules, or expressions that cannot fail"]),
    ({"transforms": "  - {id: f, type: derive, input: a, columns: {n: 'length(cmd)'}}\n"},
     [AT + "transform 'f' (5:5) is of type derive, which etl does not run in real-time mode\n    hint: real-time "
      "mode runs a stateless Kafka -> filter/select -> Kafka chain (docs/pipeline-format.md#real-time-mode); use "
      "`mode: interval` for the others"]),
    ({"transforms": "  - {id: f, type: aggregate, input: a, group_by: [cmd], aggregates: [{fn: count, as: n}]}\n"},
     [AT + "transform 'f' (5:5) is of type aggregate (it keeps state), which etl does not run in real-time mode"
      "\n    hint: real-time mode runs a stateless Kafka -> filter/select -> Kafka chain (docs/pipeline-format.md#"
      "real-time-mode); use `mode: interval` for the others"]),
])
def test_refused_at_the_trigger_mode(tmp_path, parts, expected):
    assert _render(tmp_path, **parts) == expected


def test_the_interval_is_at_least_spark_minimum(tmp_path):
    assert _render(tmp_path, trigger="trigger: {mode: realtime, interval: 2s}\n") == [
        "p.yaml:9:37: E102 a realtime trigger's interval is at least 5s (Spark's real-time mode, "
        "spark.sql.streaming.realTimeMode.minBatchDuration) for 'interval' in trigger"]


def test_other_modes_are_not_checked(tmp_path):
    assert _render(tmp_path, sinks="  - {id: b, type: file, input: f, path: out/, format: jsonl}\n", dead="",
                   trigger="trigger: {mode: interval, interval: 1s}\n") == []


def test_explain_states_at_least_once(tmp_path):
    plan = _check(tmp_path, _text(), programs=True).plan
    dv = plan.delivery_of("b")
    assert (dv.guarantee, dv.reason) == ("at-least-once", "real-time mode: Spark's Kafka sink writes each row as it "
                                         "is read, without transactions; a batch restarted after a failure writes "
                                         "its rows since the last checkpointed offsets again")


def test_the_planner_keeps_python_engines_out(tmp_path):
    """Without etl's jar the rules can only run in Python workers: the plan says so, and a run refuses it (E415 at
    the filter); with the jar they run in the JVM."""
    from etl.runtime.realtime import refuse_python_engines
    from etl.compile import CompileError

    plan = _check(tmp_path, _text(), programs=True).plan
    with_jar = physical_plan(plan, Target())
    assert with_jar.find("f").choice("rules").engine == "rules-jvm"
    refuse_python_engines(plan.graph, with_jar)
    without = physical_plan(plan, Target(jvm=False, jvm_why="no JDK"))
    assert without.find("f").choice("rules").engine == "rules-python"
    with pytest.raises(CompileError) as e:
        refuse_python_engines(plan.graph, without)
    assert (e.value.code, e.value.node.id) == ("E415", "f")
    assert str(e.value.message).startswith("trigger mode realtime: filter 'f' runs its rules in Python workers "
                                           "(rules-python), which Spark's real-time mode does not run (not taken: "
                                           "rules-jvm: ")


SQL = """SET 'trigger.mode' = 'realtime';
CREATE TABLE a (id BIGINT, cmd STRING) WITH ('connector' = 'kafka', 'topic' = 'x',
  'properties.bootstrap.servers' = '127.0.0.1:9092', 'format' = 'json');
CREATE TABLE b (id BIGINT, cmd STRING) WITH ('connector' = 'kafka', 'topic' = 'y',
  'properties.bootstrap.servers' = '127.0.0.1:9092', 'format' = 'json'{guarantee});
INSERT INTO b SELECT id, cmd FROM a WHERE cmd LIKE '%curl%';
"""


@pytest.mark.parametrize("guarantee,expected", [
    (", 'sink.delivery-guarantee' = 'at-least-once'", []),
    ("", ["s.sql:1:22: E415 trigger mode realtime: sink 'b' (4:14) is written at least once in real-time mode "
          "(Spark's Kafka sink has no transactions: a batch restarted after a failure writes its rows again), not "
          "exactly once\n    hint: say `delivery: at_least_once` on sink 'b'"]),
])
def test_a_sql_script_sets_the_mode_and_flinks_delivery_guarantee(tmp_path, guarantee, expected):
    """SET 'trigger.mode' = 'realtime'; Flink's 'sink.delivery-guarantee' = 'at-least-once' is the sink's delivery;
    the SQL WHERE is a filter of rules (no dead letters of its own)."""
    p = tmp_path / "s.sql"
    p.write_text(SQL.format(guarantee=guarantee))
    checked = check_file(str(p), environ={})
    assert [d.render().replace(str(p), "s.sql") for d in checked.report.sorted()] == expected


def test_progress_counts_the_rows_sparks_sink_wrote():
    """A real-time query has no foreachBatch to count its rows: the run's progress takes Spark's sink count."""
    from etl.runtime.progress import Progress

    p = Progress("rt", "none")
    p.spark_sinks["b"] = "b"
    p.on_progress({"name": "rt/b", "batchId": 3, "numInputRows": 7, "sink": {"numOutputRows": 2}})
    p.on_progress({"name": "rt/a-dead_letters", "batchId": 3, "numInputRows": 7, "sink": {"numOutputRows": -1}})
    assert (p.latest["b"].written, p.latest["a-dead_letters"].written) == ({"b": 2}, {})
    assert p.totals["b"]["b"] == 2
