"""Flink / rsqldb functions give the peer's answers: every row of etl/sql/functions.tsv with its documented
examples (rsqldb docs/stream_function/build_in/*: the test data and results given there; Flink's "System
(Built-in) Functions" and its runtime, SqlFunctionUtils, where they differ: then Flink's answer is the default and
the rsqldb one runs under SET 'sql.dialect' = 'rsqldb'). The Spark run is one query for every case."""
from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

from etl.check import check_file
from etl.sql.dialect import DIALECT
from etl.sql.flink_functions import readme_table as flink_readme_table
from etl.sql.flink_functions import table as flink_table
from etl.sql.flink_functions import unsupported as flink_unsupported
from etl.sql.functions import Functions, call_of, readme_table, table

N = "CAST(NULL AS STRING)"
# (Flink / rsqldb call, dialect, expected); `pat` is a column holding '(' (a pattern from the data)
CASES: list[tuple[str, str, object]] = [
    ("JSON_VALUE('{\"a\": {\"b\": \"x\"}}', '$.a.b')", "flink", "x"),
    ("JSON_VALUE('not json', '$.a')", "flink", None),
    # rsqldb split_index: Jack,John,Mary / , / 2 -> Mary; 3 -> null; null sep -> null; null string -> null
    ("SPLIT_INDEX('Jack,John,Mary', ',', 2)", "flink", "Mary"),
    ("SPLIT_INDEX('Jack,John,Mary', ',', 3)", "flink", None),
    (f"SPLIT_INDEX('Jack,John,Mary', {N}, 0)", "flink", None),
    (f"SPLIT_INDEX({N}, ',', 0)", "flink", None),
    ("SPLIT_INDEX('Jack,John,Mary', ',', -1)", "flink", None),
    ("SPLIT_INDEX('a,,b', ',', 1)", "flink", ""),
    ("SPLIT_INDEX('a::b.c', '::', 1)", "flink", "b.c"),
    ("SPLIT_INDEX('', ',', 0)", "flink", None),
    # rsqldb keyvalue: the eight documented rows
    ("KEYVALUE('k1=v1;k2=v2', ';', '=', 'k2')", "flink", "v2"),
    (f"KEYVALUE({N}, ';', '=', 'k1')", "flink", None),
    (f"KEYVALUE('k1=v1;k2=v2', ';', '=', {N})", "flink", None),
    (f"KEYVALUE('k1=v1 k2=v2', {N}, '=', 'k2')", "flink", "v2"),
    (f"KEYVALUE('k1 v1;k2 v2', ';', {N}, 'k2')", "flink", "v2"),
    ("KEYVALUE('k1:v1;k2:v2', ';', ':', 'k3')", "flink", None),
    ("KEYVALUE('k1:v1abck2:v2', 'abc', ':', 'k2')", "flink", "v2"),
    ("KEYVALUE('k1:v1;k2=v2', ';', ':=', 'k2')", "flink", "v2"),
    # str_to_map: Flink's default delimiters , and =
    ("STR_TO_MAP('k1=v1,k2=v2')['k1']", "flink", "v1"),
    ("STR_TO_MAP('k1:v1;k2:v2', ';', ':')['k2']", "flink", "v2"),
    ("size(STR_TO_MAP(''))", "flink", 0),
    # rsqldb hash_code: abs(String.hashCode())
    ("HASH_CODE('k1=v1;k2=v2')", "flink", 1099348823),
    ("HASH_CODE('k1:v1,k2:v2')", "flink", 401392878),
    (f"HASH_CODE({N})", "flink", None),
    ("HASH_CODE('')", "flink", 0),
    # rsqldb is_alpha / is_decimal / is_digit: NULL is false
    ("IS_ALPHA('3')", "flink", False), ("IS_ALPHA('asd')", "flink", True), (f"IS_ALPHA({N})", "flink", False),
    ("IS_DECIMAL('1')", "flink", True), ("IS_DECIMAL('123')", "flink", True),
    ("IS_DECIMAL('11.4445')", "flink", True), ("IS_DECIMAL('asd')", "flink", False),
    (f"IS_DECIMAL({N})", "flink", False), ("IS_DECIMAL('1e5')", "flink", True), ("IS_DECIMAL('')", "flink", False),
    ("IS_DIGIT('0123')", "flink", True), ("IS_DIGIT('12a')", "flink", False), (f"IS_DIGIT({N})", "flink", False),
    ("IS_DIGITS('42')", "flink", True),
    # lpad / rpad: Flink's lpad (a negative length or an empty pad: NULL), rsqldb's documented inputs
    ("LPAD('', -2, '')", "flink", None), ("LPAD('HelloWorld', 15, 'John')", "flink", "JohnJHelloWorld"),
    ("LPAD('John', 2, 'C')", "flink", "Jo"), ("LPAD('C', 4, 'HelloWorld')", "flink", "HelC"),
    (f"LPAD({N}, 2, 'C')", "flink", None), (f"LPAD('c', 2, {N})", "flink", None),
    ("LPAD('asd', 2, '')", "flink", None), ("LPAD('', 2, 's')", "flink", "ss"), ("LPAD('asd', 0, 'x')", "flink", ""),
    ("RPAD('John', 7, 'xy')", "flink", "Johnxyx"), ("RPAD('John', -1, 'x')", "flink", None),
    ("RPAD('John', 6, '')", "flink", None),
    # rsqldb substring: str = k1=v1;k2=v2
    ("SUBSTRING('', 222222222)", "flink", ""), ("SUBSTRING('k1=v1;k2=v2', 2)", "flink", "1=v1;k2=v2"),
    ("SUBSTRING('k1=v1;k2=v2', -2)", "flink", "v2"), ("SUBSTRING('k1=v1;k2=v2', -2, 1)", "flink", "v"),
    ("SUBSTRING('k1=v1;k2=v2', 2, 1)", "flink", "1"), ("SUBSTRING('k1=v1;k2=v2', 22)", "flink", ""),
    ("SUBSTRING('k1=v1;k2=v2', -22)", "flink", ""), ("SUBSTRING('k1=v1;k2=v2', 1)", "flink", "k1=v1;k2=v2"),
    ("SUBSTRING('k1=v1;k2=v2', 0)", "flink", "k1=v1;k2=v2"), (f"SUBSTRING({N}, 0)", "flink", None),
    ("SUBSTRING('k1=v1;k2=v2' FROM 0 FOR 2)", "flink", "k1"), ("SUBSTRING('k1=v1', 2, -1)", "flink", None),
    ("SUBSTR('k1=v1;k2=v2', -22)", "flink", ""), ("SUBSTR('k1=v1;k2=v2', 0, 2)", "flink", "k1"),
    # rsqldb regexp_replace rows; Flink: an empty pattern is Java's replaceAll, the replacement is literal text
    ("REGEXP_REPLACE('2014-03-13', '-', '')", "flink", "20140313"),
    (f"REGEXP_REPLACE({N}, '-', '')", "flink", None), (f"REGEXP_REPLACE('2014-03-13', '-', {N})", "flink", None),
    ("REGEXP_REPLACE('2014', '', 's')", "flink", "s2s0s1s4s"),
    ("REGEXP_REPLACE('2014-03-13', pat, 's')", "flink", None),
    (r"REGEXP_REPLACE('100-200', '(\d+)', 'num')", "flink", "num-num"),
    (r"REGEXP_REPLACE('a1', '(\d)', '$1\x')", "flink", r"a$1\x"),
    # rsqldb regexp_extract rows
    ("REGEXP_EXTRACT('foothebar', 'foo(.*?)(bar)', 2)", "flink", "bar"),
    (r"REGEXP_EXTRACT('100-200', '(\d+)-(\d+)', 1)", "flink", "100"),
    (f"REGEXP_EXTRACT({N}, 'foo(.*?)(bar)', 2)", "flink", None),
    (f"REGEXP_EXTRACT('foothebar', {N}, 2)", "flink", None),
    ("REGEXP_EXTRACT('foothebar', '', 2)", "flink", None),
    ("REGEXP_EXTRACT('foothebar', pat, 2)", "flink", None),
    ("REGEXP_EXTRACT('foothebar', 'foo(.*?)(bar)')", "flink", "foothebar"),
    (r"REGEXP_EXTRACT('abc', 'x(\d)', 1)", "flink", None),
    ("REGEXP_EXTRACT('foothebar', concat('foo(.*?)', '(bar)'), 3)", "flink", None),
    ("REGEXP('abc', 'b')", "flink", True), ("REGEXP('abc', '')", "flink", False), ("REGEXP('abc', pat)", "flink", False),
    (f"REGEXP({N}, 'a')", "flink", None),
    # rsqldb date_format rows
    ("DATE_FORMAT('2017-09-15 00:00:00', 'yyMMdd')", "flink", "170915"),
    (f"DATE_FORMAT({N}, 'yyMMdd')", "flink", None), (f"DATE_FORMAT('2017-09-15 00:00:00', {N})", "flink", None),
    (f"DATE_FORMAT('0915-2017', 'MMdd-yyyy', {N})", "flink", None),
    ("DATE_FORMAT('0915-2017', 'MMdd-yyyy', 'yyyyMMdd')", "flink", "20170915"),
    ("DATE_FORMAT(TIMESTAMP '2017-09-15 23:00:00', 'yyMMdd')", "flink", "170915"),
    ("DATE_FORMAT('no date', 'MMdd-yyyy', 'yyyyMMdd')", "flink", None),
    # rsqldb to_date rows
    ("TO_DATE(100)", "flink", dt.date(1970, 4, 11)), ("TO_DATE('2017-09-15')", "flink", dt.date(2017, 9, 15)),
    ("TO_DATE('20170915', 'yyyyMMdd')", "flink", dt.date(2017, 9, 15)), ("TO_DATE('no date')", "flink", None),
    # rsqldb week rows
    ("WEEK(TIMESTAMP '2017-09-15 00:00:00')", "flink", 37), ("WEEK(DATE '2017-11-10')", "flink", 45),
    ("WEEK(TIMESTAMP '2017-10-15 00:00:00')", "flink", 41), ("WEEK(CAST('2017-09-15' AS DATE))", "flink", 37),
    # concat: Flink NULL in, NULL out; rsqldb's documented rows skip NULLs
    ("CONCAT('Hello', 'My', 'World')", "flink", "HelloMyWorld"), (f"CONCAT('Hello', {N}, 'World')", "flink", None),
    ("CONCAT('Hello', 'My', 'World')", "rsqldb", "HelloMyWorld"),
    (f"CONCAT('Hello', {N}, 'World')", "rsqldb", "HelloWorld"), (f"CONCAT({N}, {N}, 'World')", "rsqldb", "World"),
    (f"CONCAT({N}, {N}, {N})", "rsqldb", ""),
    # Flink TO_TIMESTAMP_LTZ: epoch milliseconds (3) and seconds (0); a string in the session time zone
    ("unix_millis(TO_TIMESTAMP_LTZ(1735689600123, 3))", "flink", 1735689600123),
    ("unix_millis(TO_TIMESTAMP_LTZ(1735689600, 0))", "flink", 1735689600000),
    ("CAST(TO_TIMESTAMP_LTZ('2025-01-01 10:00:00.123') AS STRING)", "flink", "2025-01-01 10:00:00.123"),
    ("NOW() IS NOT NULL AND PROCTIME() IS NOT NULL AND LOCALTIMESTAMP() IS NOT NULL", "flink", True),
    ("TO_BASE64('etl')", "flink", "ZXRs"), ("FROM_BASE64('ZXRs')", "flink", "etl"),
    ("BITAND(3, 6)", "flink", 2), ("BITOR(3, 6)", "flink", 7), ("BITXOR(3, 6)", "flink", 5), ("BITNOT(3)", "flink", -4),
    ("RAND_INTEGER(1)", "flink", 0),
    ("CAST(TO_TIMESTAMP('2017-09-15 00:00:00') AS STRING)", "flink", "2017-09-15 00:00:00"),
    ("TO_TIMESTAMP('not a time')", "flink", None),
    ("CAST(TO_TIMESTAMP('0915-2017', 'MMdd-yyyy') AS STRING)", "flink", "2017-09-15 00:00:00"),
    # Flink parse_url examples; an invalid URL is NULL
    ("PARSE_URL('http://facebook.com/path1/p.php?k1=v1&k2=v2#Ref1', 'HOST')", "flink", "facebook.com"),
    ("PARSE_URL('http://facebook.com/path1/p.php?k1=v1&k2=v2#Ref1', 'QUERY', 'k1')", "flink", "v1"),
    ("PARSE_URL('http://a b/%', 'HOST')", "flink", None),
    # Flink's LIKE has no escape character unless ESCAPE names one (Spark's is a backslash)
    (r"'C:\Windows\x' LIKE 'C:\Windows\%'", "flink", True), (r"'a_b' LIKE 'a\_b'", "flink", False),
    # Logstash's dissect (tests/sql/test_sql_dissect.py has more): a struct of the fields; no match: NULL
    ("DISSECT('Mar 16 00:01:25 evita', '%{ts} %{+ts} %{+ts} %{host}')", "flink", ("Mar 16 00:01:25", "evita")),
    ("DISSECT('x', '%{a} %{b}')", "flink", None),
    (r"'a\b' LIKE concat('a\', '_')", "flink", True), ("'a%' LIKE 'a!%' ESCAPE '!'", "flink", True),
    # the rest of Flink's built-ins that etl rewrites (every one's documented example: etl/sql/flink_functions.tsv)
    ("LEAST(2, 1, 3)", "flink", 1), ("LEAST(2, CAST(NULL AS INT))", "flink", None), ("GREATEST(2, 1)", "flink", 2),
    ("RTRIM('This is a test String. ')", "flink", "This is a test String."), ("RTRIM('abxx', 'x')", "flink", "ab"),
    ("LTRIM('xxab', 'x')", "flink", "ab"),
    ("SHA224('a')", "flink", "abd37534c7d9a2efb9465de931cd7055ffdb8879563ae98078d6d6d5"),
    ("char_length(SHA384('a'))", "flink", 96), ("char_length(SHA512('a'))", "flink", 128),
    ("TRUNCATE(-42.324, 1)", "flink", Decimal("-42.3")), ("TRUNCATE(42.324)", "flink", Decimal("42")),
    ("TRUNCATE(1234.5, -2)", "flink", Decimal("1200")),
    ("REGEXP_COUNT('ab', pat)", "flink", None), ("REGEXP_INSTR('ab', pat)", "flink", None),
    ("REGEXP_SUBSTR('ab', pat)", "flink", None), ("REGEXP_SUBSTR('ab', 'x')", "flink", None),
    ("REGEXP_EXTRACT_ALL('a1b2', '[a-z]\\d')", "flink", None), ("REGEXP_EXTRACT_ALL('a1b2', '([a-z])\\d')", "flink", ["a", "b"]),
    ("REGEXP_EXTRACT_ALL('a1', '(a)', 2)", "flink", None), ("REGEXP_EXTRACT_ALL('ab', pat, 0)", "flink", None),
    ("URL_DECODE('%zz')", "flink", None), ("CONVERT_TZ('not a time', 'UTC', 'UTC')", "flink", None),
    ("UNIX_TIMESTAMP('not a time')", "flink", -9223372036854775808),
    ("UNIX_TIMESTAMP('1970-01-01 08:00:01', 'yyyy-MM-dd HH:mm:ss')", "flink", 28801),
    ("UNIX_TIMESTAMP() > 0", "flink", True),
    ("ARRAY_SORT(ARRAY[2, CAST(NULL AS INT), 1], false)", "flink", [2, 1, None]),
    ("ARRAY_CONCAT(ARRAY[1], CAST(NULL AS ARRAY<INT>))", "flink", None),
    ("SPLIT('abc', '')", "flink", ["a", "b", "c"]), ("SPLIT('a||b|', '|')", "flink", ["a", "", "b", ""]),
    ("SPLIT('abc', ',')", "flink", ["abc"]),
    ("ARRAY[1, 2][3]", "flink", None), ("MAP['a', 1]['b']", "flink", None),
]


