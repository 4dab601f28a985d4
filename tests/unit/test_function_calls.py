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
'''


def test_a_row_error_is_returned_beside_the_value():
    call = RowCall(Shipped("udfs:f", SOURCE, "udfs.py"), table=False)
    assert call("ab") == ("abab", None)
    assert call("bad") == (None, "ValueError: bad row")


def test_a_table_function_is_run_to_its_end_inside_the_row():
    call = RowCall(Shipped("udfs:rows", SOURCE, "udfs.py"), table=True)
    assert call("ab") == ([("a", 0), ("b", 1)], None)
    assert call("a!") == (None, "KeyError: '!'")  # raised after a first row: the whole row fails


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
