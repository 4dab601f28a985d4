"""Flink's lexical rules in SQL scripts (fast lane): string literals, Unicode strings, comments, intervals, BOM,
invisible characters, duplicate WITH keys, TUMBLE_START's window. Each case from Flink's documentation: "String
literals must be enclosed in single quotes (e.g., SELECT 'Hello World'). Duplicate a single quote for escaping
(e.g., SELECT 'It''s me')"; a backslash is an ordinary character."""
from __future__ import annotations


import pytest

from tests.sql.checking import check_sql, codes

SRC = ("CREATE TABLE t (a VARCHAR, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) "
       "WITH (type = 'file', filePath = 'x.jsonl');\n")
OUT = "CREATE TABLE o (a VARCHAR) WITH (type = 'print');\n"






def _spec(c, id_: str) -> dict:
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    return next(s for s in c.pipeline.components() if s.id == id_).model_dump(exclude_defaults=True)


def test_a_backslash_is_an_ordinary_character_and_a_doubled_quote_is_one_quote(tmp_path):
    c = check_sql(tmp_path, SRC + OUT + r"INSERT INTO o SELECT a FROM t WHERE a REGEXP '\S+\.\d' OR a = 'it''s';" "\n")
    when = _spec(c, "o_where")["rules"]
    assert [r["when"] for r in when] == [{"field": "a", "regex": r"\S+\.\d"}, {"field": "a", "eq": "it's"}]


def test_a_literal_reaches_spark_with_its_flink_value(tmp_path):
    # Spark SQL reads '\\' as one backslash and '\'' as a quote: the generated expression is escaped for it
    c = check_sql(tmp_path, SRC + OUT + r"INSERT INTO o SELECT CONCAT(REGEXP_EXTRACT(a, '(\d+)', 2), 'it''s\n') FROM t;"
               "\n")
    assert _spec(c, "o_select")["fields"] == [r"CONCAT(REGEXP_EXTRACT(a, '(\\d+)', 2), 'it\'s\\n') AS a"]


def test_unicode_string_literals(tmp_path):
    c = check_sql(tmp_path, SRC + OUT + "INSERT INTO o SELECT a FROM t WHERE a = U&'\\0041\\+01F600\\\\' "
               "OR a = U&'!00e9!!' UESCAPE '!';\n")
    assert [r["when"]["eq"] for r in _spec(c, "o_where")["rules"]] == ["A\U0001F600\\", "é!"]
    c = check_sql(tmp_path, SRC + OUT + "INSERT INTO o SELECT a FROM t WHERE a = U&'\\00G1';\n")
    assert codes(c) == [("E010", 3, 41)]
    assert c.report.errors[0].message == "invalid Unicode escape at '\\\\00G1': write \\XXXX or \\+XXXXXX"


def test_comments_do_not_nest_and_a_line_comment_ends_at_a_line_feed(tmp_path):
    c = check_sql(tmp_path, SRC + OUT + "/* a /* b */ INSERT INTO o SELECT a FROM t; -- c\rINSERT INTO o SELECT a FROM t;\n")
    assert c.plan is not None and len(c.pipeline.sinks[0].inputs) == 2
    c = check_sql(tmp_path, SRC + OUT + "/* a /* b */ */ INSERT INTO o SELECT a FROM t;\n")
    assert ("E011", 3, 14) in codes(c)  # `*/` is no comment any more: Flink says so too


def test_a_byte_order_mark_is_ignored(tmp_path):
    c = check_sql(tmp_path, "\ufeff" + SRC + OUT + "INSERT INTO o SELECT a FROM t;\n")
    assert codes(c) == [] and c.plan is not None


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1_0"])
def test_an_interval_value_is_digits(tmp_path, value):
    c = check_sql(tmp_path, SRC + "CREATE TABLE o (a VARCHAR, n BIGINT) WITH (type = 'print');\n"
               f"INSERT INTO o SELECT a, COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '{value}' SECOND), a;\n")
    assert codes(c) == [("E011", 3, 70)]
    assert c.report.errors[0].message == f"interval value '{value}' is not a number of seconds"


def test_bidi_controls_and_line_separators_are_warned_at_their_position(tmp_path):
    c = check_sql(tmp_path, SRC + OUT + "INSERT INTO o SELECT a FROM t WHERE a = 'x\u202e'; -- y\u2028INSERT INTO o "
               "SELECT a FROM t;\n")
    assert codes(c) == [("W014", 3, 43), ("W014", 3, 51)]
    assert [d.message.split(" ")[3] for d in c.report.sorted()][:1] == ["U+202E"]
    assert c.report.sorted()[1].message.startswith("U+2028 (LINE SEPARATOR) is not a line break in SQL")
    assert len(c.pipeline.sinks[0].inputs) == 1  # the second INSERT is comment, as in Flink


def test_a_duplicate_with_key_is_named_at_the_second(tmp_path):
    c = check_sql(tmp_path, SRC.replace("filePath = 'x.jsonl'", "fileName = 'x.jsonl', FILENAME = 'y.jsonl'") + OUT
               + "INSERT INTO o SELECT a FROM t;\n")
    assert codes(c) == [("E104", 1, 134)]
    d = c.report.errors[0]
    assert (d.message, d.hint) == ("duplicate option 'FILENAME' in WITH (...) of table 't'",
                                   "it is given at line 1, column 112 already: keep one")


@pytest.mark.parametrize("start", ["TUMBLE_START(ts, INTERVAL '2' MINUTE)", "HOP_START(ts, INTERVAL '1' MINUTE)",
                                   "TUMBLE_END(a, INTERVAL '1' MINUTE)"])
