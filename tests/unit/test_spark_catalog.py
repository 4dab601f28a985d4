"""Spark's function catalogue (etl/sql/spark_functions.tsv, written by scripts/spark_functions.py) is current for
the installed pyspark, and says what Spark says of the calls it describes (tests/spark/test_spark_catalog.py asks
Spark again for a sample)."""

from __future__ import annotations

import ast
from importlib import metadata
from pathlib import Path

import pytest

from etl.sql.catalog import catalogue, lookup, pyspark_version, type_class
from etl.sql.functions import spark_functions

# names pyspark.sql.functions passes to the JVM's functions object that are no SQL function of SHOW FUNCTIONS
# (column helpers, sort orders, camelCase or _distinct variants of SQL syntax, ...)
JVM_ONLY = {"asc", "asc_nulls_first", "asc_nulls_last", "bitwise_not", "call_function", "call_udf", "col",
            "count_distinct", "desc", "desc_nulls_first", "desc_nulls_last", "expr", "listagg_distinct", "lit",
            "product", "string_agg_distinct", "sum_distinct", "timestamp_add", "timestamp_diff", "unwrap_udt"}

# calls pipelines make, over s string, b bigint, d double, ts timestamp, tags array<string>, m map<string,string>:
# validate takes each, and so does Spark's analysis (tests/spark/test_spark_catalog.py)
COMMON = [
    "date_format(ts, 'yyyy')", "to_timestamp(s, 'yyyy')", "from_unixtime(b)", "unix_timestamp()",
    "regexp_extract(s, 'p', 1)", "split(s, ',')", "size(split(s, ','))", "concat(s, s)", "if(b > 1, 'a', 'b')",
    "nvl(s, 'x')", "round(d, 2)", "cast(s as int)", "current_timestamp()", "date_trunc('hour', ts)", "hour(ts)",
    "get_json_object(s, '$.a')", "from_json(s, 'a int')", "element_at(m, 'k')", "map_keys(m)",
    "array_contains(tags, 'x')", "lower(trim(s))", "md5(s)", "sha2(s, 256)", "hash(s, b)", "xxhash64(s)",
    "substr(s, 1, 3)", "instr(s, 'a')", "locate('a', s)", "lpad(s, 5, '0')", "format_number(b, 2)",
    "datediff(ts, ts)", "months_between(ts, ts)", "to_date(ts)", "date_add(to_date(ts), 1)", "timestamp_millis(b)",
    "unix_millis(ts)", "try_cast(s AS int)", "ifnull(s, 'x')", "greatest(b, 1)", "coalesce(b, 0)", "length(s) + 1",
    "abs(b)", "parse_url(s, 'HOST')", "url_decode(s)", "regexp_replace(s, 'a', 'b')", "rlike(s, 'a')",
    "date_add(ts, 1)", "array_join(tags, ',')", "concat_ws(',', tags)", "transform(tags, x -> upper(x))",
    "filter(tags, x -> x != '')", "struct(s, b)", "named_struct('a', s)", "map('a', s)", "array(s, s)",
    "sequence(1, b)", "slice(tags, 1, 2)", "to_json(struct(s))", "nullif(s, '')", "left(s, 2)", "right(s, 2)",
    "replace(s, 'a')", "position('a', s)", "trim(BOTH 'x' FROM s)", "substring(s FROM 2)", "extract(year FROM ts)",
    "ceil(d)", "floor(d)", "pow(d, 2)", "log(d)", "bround(d, 1)", "pmod(b, 3)", "rand()", "uuid()", "base64(s)",
    "unbase64(s)", "decode(s, 'utf-8')", "encode(s, 'utf-8')", "char_length(s)", "initcap(s)", "reverse(s)",
    "repeat(s, 2)", "ascii(s)", "make_date(2024, 1, 1)", "weekofyear(ts)", "dayofweek(ts)", "last_day(ts)",
    "next_day(ts, 'Mon')", "bit_length(s)", "crc32(s)", "format_string('%s', s)", "printf('%s', s)", "sentences(s)",
    "soundex(s)", "split_part(s, ',', 1)", "startswith(s, 'a')", "endswith(s, 'a')", "contains(s, 'a')",
    "try_divide(b, 2)", "try_add(b, 1)", "isnull(s)", "isnotnull(s)", "nanvl(d, 0)", "typeof(s)",
    "date_diff(ts, ts)", "dateadd(ts, 1)", "ilike(s, 'a')", "like(s, 'a')", "luhn_check(s)", "cardinality(tags)",
    "array_size(tags)", "array_distinct(tags)", "array_sort(tags)", "sort_array(tags)", "flatten(array(tags))",
    "map_values(m)", "map_contains_key(m, 'a')", "str_to_map(s)", "try_element_at(tags, 1)", "get(tags, 0)",
    "tags[0]", "m['a']", "variant_get(parse_json(s), '$.a', 'int')", "try_parse_json(s)", "is_valid_utf8(s)",
    "current_date()", "now()", "e()", "pi()",
    # keyword and unit syntax, operators, lambdas, literals (issue 38: validate refused the first eight)
    "from_utc_timestamp(ts, 'UTC')", "to_utc_timestamp(ts, 'UTC')", "timestampadd(HOUR, 1, ts)",
    "timestampdiff(MINUTE, ts, ts)", "dateadd(DAY, 1, ts)", "date_add(DAY, 1, ts)", "datediff(HOUR, ts, ts)",
    "date_diff(HOUR, ts, ts)", "date_part('YEAR', ts)", "datepart('YEAR', ts)", "extract(YEAR FROM ts)",
    "extract(HOUR FROM ts)", "date_trunc('HOUR', ts)", "trunc(ts, 'MM')", "make_interval(1, 2, 3, 4, 5, 6, 7.5)",
    "make_dt_interval(1, 2, 3, 4.5)", "make_ym_interval(1, 2)", "make_timestamp(2024, 1, 1, 0, 0, 0)",
    "ts + INTERVAL 1 HOUR", "ts - INTERVAL '1' DAY", "ts + make_interval(0, 0, 0, 1)", "window(ts, '5 minutes')",
    "trim(LEADING 'x' FROM s)", "trim(TRAILING FROM s)", "trim(s)", "ltrim(s)", "btrim(s, 'x')", "position('a' IN s)",
    "position('a', s, 2)", "substring(s FROM 2 FOR 3)", "substring(s, 2, 3)", "overlay(s PLACING 'x' FROM 2)",
    "overlay(s PLACING 'x' FROM 2 FOR 1)", "overlay(s, 'x', 2)", "cast(b AS string)", "CAST(ts AS date)",
    "try_cast(s AS timestamp)", "s::int", "CASE WHEN b > 1 THEN 'a' ELSE 'b' END",
    "CASE b WHEN 1 THEN 'a' WHEN 2 THEN 'b' END", "b IN (1, 2, 3)", "b NOT IN (1, 2)", "b BETWEEN 1 AND 10",
    "b NOT BETWEEN 1 AND 10", "s LIKE 'a%'", "s LIKE ANY ('a%', 'b%')", "s LIKE ALL ('a%', '%b')",
    "s NOT LIKE ANY ('a%')", "s ILIKE 'a%'", "s RLIKE 'a+'", "s REGEXP 'a+'", "exists(tags, x -> x = 'a')",
    "forall(tags, x -> x != '')", "aggregate(tags, 0, (acc, x) -> acc + length(x))",
    "reduce(tags, 0, (acc, x) -> acc + length(x))", "zip_with(tags, tags, (x, y) -> concat(x, y))",
    "transform(tags, (x, i) -> concat(x, cast(i as string)))", "map_filter(m, (k, v) -> v != '')",
    "transform_keys(m, (k, v) -> upper(k))", "transform_values(m, (k, v) -> upper(v))",
    "map_zip_with(m, m, (k, v1, v2) -> concat(v1, v2))", "array_sort(tags, (l, r) -> 0)",
    "named_struct('a', s, 'b', b)", "named_struct('a', s).a", "struct(s AS x, b AS y).x", "m['k']", "m.k",
    "element_at(tags, 1)", "array(struct(s, b))[0].s", "struct(s, b).s", "s IS NULL", "s IS NOT NULL",
    "s IS DISTINCT FROM 'a'", "s <=> 'a'", "b % 2", "b DIV 2", "~b", "b & 1", "b | 1", "b ^ 1", "b << 1",
    "shiftleft(b, 1)", "NOT (b > 1)", "-b", "+b", "s || 'x'", "current_timezone()",
    "convert_timezone('UTC', 'Europe/Paris', ts)", "unix_seconds(ts)", "timestamp_seconds(b)", "to_unix_timestamp(ts)",
    "from_utc_timestamp(ts, 'Europe/Paris')", "date_from_unix_date(1)", "unix_date(to_date(ts))", "try_to_timestamp(s)",
    "to_timestamp_ntz(s)", "to_timestamp_ltz(s)", "make_timestamp_ntz(2024, 1, 1, 0, 0, 0)", "add_months(ts, 1)",
    "dayofmonth(ts)", "dayofyear(ts)", "quarter(ts)", "minute(ts)", "second(ts)", "month(ts)", "year(ts)",
    "date_sub(ts, 1)", "trunc(to_date(ts), 'YEAR')", "array_position(tags, 'a')", "array_remove(tags, 'a')",
    "array_union(tags, tags)", "arrays_overlap(tags, tags)", "map_from_arrays(tags, tags)",
    "map_from_entries(array(struct(s, s)))", "map_entries(m)", "map_concat(m, m)", "regexp_extract_all(s, 'a', 0)",
    "regexp_count(s, 'a')", "regexp_substr(s, 'a')", "regexp_instr(s, 'a')", "split(s, ',', 2)",
    "translate(s, 'a', 'b')", "levenshtein(s, s)", "mask(s)", "to_char(b, '999')", "to_number(s, '999')",
    "try_to_number(s, '999')", "to_binary(s, 'utf-8')", "hex(s)", "unhex(s)", "sha1(s)", "sha(s)",
    "aes_encrypt(s, '0000111122223333')", "xpath_string(s, 'a')", "json_array_length(s)", "json_object_keys(s)",
    "to_csv(struct(s))", "from_csv(s, 'a int')", "cast(s as decimal(10, 2))", "cast(array(b) as array<int>)",
    "cast(m as map<string, int>)", "cast(ts as bigint)", "typeof(INTERVAL 1 DAY)", "interval 1 day",
    "INTERVAL '1 2:03' DAY TO MINUTE", "X'41'", "DATE '2024-01-01'", "TIMESTAMP '2024-01-01 00:00:00'", "1.5BD", "1L",
]