# every Flink built-in's documented example (etl/sql/flink_functions.tsv) that etl runs: (example, flink, result)
FLINK = [(r.example, "flink", json.loads(r.result)) for r in flink_table() if r.example and r.status != "unsupported"]


def _spark_sql(text: str, dialect: str) -> str:
    tree = DIALECT.parser().parse(DIALECT.tokenize(f"SELECT {text}"), f"SELECT {text}")[0]
    return Functions(dialect=dialect).translate(tree.expressions[0]).sql(dialect="spark")


def test_every_row_of_the_table_has_a_documented_case():
    called = {(m.group(1).upper(), d) for text, d, _ in CASES + FLINK for m in re.finditer(r"\b([A-Z][A-Z_0-9]{2,})\s*\(", text)}
    rows = {(r.name, r.dialect) for r in table() if r.spark != "-"}
    missing = {(n, d) for n, d in rows if (n, "flink" if d == "*" else d) not in called}
    assert not missing
    arities = {(r.name, r.arity) for r in table() if r.spark != "-" and r.arity != "n"}
    seen = set()
    for text, _d, _ in CASES + FLINK:
        tree = DIALECT.parser().parse(DIALECT.tokenize(f"SELECT {text}"), f"SELECT {text}")[0]
        for node in tree.walk():
            call = call_of(node)
            if call is not None:
                seen.add((call[0], str(len(call[1]))))
    assert arities <= seen


