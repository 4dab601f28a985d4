"""The executor side of Python functions (etl.compile.functions): per-row calls and shipped modules, without Spark."""
import sys

import pytest

from etl.compile.functions import RowCall, Shipped

SOURCE = '''\
def f(s):
    if s == "bad":
        raise ValueError("bad row")
    return s * 2


def rows(s):
    for i, ch in enumerate(s):
        if ch == "!":
            raise KeyError(ch)
        yield ch, i


def typed(v):
    return v


def table(v):
    yield from v
'''


def types(ddl):
    """A pyspark DataType without a JVM (DataType.fromDDL needs one): 'string', 'bigint', 'w string, n int'..."""
    from pyspark.sql import types as T

    simple = {"string": T.StringType(), "bigint": T.LongType(), "int": T.IntegerType(), "double": T.DoubleType(),
              "boolean": T.BooleanType(), "date": T.DateType(), "timestamp": T.TimestampType(),
              "decimal(5,2)": T.DecimalType(5, 2), "array<bigint>": T.ArrayType(T.LongType()),
              "map<string,int>": T.MapType(T.StringType(), T.IntegerType()),
              "struct<a:string,b:int>": T.StructType([T.StructField("a", T.StringType()),
                                                      T.StructField("b", T.IntegerType())])}
    if ddl in simple:
        return simple[ddl]
    return T.StructType([T.StructField(n, simple[t]) for n, t in (c.split(" ") for c in ddl.split(", "))])


def test_a_row_error_is_returned_beside_the_value():
    call = RowCall(Shipped("udfs:f", SOURCE, "udfs.py"), False, types("string"))
    assert call("ab") == ("abab", None)
    assert call("bad") == (None, "ValueError: bad row")


def test_a_table_function_is_run_to_its_end_inside_the_row():
    call = RowCall(Shipped("udfs:rows", SOURCE, "udfs.py"), True, types("c string, i bigint"))
    assert call("ab") == ([("a", 0), ("b", 1)], None)
    assert call("a!") == (None, "KeyError: '!'")  # raised after a first row: the whole row fails


def test_a_value_of_another_type_than_declared_is_the_rows_error():
    import datetime
    import decimal

    import numpy as np

    def call(ddl, v):
        return RowCall(Shipped("udfs:typed", SOURCE, "udfs.py"), False, types(ddl))(v)

    ok = [("bigint", 5), ("bigint", np.int64(5)), ("bigint", None), ("int", -2**31), ("double", 1), ("double", 2.5),
          ("double", np.float32(2.5)), ("string", "x"), ("boolean", np.bool_(True)), ("decimal(5,2)", 999),
          ("decimal(5,2)", decimal.Decimal("1.50")), ("date", datetime.date(2026, 1, 1)),
          ("timestamp", datetime.datetime(2026, 1, 1)), ("array<bigint>", (1, 2)), ("map<string,int>", {"k": 1}),
          ("struct<a:string,b:int>", ("x", 1)), ("struct<a:string,b:int>", {"a": "x", "b": None})]
    assert [call(t, v) for t, v in ok] == [(v, None) for _, v in ok]
    t = "where its declared type is"
    bad = [("bigint", "abc", f"a str ('abc') {t} bigint"),
           ("bigint", True, f"a bool (True) {t} bigint"),
           ("bigint", 1.0, f"a float (1.0) {t} bigint"),
           ("int", 2**31, f"an int (2147483648) {t} int, out of its range"),
           ("string", {"k": "v"}, f"a dict ({{'k': 'v'}}) {t} string"),
           ("string", 5, f"an int (5) {t} string"),
           ("double", "1.5", f"a str ('1.5') {t} double"),
           ("boolean", 1, f"an int (1) {t} boolean"),
           ("decimal(5,2)", decimal.Decimal("1.234"),
            f"a Decimal (Decimal('1.234')) {t} decimal(5,2), more digits than decimal(5,2) holds"),
           ("decimal(5,2)", 1000, f"an int (1000) {t} decimal(5,2), more digits than decimal(5,2) holds"),
           ("date", "2026-01-01", f"a str ('2026-01-01') {t} date"),
           ("timestamp", datetime.date(2026, 1, 1), f"a date (datetime.date(2026, 1, 1)) {t} timestamp"),
           ("array<bigint>", [1, "a"], f"a list ([1, 'a']) {t} array<bigint>: element 2 is a str ('a')"),
           ("array<bigint>", "ab", f"a str ('ab') {t} array<bigint>"),
           ("map<string,int>", {"k": "v"},
            f"a dict ({{'k': 'v'}}) {t} map<string,int>: the value of key 'k' is a str ('v')"),
           ("map<string,int>", {1: 1}, f"a dict ({{1: 1}}) {t} map<string,int>: a key is an int (1)"),
           ("struct<a:string,b:int>", ("x",), f"a tuple (('x',)) {t} struct<a:string,b:int>: 1 value(s) for its 2 "
                                              "fields"),
           ("struct<a:string,b:int>", {"a": "x"}, f"a dict ({{'a': 'x'}}) {t} struct<a:string,b:int>: no field(s) b"),
           ("struct<a:string,b:int>", ("x", "y"),
            f"a tuple (('x', 'y')) {t} struct<a:string,b:int>: field 'b' is a str ('y')")]
    assert [call(t, v) for t, v, _ in bad] == [(None, f"returned {m}") for _, _, m in bad]


def test_a_table_functions_row_of_another_shape_or_type_is_the_rows_error():
    call = RowCall(Shipped("udfs:table", SOURCE, "udfs.py"), True, types("w string, n int"))
    assert call([("a", 1), ["b", None]]) == ([("a", 1), ("b", None)], None)
    assert call([]) == ([], None)
    cols = "where its declared columns are (w string, n int)"
    assert call([("a", 1), ("b", 2, 3)]) == (None, f"row 2 ('b', 2, 3) has 3 value(s) {cols}")
    assert call([{"w": "a"}]) == (None, f"row 1 {{'w': 'a'}} is a dict ({{'w': 'a'}}), not a tuple, {cols}")
    assert call([("a", "x")]) == (None, "row 1 ('a', 'x'): column 'n' is a str ('x') where its declared type is int")
    one = RowCall(Shipped("udfs:table", SOURCE, "udfs.py"), True, types("w string"))
    assert one(["a", ("b",)]) == ([("a",), ("b",)], None)  # a lone value is a one-column row
    assert one([3]) == (None, "row 1 3: column 'w' is an int (3) where its declared type is string")


def test_two_modules_of_one_name_do_not_clash():
    one = Shipped("udfs:f", "def f(s):\n    return 1\n", "udfs.py")
    two = Shipped("udfs:f", "def f(s):\n    return 2\n", "udfs.py")
    assert (one.load()(None), two.load()(None)) == (1, 2)


def test_a_module_that_fails_is_not_left_half_made():
    broken = Shipped("broken:f", "def f():\n    return 1\nraise RuntimeError('no')\n", "broken.py")
    for _ in range(2):  # the second load runs it again instead of finding a module without `f`
        with pytest.raises(RuntimeError, match="no"):
            broken.load()
    assert not [m for m in sys.modules if m.startswith("_etl_fn_broken_")]
