"""Spark's arithmetic as data (etl/sql/spark_operators.tsv, written by scripts/spark_operators.py; etl.sql.operators):
current for the installed pyspark, the types validate gives operators, literals and the values Spark brings to one
type, and E102 at each operator Spark refuses (tests/spark/test_spark_operators.py asks Spark the same)."""

from __future__ import annotations

from importlib import metadata

from etl.sql.operators import FILE, REFUSED, result, tables

# columns of the expressions below (and of tests/spark/test_spark_operators.py's frame)
COLUMNS = {"i": "int", "b": "bigint", "d": "double", "n": "decimal(10,2)", "w": "decimal(38,10)", "s": "string",
           "dt": "date", "ts": "timestamp", "tags": "array<string>", "ih": "interval hour", "iday": "interval day",
           "iym": "interval year to month", "x": "binary", "nums": "array<bigint>", "m": "map<string,int>"}
# expression -> the type validate gives it, Spark's (tests/spark/test_spark_operators.py)
TYPES = {
    # operators over dates, timestamps, intervals, text and numbers (ANSI)
    "dt + 1": "date", "1 + dt": "date", "length(s) + dt": "date", "dt - 1": "date", "dt - dt": "interval day", "ts - ts": "interval day to second",
    "ts - dt": "interval day to second", "dt + INTERVAL 1 DAY": "date", "dt - INTERVAL '2' DAY": "date",
    "dt + INTERVAL 1 HOUR": "timestamp", "ts + INTERVAL 1 HOUR": "timestamp", "ts - iym": "timestamp",
    "ih + iday": "interval day to hour", "ih * 2": "interval day to second", "iym * 2": "interval year to month",
    "iym / 2": "interval year to month", "INTERVAL 1 HOUR 30 MINUTES": "interval hour to minute",
    "INTERVAL '1 2' DAY TO HOUR": "interval day to hour", "s + 1": "bigint", "s * 2.5": "double", "s - dt": "interval day",
    "i + b": "bigint", "i / i": "double", "i div 2": "bigint", "b % d": "double", "-b": "bigint", "-n": "decimal(10,2)",
    "try_add(dt, 1)": "date", "try_subtract(dt, dt)": "interval day", "try_multiply(n, 2)": "decimal(12,2)",
    "try_divide(n, i)": "decimal(21,13)", "try_mod(i, n)": "decimal(10,2)",
    # decimal precision and scale (DecimalPrecision; an integer literal counts its digits)
    "n * 2": "decimal(12,2)", "n * i": "decimal(21,2)", "n * 2 + 1.5": "decimal(13,2)", "w / w": "decimal(38,6)",
    "w * w": "decimal(38,6)", "w + w": "decimal(38,9)", "i % n": "decimal(10,2)", "n / 3": "decimal(14,6)",
    "n - 100000": "decimal(11,2)",
    # one type of several values
    "coalesce(i, d)": "double", "coalesce(i, n)": "decimal(12,2)", "greatest(i, b, n)": "decimal(22,2)",
    "least(i, 2.5)": "decimal(11,1)", "CASE WHEN i > 1 THEN i ELSE n END": "decimal(12,2)",
    "CASE WHEN i > 1 THEN b WHEN i > 2 THEN 1.5 ELSE NULL END": "decimal(21,1)", "if(i > 1, i, 2.5)": "decimal(11,1)",
    "array(i, d)": "array<double>", "array(dt, ts)": "array<timestamp>", "nvl(i, b)": "bigint",
    "nvl2(s, i, b)": "bigint", "coalesce(n, 1)": "decimal(12,2)", "coalesce(s, 1)": "bigint",
    "coalesce(dt, ts)": "timestamp", "ifnull(s, dt)": "date",
    # literals
    "1.5": "decimal(2,1)", "0.05": "decimal(2,2)", "100.0": "decimal(4,1)", "1e3": "double", "1.5E2": "double",
    "7": "int", "100000000000": "bigint", "12345678901234567890": "decimal(20,0)", "X'01'": "binary",
    "DATE '2024-01-01'": "date", "TIMESTAMP '2024-01-01 00:00:00'": "timestamp",
    # || on arrays, text, binary
    "tags || tags": "array<string>", "s || i": "string", "x || x": "binary", "s || x": "string",
    # comparisons Spark takes
    "dt = s": "boolean", "ts < dt": "boolean", "b IN (1, 2.5, s)": "boolean", "n BETWEEN 1 AND d": "boolean",
    "tags = tags": "boolean",
    # lambdas, container builders and accessors (etl.graph.containers)
    "transform(tags, x -> length(x))": "array<int>", "transform(tags, (x, i) -> i)": "array<int>",
    "transform(nums, x -> x * 1.5)": "array<decimal(23,1)>", "filter(nums, x -> x > 1)": "array<bigint>",
    "array_sort(tags, (l, r) -> 0)": "array<string>", "aggregate(tags, 0, (acc, x) -> acc + length(x))": "int",
    "aggregate(tags, 0, (acc, x) -> acc + length(x), acc -> acc * 2.5)": "decimal(13,1)",
    "reduce(nums, CAST(0 AS BIGINT), (acc, x) -> acc + x)": "bigint", "map_from_arrays(tags, nums)": "map<string,bigint>",
    "named_struct('a', s, 'b', b)": "struct<a:string,b:bigint>", "struct(s, b AS c)": "struct<s:string,c:bigint>",
    "map_filter(m, (k, v) -> v > 0)": "map<string,int>", "transform_values(m, (k, v) -> v * 2.5)": "map<string,decimal(13,1)>",
    "transform_keys(m, (k, v) -> length(k))": "map<int,int>", "zip_with(tags, nums, (x, y) -> y + 1)": "array<bigint>",
    "map_zip_with(m, m, (k, v1, v2) -> v1 + v2)": "map<string,int>", "map_keys(m)": "array<string>",
    "map_values(m)": "array<int>", "map_entries(m)": "array<struct<key:string,value:int>>",
    "flatten(array(tags, tags))": "array<string>", "array_distinct(nums)": "array<bigint>", "slice(tags, 1, 2)": "array<string>",
    "array_union(tags, tags)": "array<string>", "array_intersect(nums, nums)": "array<bigint>",
    "array_except(tags, tags)": "array<string>", "array_compact(tags)": "array<string>",
    "array_remove(nums, 1)": "array<bigint>", "sort_array(tags)": "array<string>",
    "transform(tags, ts -> ts || 'x')": "array<string>", "transform(nums, dt -> dt * 2)": "array<bigint>",
}
# aggregates: their types in one aggregation
AGGREGATES = {"collect_list(s)": "array<string>", "collect_set(b)": "array<bigint>", "array_agg(n)": "array<decimal(10,2)>",
              "collect_list(named_struct('a', i, 'b', dt))": "array<struct<a:int,b:date>>",
              "collect_set(ts)": "array<timestamp>"}