def test_the_readme_lists_the_table():
    readme = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "sql-functions.md").read_text()
    assert readme_table() in readme




def _plain(v: object) -> object:
    """A Spark value as the table's JSON writes it (a decimal as a float, bytes as text, arrays as lists)."""
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, (bytes, bytearray)):
        return v.decode()
    return [_plain(x) for x in v] if isinstance(v, list) else v


@pytest.mark.spark
def test_functions_give_the_peers_answers(spark):
    """One query: the rsqldb / Flink cases above and every Flink built-in's documented example."""
    exprs = [f"{_spark_sql(text, d)} AS c{i}" for i, (text, d, _) in enumerate(CASES + FLINK)]
    row = spark.sql(f"SELECT {', '.join(exprs)} FROM VALUES ('(') AS t(pat)").collect()[0]
    got = {CASES[i][:2]: row[i] for i in range(len(CASES))}
    want = {c[:2]: c[2] for c in CASES}
    assert got == want
    assert {text: _plain(row[len(CASES) + i]) for i, (text, _, _) in enumerate(FLINK)} == {t: v for t, _, v in FLINK}


def test_every_flink_function_has_a_status_and_the_supported_ones_an_example():
    rows = flink_table()
    assert len(rows) == 226 and {r.category for r in rows} == {
        "comparison", "logical", "arithmetic", "string", "temporal", "conditional", "conversion", "collection", "json",
        "valueconstruction", "valueaccess", "grouping", "hash", "aggregate", "catalog"}
    assert len(FLINK) == 173
    # a row without an example is an aggregate, or a construct a SELECT cannot show alone
    assert sorted(r.syntax for r in rows if r.status != "unsupported" and not r.example) == sorted([
        "PERCENTILE(expr, percentage[, frequency])", "DESCRIPTOR(identifier, ...)", "tableName.compositeType.*",
        *(f"{n}([ALL | DISTINCT] expression)" for n in ("COUNT", "AVG", "SUM", "MAX", "MIN")),
        *(f"{n}(expression)" for n in ("STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP", "VARIANCE")),
        "ARRAY_AGG([ALL | DISTINCT] expression)", "LISTAGG(expression [, separator])",
        "FIRST_VALUE(expression), LAST_VALUE(expression)", "ROW_NUMBER()",
        "GROUPING(expression1 [, expression2]*), GROUPING_ID(...)"])
    # a rewritten function's names are rows of functions.tsv (SUBSTR: sqlglot reads it as SUBSTRING, whose rows
    # rewrite it; BTRIM: Spark's btrim takes Flink's argument order, LTRIM / RTRIM of the same row do not; AVG of an
    # integer: etl.sql.division, which knows the argument's type)
    rewritten = {n for r in rows if r.status == "rewritten" for n in r.names}
    assert rewritten - {r.name for r in table()} == {"SUBSTR", "BTRIM", "AVG"}