def common_pipeline(exprs: list[str]) -> str:
    body = "\n".join(f'      c{i}: "{e}"' for i, e in enumerate(exprs))
    return f"""name: common
sources:
  - id: s0
    type: file
    path: ./in
    format: jsonl
    schema: {{s: string, b: bigint, d: double, ts: timestamp, tags: "array<string>", m: "map<string,string>"}}
transforms:
  - id: d
    type: derive
    input: s0
    columns:
{body}
sinks:
  - {{id: out, type: print, input: d}}
"""


def _pyspark_sql_names() -> set[str]:
    """The SQL function names pyspark.sql.functions' wrappers call (read from its source: no JVM)."""
    import pyspark.sql.functions.builtin as builtin

    names = set()
    for node in ast.walk(ast.parse(Path(builtin.__file__).read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id.startswith("_invoke_function") and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names.add(node.args[0].value)
    return names


def test_written_from_the_installed_pyspark():
    assert pyspark_version() == metadata.version("pyspark"), \
        "run .venv/bin/python scripts/spark_functions.py after a pyspark upgrade"


def test_every_sql_function_of_pyspark_is_in_the_catalogue():
    names = _pyspark_sql_names()
    assert len(names) > 400
    assert names - set(catalogue()) == JVM_ONLY
    assert not JVM_ONLY & set(catalogue())


def test_one_source_of_names():
    assert spark_functions() == frozenset(catalogue())
    assert len(catalogue()) > 550
    assert not (Path(__file__).parents[2] / "etl" / "sql" / "spark_functions.txt").exists()


@pytest.mark.parametrize("name,arity,takes,refuses", [
    ("substring", "2,3", [2, 3], [0, 1, 4]),
    ("coalesce", "1+", [1, 2, 9], [0]),
    ("concat", "0+", [0, 1, 5], []),
    ("named_struct", "2n", [2, 4], [0, 1, 3]),
    ("if", "3", [3], [2, 4]),
    ("current_date", "0", [0], [1]),
    ("count", "1+", [1, 3], [0]),
    ("greatest", "2+", [2, 7], [1]),
])
def test_arities(name, arity, takes, refuses):
    fn = lookup(name)
    assert fn is not None and fn.arity == arity
    assert [n for n in takes + refuses if fn.takes(n)] == takes


def test_arity_texts():
    assert lookup("substring").arity_text() == "2 or 3 arguments"
    assert lookup("upper").arity_text() == "1 argument"
    assert lookup("coalesce").arity_text() == "1 or more arguments"
    assert lookup("map").arity_text() == "an even number of arguments (2 or more)"


def test_argument_classes_and_results():
    upper, date_add, abs_, year = lookup("upper"), lookup("date_add"), lookup("abs"), lookup("year")
    assert upper.refuses(0, "array<string>") and upper.refuses(0, "map<string,int>")
    assert not upper.refuses(0, "int") and not upper.refuses(0, "string") and not upper.refuses(0, "variant")
    assert date_add.refuses(1, "bigint") and date_add.refuses(1, "double") and not date_add.refuses(1, "smallint")
    assert date_add.cast_of_text(1) == "int" and upper.cast_of_text(0) is None
    assert abs_.refuses(0, "boolean") and abs_.refuses(0, "date") and not abs_.refuses(0, "decimal(10,2)")
    assert year.refuses(0, "int") and year.cast_of_text(0) == "date"
    assert (upper.returns, year.returns, lookup("length").returns, lookup("to_date").returns) == \
        ("string", "int", "int", "date")
    assert lookup("coalesce").returns == "" and dict(lookup("coalesce").by_class)[1]["i"] == "$"
    assert lookup("nullif").returns == "$1" and dict(abs_.by_class) == {1: {"s": "double", "i": "$", "l": "$",
                                                                           "f": "$", "n": "$"}}
    assert lookup("explode").group == "generator" and lookup("sum").group == "agg" \
        and lookup("row_number").group == "window" and lookup("range").group == "table"


def test_result_types_by_argument_class():
    """A result type that depends on the arguments' classes (the catalogue's by_class) is told per call, and flows
    into later checks (tests/spark/test_spark_catalog.py::test_result_types_by_class_are_spark_s asks Spark)."""
    from etl.graph.sql import guess_type

    cols = {"s": "string", "i": "int", "b": "bigint", "d": "double", "n": "decimal(10,2)", "ts": "timestamp",
            "dt": "date", "tags": "array<string>"}
    calls = ["abs(i)", "abs(b)", "abs(d)", "abs(s)", "abs(n)", "negative(i)", "ceil(i)", "ceil(b)", "round(s)",
             "coalesce(i, i)", "coalesce(b, 0)", "coalesce(s, 'x', s, s, s)", "coalesce(i, d)", "greatest(d, d, d)",
             "nvl(ts, ts)", "if(i > 1, dt, dt)", "pmod(b, 3)", "pmod(b, d)", "pmod(i, n)", "try_add(i, i)", "try_add(dt, i)",
             "try_subtract(ts, ts)", "try_divide(b, b)", "lpad(s, 3)", "lpad(i, 3)", "concat(tags, tags)",
             "concat(s, i)", "reverse(tags)", "substring(b, 2)", "sum(i)", "avg(b)", "array(i, i)", "sequence(b, b)",
             "abs(tags)", "sequence(b, b, 300)", "if(i > 1, sequence(1, i), array())"]
    assert {c: guess_type(c, cols) for c in calls} == {
        "abs(i)": "int", "abs(b)": "bigint", "abs(d)": "double", "abs(s)": "double", "abs(n)": "decimal(10,2)",
        "negative(i)": "int", "ceil(i)": "bigint", "ceil(b)": "bigint", "round(s)": "double",
        "coalesce(i, i)": "int", "coalesce(b, 0)": "bigint", "coalesce(s, 'x', s, s, s)": "string",
        "coalesce(i, d)": "double", "greatest(d, d, d)": "double", "nvl(ts, ts)": "timestamp",
        "if(i > 1, dt, dt)": "date", "pmod(b, 3)": "bigint", "pmod(b, d)": "double", "pmod(i, n)": "unknown", "try_add(i, i)": "int",
        "try_add(dt, i)": "date", "try_subtract(ts, ts)": "interval day to second", "try_divide(b, b)": "double",
        "lpad(s, 3)": "string", "lpad(i, 3)": "string", "concat(tags, tags)": "array<string>",
        "concat(s, i)": "string", "reverse(tags)": "array<string>", "substring(b, 2)": "string", "sum(i)": "bigint",
        "avg(b)": "double", "array(i, i)": "array<int>", "sequence(b, b)": "array<bigint>", "abs(tags)": "unknown",
        "sequence(b, b, 300)": "array<bigint>", "if(i > 1, sequence(1, i), array())": "array<int>"}


def test_type_classes():
    assert [type_class(t) for t in ("varchar(10)", "SMALLINT", "decimal(38, 2)", "array<struct<a:int>>",
                                    "timestamp_ntz", "interval day", "unknown")] == ["s", "i", "n", "a", "t", None,
                                                                                     None]


def test_a_lambda_variable_is_not_the_column_of_its_name(tmp_path):
    from etl.check import check_file

    (tmp_path / "p.yaml").write_text("""name: l
sources:
  - id: s
    type: file
    path: ./in
    format: jsonl
    schema: {x: "array<string>", tags: "array<string>", m: "map<string,int>"}
transforms:
  - id: d
    type: derive
    input: s
    columns:
      a: "transform(tags, x -> upper(x))"
      b: "map_filter(m, (k, tags) -> length(tags) > 1)"
      c: "upper(x)"
sinks:
  - {id: out, type: print, input: d}
""")
    checked = check_file(tmp_path / "p.yaml")
    assert [(d.code, d.span.line, d.span.col) for d in checked.report.diagnostics] == [("E102", 15, 17)]


def test_common_calls_validate(tmp_path):
    from etl.check import check_file

    (tmp_path / "p.yaml").write_text(common_pipeline(COMMON))
    checked = check_file(tmp_path / "p.yaml")
    assert not checked.report.diagnostics, [d.render() for d in checked.report.diagnostics]
    assert len(COMMON) == 279


def test_syntax_and_overloads_keep_their_errors(tmp_path):
    """The forms validate used to refuse (unit syntax, overloads, a type after AS) take, and what Spark refuses of
    the same names is still reported where it is."""
    from etl.check import check_file

    (tmp_path / "p.yaml").write_text(common_pipeline([
        "date_add(DAY, 1, ts, 2)", "make_timestamp(tags)", "upper(s, 1)", "first_value(s, true)",
        "date_add(ts, 1, 2)", "cast(s AS decimal(10, 2, 3))", "SELECT 1"]))
    checked = check_file(tmp_path / "p.yaml")
    assert [(d.code, d.span.line, d.span.col) for d in checked.report.diagnostics] == [
        ("E012", 13, 12), ("E102", 14, 27), ("E012", 15, 12), ("E012", 17, 12), ("E311", 19, 12)], \
        [d.render() for d in checked.report.diagnostics]


def test_every_catalogued_call_parses():
    """A call of each catalogued function with a number of arguments Spark takes is an expression to validate's
    parser (sqlglot's own idea of a name's arguments or class is no error: first_value(x, true) is an IgnoreNulls)."""
    from etl.graph.sql import parse

    refused = []
    for fn in catalogue().values():
        counts = [2, 4] if fn.arity == "2n" else [int(p.rstrip("+")) for p in fn.arity.split(",") if p != "?"]
        for n in counts:
            text = f"{fn.name}({', '.join(['s'] * n)})"
            if parse(text).error is not None:
                refused.append(text)
    # between(a, b, c) and when(): Spark's functions behind syntax, sqlglot reads the keyword (the file's header
    # says so); concat(), lag(), lead(), which sqlglot's classes want an argument for, parse (Spark takes them:
    # tests/spark/test_spark_catalog.py::test_the_calls_the_header_explains)
    assert refused == ["between(s, s, s)", "when()"]


def test_arguments_spark_brings_to_one_type_are_checked_together(tmp_path):
    """coalesce, nvl, if's branches, greatest ...: types that share none are E102 at the later argument (Spark's
    DATA_DIFF_TYPES at run); a string takes the other's type (coalesce(s, b) is bigint in Spark), except in
    greatest/least; a NULL or an unknown type is never an error."""
    from etl.check import check_file

    ok = ["coalesce(s, b)", "coalesce(b, d, 0)", "nvl(ts, '2026-01-01')", "if(b > 0, s, b)", "coalesce(b, NULL)",
          "least(ts, current_date())", "coalesce(tags, array())", "nvl2(s, b, d)"]
    bad = ["coalesce(b, true)", "nvl(ts, 0)", "if(b > 0, ts, d)", "greatest(s, b)", "coalesce(unhex(s), 0)",
           "nvl2(s, b, ts)"]
    (tmp_path / "p.yaml").write_text(common_pipeline(ok + bad))
    checked = check_file(tmp_path / "p.yaml")
    got = [(d.code, d.span.line, d.span.col, d.message.split(":")[0]) for d in checked.report.diagnostics]
    assert got == [
        ("E102", 21, 24, "argument 2 of coalesce is boolean, which shares no type with bigint before it"),
        ("E102", 22, 20, "argument 2 of nvl is int, which shares no type with timestamp before it"),
        ("E102", 23, 27, "argument 3 of if is double, which shares no type with timestamp before it"),
        ("E102", 24, 25, "argument 2 of greatest is bigint, which shares no type with string before it"),
        ("E102", 25, 32, "argument 2 of coalesce is int, which shares no type with binary before it"),
        ("E102", 26, 24, "argument 3 of nvl2 is timestamp, which shares no type with bigint before it")], got