# expression -> E102's column (1-based) in `v: "<expression>"` (Spark refuses each: tests/spark/test_spark_operators.py)
REFUSED_AT = {"dt + dt": 4, "try_add(dt, dt)": 1, "ts * 2": 4, "tags || s": 6, "-b + dt": 4, "i + true": 3,
              "dt * 2": 4, "ts + 1": 4, "s - s": 3, "x + 1": 3, "tags + 1": 6, "try_divide(dt, 2)": 1,
              "i + (dt - dt)": 3, "upper(s) || tags": 10, "n % ts": 3, "b div dt": 3,
              # comparisons: at the operator, IN, BETWEEN
              "dt = 1": 4, "ts < INTERVAL 1 DAY": 4, "b IN (1, dt)": 3, "dt BETWEEN 1 AND 2": 4,
              "(dt - dt) = 'paid'": 11, "b IS DISTINCT FROM dt": 3, "i >= true": 3, "tags != s": 6,
              # an aggregate whose merge changes its start's type: at the call
              "aggregate(nums, 0, (acc, x) -> acc + x)": 1, "i + reduce(tags, 0, (acc, x) -> acc + 1.5)": 5}


def test_the_tables_are_current():
    first = next(line for line in FILE.read_text().splitlines() if line.startswith("pyspark\t"))
    assert first.split("\t")[1] == metadata.version("pyspark")
    assert len(tables()) == 16 and all(len(t) == 19 * 19 for t in tables().values())


def test_result_reads_spark_s_rules():
    assert result("+", "date", "date") == REFUSED and result("try_add", "date", "date") == REFUSED
    assert result("+", "date", "int") == "date" and result("+", "date", "bigint") == REFUSED
    assert result("coalesce", "array<int>", "array<string>") is None  # element types widened: not told
    assert result("+", "variant", "int") is None and result("+", "unknown", "int") is None
    assert result("*", "decimal(10,2)", "int", None, 1) == "decimal(12,2)"


def test_types_validate_gives_are_spark_s():
    from etl.graph.sql import guess_type

    assert {e: guess_type(e, COLUMNS) for e in TYPES} == TYPES
    assert {e: guess_type(e, COLUMNS) for e in AGGREGATES} == AGGREGATES


def _pipeline(tmp_path, exprs: list[str]):
    schema = ", ".join(f"{c}: \"{t}\"" for c, t in COLUMNS.items())
    lines = "\n".join(f"      v{k}: \"{e}\"" for k, e in enumerate(exprs))
    path = tmp_path / "p.yaml"
    path.write_text(f"""name: p
sources:
  - {{id: s, type: file, path: ./in, format: jsonl, schema: {{{schema}}}}}
transforms:
  - id: d
    type: derive
    input: s
    columns:
{lines}
sinks:
  - {{id: out, type: print, input: d}}
""")
    return path


def test_operators_spark_refuses_are_e102_at_the_operator(tmp_path):
    from etl.check import check_file

    exprs = list(REFUSED_AT)
    checked = check_file(_pipeline(tmp_path, exprs))
    got = sorted((d.code, d.span.line, d.span.col) for d in checked.report.errors)
    # `      vK: "` is 11 characters (K < 10) or 12
    want = sorted(("E102", 9 + k, len(f'      v{k}: "') + REFUSED_AT[e]) for k, e in enumerate(exprs))
    assert got == want, [d.render() for d in checked.report.errors]
    first = checked.report.sorted()[0]
    assert first.message == "date + date is refused by Spark (DATATYPE_MISMATCH at run) (transform 'd' (columns.v0))"
    assert first.hint == ("Spark's + takes beside date on its left: tinyint, smallint, int, interval year to month, "
                          "interval day to second; cast an argument, e.g. CAST(... AS ...)")


def test_the_types_validate_gives_validate(tmp_path):
    """Every expression of TYPES validates (no E102 of a pair Spark takes)."""
    from etl.check import check_file

    checked = check_file(_pipeline(tmp_path, list(TYPES)))
    assert not checked.report.errors, [d.render() for d in checked.report.errors]