_UNSUPPORTED = [r for r in flink_table() if r.status == "unsupported"]


@pytest.mark.parametrize("row", _UNSUPPORTED, ids=[r.example for r in _UNSUPPORTED])
def test_an_unsupported_flink_function_is_refused_at_its_call(tmp_path, row):
    """`etl validate` refuses each one where it is called: E012 (E011 for sub-queries and TIME), with
    the table's note as hint for a call."""
    c = _check(tmp_path, f"INSERT INTO o SELECT CAST({row.example} AS STRING) FROM t;\n")
    (d,) = c.report.errors
    assert (d.code, d.span.line) == ("E011" if row.syntax.startswith(("EXISTS", "value [NOT] IN", "TIME"))
                                     else "E012", 3)
    assert 27 <= d.span.col <= 27 + len(row.example), d.render()
    if row.names and row.names[0] in flink_unsupported():
        assert (d.message, d.hint) == (f"function {row.names[0]} is not supported", row.note)


def test_the_readme_lists_every_flink_function():
    readme = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "sql-functions.md").read_text()
    assert flink_readme_table() in readme


def _check(tmp_path: Path, query: str, prefix: str = ""):
    f = tmp_path / "job.sql"
    f.write_text(prefix + "CREATE TABLE t (s VARCHAR, ms BIGINT, ts TIMESTAMP(3)) WITH (type = 'file', filePath = 'x.jsonl');\n"
                 "CREATE TABLE o (v VARCHAR) WITH (type = 'print');\n" + query)
    return check_file(f, environ={})


