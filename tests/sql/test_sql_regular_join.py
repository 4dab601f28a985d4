"""Flink's regular join (a stream join without a time bound) -> `regular_join`: the translation, W015 without a state
TTL, and the state of a key with its TTL (etl.components.transforms.regular_join.build, no JVM). The rows on Spark:
pipelines/sql/regular_join.tests.yaml (tests/sql/test_sql_spark.py::test_example_scripts_pass_their_tests); the
outer joins' E321: tests/fixtures/sql_invalid/join_without_time_bound.sql, join_state_ttl.sql."""

from etl.check import check_file
from tests.sql.checking import check_sql, codes
from etl.components.transforms.regular_join.build import new_state, take

TABLES = ("CREATE TABLE a (k VARCHAR, x INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH (type = 'file', "
          "filePath = 'a.jsonl');\n"
          "CREATE TABLE b (k VARCHAR, y INT) WITH (type = 'file', filePath = 'b.jsonl');\n"
          "CREATE TABLE o (k VARCHAR, x INT, y INT) WITH (type = 'print');\n")
JOIN = "INSERT INTO o SELECT a.k, a.x, b.y FROM a JOIN b ON a.k = b.k{more};\n"






def test_a_join_without_a_time_bound_is_a_regular_join_and_w015_without_a_ttl(tmp_path):
    c = check_sql(tmp_path, TABLES + JOIN.format(more=" AND b.y < a.x"))
    assert codes(c) == [("W015", 4, 48)]  # at the JOIN's table
    (w,) = c.report.warnings
    assert w.message == ("a regular join (no time bound) keeps every row of both sides in its state for good: the "
                         "state grows without bound (Flink's too, without a state TTL)")
    assert w.hint.startswith("SET 'table.exec.state.ttl' = '1 h' (a row leaves the state 1 h after it was stored")
    specs = {t.id: t.model_dump(exclude_defaults=True) for t in c.pipeline.transforms}
    assert specs["o_join"] == {"id": "o_join", "type": "regular_join", "inputs": ["a", "b"], "on": ["k"],
                               "condition": "y < x"}
    from etl.plan.explain import explain_plan

    text = explain_plan(c.plan)
    assert ("  o_join (regular_join) <- a, b\n"
            "    inner regular join on k: each a or b row joins every row of the other kept for its key where y <\n"
            "        x\n"
            "    WARNING: no ttl: every row stays in the state for good, which grows without bound (set ttl, in\n"
            "        SQL SET 'table.exec.state.ttl')") in text


def test_the_state_ttl_setting_is_the_joins_ttl(tmp_path):
    c = check_sql(tmp_path, "SET 'table.exec.state.ttl' = '90 min';\n" + TABLES + JOIN.format(more=""))
    assert codes(c) == [("W015", 1, 5)]  # the SET: a continuous GROUP BY's state is not expired by it
    assert "etl expires a regular join's rows by it" in c.report.warnings[0].message
    (j, _) = c.pipeline.transforms
    assert (j.type, str(j.ttl), j.condition) == ("regular_join", "90m", None)
    from etl.plan.explain import explain_plan

    assert "state: a kept row expires 90m after it was stored (processing time; it leaves the state" \
        in explain_plan(c.plan)


def test_a_regular_joins_output_has_no_event_time(tmp_path):
    """Flink's regular join drops the time attribute: a window after it has no event time (E320 at its TUMBLE)."""
    c = check_sql(tmp_path, "SET 'table.exec.state.ttl' = '1 h';\n" + TABLES.rsplit("CREATE TABLE o", 1)[0] +
               "CREATE TABLE w (n BIGINT) WITH (type = 'print');\n"
               "CREATE VIEW v AS SELECT a.k, a.ts, b.y FROM a JOIN b ON a.k = b.k;\n"
               "INSERT INTO w SELECT COUNT(*) FROM v GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE);\n")
    assert codes(c) == [("W015", 1, 5), ("E320", 6, 54)]
    assert c.report.errors[0].message == "window time column 'ts' has no watermark"


def test_yaml_regular_join_is_inner_only(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("name: p\nsources:\n  - {id: a, type: file, path: a.jsonl, schema: {k: string}}\n"
                 "  - {id: b, type: file, path: b.jsonl, schema: {k: string}}\n"
                 "transforms:\n  - {id: j, type: regular_join, inputs: [a, b], on: [k], how: left}\n"
                 "sinks:\n  - {id: o, type: print, input: j}\n", encoding="utf-8")
    c = check_file(f, environ={})
    assert codes(c) == [("E102", 6, 63)]  # at `left`


L, R = 0, 1


def test_each_pair_once_when_its_second_row_arrives():
    st = new_state()
    assert take(st, [(L, False, ("a1",)), (R, False, ("b1",)), (L, False, ("a2",))], 1000, None) == \
        [(("a1",), ("b1",)), (("a2",), ("b1",))]
    assert take(st, [(R, False, ("b2",))], 2000, None) == [(("a1",), ("b2",)), (("a2",), ("b2",))]
    assert take(st, [(L, True, ("a3",)), (R, True, ("b3",))], 3000, None) == []  # a NULL key: no pair, not kept
    assert (len(st["l"]), len(st["r"])) == (2, 2)


def test_the_ttl_expires_a_row_that_long_after_it_was_stored():
    """Flink's TTL (OnCreateAndWrite, NeverReturnExpired): expired once stored + ttl <= now."""
    st = new_state()
    take(st, [(L, False, ("a1",))], 1000, 500)
    take(st, [(L, False, ("a2",))], 1200, 500)
    assert take(st, [(R, False, ("b1",))], 1499, 500) == [(("a1",), ("b1",)), (("a2",), ("b1",))]
    assert take(st, [(R, False, ("b2",))], 1500, 500) == [(("a2",), ("b2",))]  # a1: 1000 + 500 <= 1500
    assert [e[1] for e in st["l"]] == [("a2",)]  # the expired row left the state
    assert take(st, [(L, False, ("a3",))], 1700, 500) == [(("a3",), ("b1",)), (("a3",), ("b2",))]
    assert take(st, [(L, False, ("a4",))], 2000, 500) == []  # b1 1499 + 500 <= 2000, b2 1500 + 500 <= 2000


def test_an_identical_row_stored_again_restarts_its_copies_time():
    """Flink keeps a count per distinct row: its write restarts the TTL of every copy."""
    st = new_state()
    take(st, [(L, False, ("a",))], 0, 100)
    take(st, [(L, False, ("a",))], 90, 100)
    assert take(st, [(R, False, ("b",))], 150, 100) == [(("a",), ("b",)), (("a",), ("b",))]
    assert take(st, [(R, False, ("c",))], 190, 100) == []


def test_a_side_with_a_primary_key_is_e011(tmp_path):
    """Flink keeps one row per primary key value of such a side (JoinKeyContainsUniqueKey / HasUniqueKey state):
    a new row replaces the kept one, etl would keep both: E011 at the ON, not a silently different answer."""
    c = check_sql(tmp_path, TABLES.replace("y INT)", "y INT, PRIMARY KEY (k) NOT ENFORCED)") + JOIN.format(more=""))
    assert codes(c) == [("E011", 4, 53)]
    assert c.report.errors[0].message == (
        "a regular join (no time bound) of 'b', a table with a PRIMARY KEY (k), is not supported: Flink keeps one "
        "row per k of it in the join's state (a new row replaces the kept one), etl's regular join keeps every row")