def test_a_window_start_names_the_group_by_window(tmp_path, start):
    c = check_sql(tmp_path, SRC + "CREATE TABLE o (w TIMESTAMP, n BIGINT) WITH (type = 'print');\n"
               f"INSERT INTO o SELECT {start}, COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '60' SECOND);\n")
    assert codes(c) == [("E104", 3, 22)]
    assert c.report.errors[0].message == \
        f"{start.split('(')[0]} does not name the GROUP BY's window TUMBLE(ts, INTERVAL '60' SECOND)"
    ok = check_sql(tmp_path, SRC + "CREATE TABLE o (w TIMESTAMP, n BIGINT) WITH (type = 'print');\n"
                "INSERT INTO o SELECT TUMBLE_END(ts, INTERVAL '1' MINUTE), COUNT(*) FROM t "
                "GROUP BY TUMBLE(ts, INTERVAL '60' SECOND);\n")
    assert codes(ok) == []


@pytest.mark.parametrize("written,delimiter", [("\\t", "\t"), ("\\u0001", "\x01"), ("|", "|"), ("\\\\", "\\")])
def test_a_field_delimiter_is_unescaped_as_flinks_csv_format_does(tmp_path, written, delimiter):
    # Flink csv.field-delimiter: "You can use backslash to specify special characters, e.g. '\t' represents
    # the tab character": the literal keeps its backslash, the format reads the escape
    c = check_sql(tmp_path, f"CREATE TABLE t (a VARCHAR, b INT) WITH (type = 'file', filePath = 'x.csv', "
               f"isJsonData = 'false', fieldDelimiter = '{written}');\n" + OUT + "INSERT INTO o SELECT a FROM t;\n")
    assert _spec(c, "t")["delimiter"] == delimiter


def test_rsqldb_epoch_milliseconds_in_a_timestamp_column_are_named(tmp_path):
    # rsqldb's documented event-time example: `ts timestamp` on RocketMQ, messages {"ts": 1674874800000}
    mq = "WITH (type = 'rocketmq', topic = 't', namesrvAddr = 'h:9876', groupName = 'g');\n"
    c = check_sql(tmp_path, "CREATE TABLE t (a VARCHAR,\n  ts TIMESTAMP, WATERMARK wk FOR ts AS withOffset(ts, 2000)) "
               + mq + OUT + "INSERT INTO o SELECT a FROM t;\n")
    assert codes(c) == [("W015", 2, 3)]
    d = c.report.warnings[0]
    assert (d.message, d.hint) == (
        "rsqldb reads a number in TIMESTAMP column 'ts' as epoch milliseconds, etl (Spark) as epoch seconds",
        "for epoch milliseconds declare `ts BIGINT` (etl reads a BIGINT time column as epoch milliseconds); text "
        "such as 2026-01-10 09:00:00 reads the same")
    c = check_sql(tmp_path, "CREATE TABLE t (a VARCHAR,\n  ts BIGINT, WATERMARK wk FOR ts AS withOffset(ts, 2000)) "
               + mq + OUT + "INSERT INTO o SELECT a FROM t;\n")
    assert codes(c) == []


def test_numbers_have_no_spark_type_suffix(tmp_path):
    # Flink (Calcite) has no 10L / 1.5D literals: `10L` is the number 10 named L (Spark read a BIGINT 10)
    c = check_sql(tmp_path, SRC + "CREATE TABLE o (a VARCHAR, n BIGINT) WITH (type = 'print');\n"
               "INSERT INTO o SELECT a, 10L FROM t;\n")
    assert _spec(c, "o_select")["fields"] == ["a", "10 AS n"]


def test_rsqldb_event_time_window_without_a_watermark(tmp_path):
    # rsqldb's documented event-time window: `ts timestamp` declared without WATERMARK, TUMBLE(ts, ...)
    text = ("CREATE TABLE s (position VARCHAR, num INT, ts TIMESTAMP) WITH (type = 'file', filePath = 'x.jsonl');\n"
            "CREATE TABLE o (p VARCHAR, n BIGINT) WITH (type = 'print');\n"
            "INSERT INTO o SELECT position, SUM(num) FROM s WHERE num > 5 GROUP BY TUMBLE(ts, INTERVAL '5' SECOND), "
            "position;\n")
    c = check_sql(tmp_path, "SET 'sql.dialect' = 'rsqldb';\n" + text)
    assert _spec(c, "o_window")["event_time"] == {"field": "ts", "watermark": "0ms"}
    c = check_sql(tmp_path, text)  # Flink: a window needs a time attribute
    assert codes(c) == [("E320", 3, 78)]


def test_like_has_no_escape_character_as_in_flink(tmp_path):
    c = check_sql(tmp_path, SRC + OUT + r"INSERT INTO o SELECT a FROM t WHERE a LIKE 'C:\Windows\%';" "\n")
    assert [r["when"] for r in _spec(c, "o_where")["rules"]] == [{"field": "a", "like": "C:\\\\Windows\\\\%"}]


def test_a_star_is_no_argument_of_a_translated_function(tmp_path):
    """Flink reads * only in COUNT(*); WEEK(*) became weekofyear(*), which Spark expands into every column
    (found by tests/spark/test_validate_implies_compile.py: WRONG_NUM_ARGS at run)."""
    c = check_sql(tmp_path, SRC + OUT + "INSERT INTO o SELECT CAST(WEEK(*) AS VARCHAR) FROM t;\n")
    assert codes(c) == [("E012", 3, 27)]
    assert c.report.errors[0].message == "WEEK takes values, not *"