@pytest.mark.parametrize("query,code,col,message", [
    ("INSERT INTO o SELECT SPLIT_INDEX(s, ',') FROM t;\n", "E012", 22, "SPLIT_INDEX takes 3 arguments, not 2"),
    ("INSERT INTO o SELECT MULTI_KEYVALUE(s, ';', '=', 'a', 'b') FROM t;\n", "E012", 22,
     "function MULTI_KEYVALUE is not supported"),
    ("INSERT INTO o SELECT CAST(TO_TIMESTAMP_LTZ(ms, 6) AS STRING) FROM t;\n", "E011", 48,
     "TO_TIMESTAMP_LTZ(epoch, precision) takes precision 0 (seconds) or 3 (milliseconds)"),
])
def test_a_refused_call_is_reported_at_its_position(tmp_path, query, code, col, message):
    c = _check(tmp_path, query)
    assert [(d.code, d.span.line, d.span.col, d.message) for d in c.report.sorted()] == [(code, 3, col, message)]


def test_the_dialect_setting(tmp_path):
    c = _check(tmp_path, "INSERT INTO o SELECT CONCAT(s, s) FROM t;\n", "SET 'sql.dialect' = 'rsqldb';\n")
    fields = next(s for s in c.pipeline.components() if s.id == "o_select").model_dump()["fields"]
    assert fields == ["CONCAT_WS('', s, s) AS v"]
    c = _check(tmp_path, "INSERT INTO o SELECT CONCAT(s, s) FROM t;\n", "SET 'sql.dialect' = 'rsqdb';\n")
    assert [(d.code, d.span.line, d.span.col, d.hint) for d in c.report.sorted()] == \
        [("E102", 1, 21, "did you mean 'rsqldb'?")]
    c = _check(tmp_path, "INSERT INTO o SELECT s FROM t;\n", "SET 'sql.dialct' = 'rsqldb';\n")
    assert [(d.code, d.span.line, d.span.col, d.hint) for d in c.report.sorted()] == \
        [("E100", 1, 5, "did you mean 'sql.dialect'?")]


def test_week_is_iso_week_and_validates(tmp_path):
    c = _check(tmp_path, "INSERT INTO o SELECT CAST(WEEK(CAST(s AS DATE)) AS STRING) FROM t;\n")
    fields = next(s for s in c.pipeline.components() if s.id == "o_select").model_dump()["fields"]
    assert fields == ["CAST(WEEKOFYEAR(CAST(s AS DATE)) AS STRING) AS v"]


EPOCH = r"""
SET 'sql.dialect' = 'rsqldb';
CREATE TABLE source_table (position VARCHAR, num INT, ts BIGINT) WITH (type = 'file', path = 'in3');
CREATE TABLE positions (window_start TIMESTAMP, window_end TIMESTAMP, position VARCHAR, sum_num BIGINT)
WITH (type = 'file', path = 'o3');
INSERT INTO positions SELECT TUMBLE_START(ts, INTERVAL '5' SECOND) AS window_start,
  TUMBLE_END(ts, INTERVAL '5' SECOND) AS window_end, position, sum(num) AS sum_num
FROM source_table WHERE num > 5 GROUP BY TUMBLE(ts, INTERVAL '5' SECOND), position HAVING sum(num) < 20;
CREATE TABLE clicks (name VARCHAR, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (type = 'file', path = 'in');
CREATE TABLE clicks_rsqldb (name VARCHAR, ms BIGINT, WATERMARK wk FOR ms AS withOffset(ms, 1000))
WITH (type = 'file', path = 'in2');
CREATE TABLE flink_out (w TIMESTAMP, who VARCHAR, n BIGINT) WITH (type = 'file', path = 'o1');
CREATE TABLE rsqldb_out (w TIMESTAMP, n BIGINT) WITH (type = 'file', path = 'o2');
INSERT INTO flink_out SELECT TUMBLE_START(ts, INTERVAL '1' MINUTE), REGEXP_EXTRACT(name, '(\w+)-\d', 1) AS who,
  COUNT(*) FROM clicks WHERE name REGEXP '^\w+-\d$' GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE),
  REGEXP_EXTRACT(name, '(\w+)-\d', 1);
INSERT INTO rsqldb_out SELECT TUMBLE_START(ms, INTERVAL '1' MINUTE), COUNT(*) FROM clicks_rsqldb
  GROUP BY TUMBLE(ms, INTERVAL '1' MINUTE);
"""


@pytest.mark.spark
def test_epoch_millisecond_event_time_and_backslashes_reach_spark(spark, tmp_path):
    """Flink's `ts AS TO_TIMESTAMP_LTZ(ms, 3)` with a WATERMARK on it, and rsqldb's BIGINT `ms` with
    withOffset: epoch milliseconds, so the events of a minute share its window (as seconds each was its own, in
    year 58000); '\\w+-\\d' reaches the rules and Spark with its backslashes."""
    from etl.runtime.testing import run_case
    from etl.spec.pipeline import TestCase

    (tmp_path / "job.sql").write_text(EPOCH)
    c = check_file(tmp_path / "job.sql", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    ms = [1768035601000, 1768035620000, 1768035650000, 1768035665000, 1768035780000]  # 09:00:01 ... 09:03:00
    rows = [{"name": n, "ms": m} for n, m in zip(["ann-1", "bob-2", "ann-3", "ann-4", "zed-9"], ms, strict=True)]
    # rsqldb's documented event-time window (docs/sql_example.md): six messages, `ts` in epoch milliseconds and
    # no WATERMARK; its output: [11:00:00, 11:00:05) shenzhen 13, shanghai 13 in Asia/Shanghai time, 03:00 UTC
    # (the next window closes later)
    doc = [("shenzhen", 6, 1674874800000), ("shanghai", 7, 1674874800000), ("shanghai", 6, 1674874803000),
           ("shenzhen", 7, 1674874804000), ("shanghai", 6, 1674874806000), ("shenzhen", 6, 1674874807000)]
    inputs = {"clicks": rows, "clicks_rsqldb": rows,
              "source_table": [{"position": p, "num": n, "ts": t} for p, n, t in doc]}
    res = run_case(c.plan, TestCase(name="epoch", inputs=inputs), spark)
    assert res.ok, res.message
    got = {k: sorted(tuple(str(x) for x in r.values()) for r in v) for k, v in res.captured.items()
           if k != "dead_letter"}
    assert got == {
        "flink_out": [("2026-01-10 09:00:00+00:00", "ann", "2"), ("2026-01-10 09:00:00+00:00", "bob", "1"),
                      ("2026-01-10 09:01:00+00:00", "ann", "1")],
        "rsqldb_out": [("2026-01-10 09:00:00+00:00", "3"), ("2026-01-10 09:01:00+00:00", "1")],
        "positions": [("2023-01-28 03:00:00+00:00", "2023-01-28 03:00:05+00:00", "shanghai", "13"),
                      ("2023-01-28 03:00:00+00:00", "2023-01-28 03:00:05+00:00", "shenzhen", "13")],
    }


_DIFFERS = [(r, n) for r in flink_table() if r.status == "differs" and r.names and "GROUPING" not in r.names
            for n in r.names]


@pytest.mark.parametrize("row,name", _DIFFERS, ids=[n for _, n in _DIFFERS])
def test_a_function_that_differs_from_flinks_is_w015_at_its_call(tmp_path, row, name):
    """Each kept difference of the table is named where it is called: W015 with the row's note (one source)."""
    call = row.example if row.example.upper().startswith(name) else f"{name}()" if "TIMESTAMP" in name else \
        f"{name}(s)"
    group = " GROUP BY s" if row.category == "aggregate" else ""
    c = _check(tmp_path, f"INSERT INTO o SELECT CAST({call} AS STRING) FROM t{group};\n")
    got = [(d.code, d.span.line, d.span.col, d.message) for d in c.report.sorted()]
    if name == "LISTAGG":  # a GROUP BY's LISTAGG is no aggregate of etl's yet: E310 at its argument
        got = [g for g in got if g[0] == "W015"]
    assert got == [("W015", 3, 27, f"{name} differs from Flink's: {row.note}")]
