from __future__ import annotations

import pyarrow as pa
import pytest

from etl.matching.batch import BatchView, eval_native
from etl.optimize import compile_rules
from tests.optimize.golden import check, load_cases, render, rules_of


@pytest.mark.parametrize("case", load_cases("native_split"), ids=lambda c: c["name"])
def test_golden(case):
    check("native_split", case, render(case, "native_split"))


BATCH = pa.RecordBatch.from_pydict({
    "user": pa.array([" Root ", "root", None, "ROOT", "admin"]),
    "port": pa.array([22, 80, None, 443, 8080], pa.int64()),
    "ratio": pa.array([0.5, float("nan"), None, 2.0, -0.0]),
    "ip": pa.array(["10.1.2.3", "2001:db8::1", "bad", None, "192.168.1.1"]),
})


@pytest.mark.parametrize("pred,expected", [
    ({"field": "user", "eq": "root"}, [False, True, False, False, False]),
    ({"field": "user", "apply": ["trim", "lower"], "eq": "root"}, [True, True, False, True, False]),
    ({"field": "user", "eq": "ROOT", "caseless": True}, [False, True, False, True, False]),
    ({"field": "user", "ne": "root"}, [True, False, False, True, True]),
    ({"field": "user", "in": ["admin", "root", 3]}, [False, True, False, False, True]),
    ({"field": "user", "gt": "a"}, [False, True, False, False, True]),
    ({"field": "port", "eq": 80}, [False, True, False, False, False]),
    ({"field": "port", "eq": "80"}, [False, False, False, False, False]),
    ({"field": "port", "ne": "80"}, [True, True, False, True, True]),
    ({"field": "port", "in": [22, 443.0, 8080.5]}, [True, False, False, True, False]),
    ({"field": "port", "ge": 443}, [False, False, False, True, True]),
    ({"field": "ratio", "eq": 0.0}, [False, False, False, False, True]),
    ({"field": "ratio", "ne": 2.0}, [True, True, False, False, True]),
    ({"field": "ratio", "lt": 1}, [True, False, False, False, True]),
    ({"field": "user", "is_null": True}, [False, False, True, False, False]),
    ({"field": "missing", "is_null": True}, [True] * 5),
    ({"field": "missing", "ne": 1}, [False] * 5),
    ({"field": "port", "not_null": True}, [True, True, False, True, True]),
    ({"field": "ip", "cidr": ["10.0.0.0/8", "2001:db8::/32"]}, [True, True, False, False, False]),
])
def test_vectorized_natives(pred, expected):
    program = compile_rules(rules_of([{"id": "r", "when": pred}]), upto="native_split")
    (native,) = program.natives
    assert eval_native(native.key, BatchView(BATCH)).tolist() == expected


def test_int_values_outside_the_column_type():
    batch = BatchView(pa.RecordBatch.from_pydict({"x": pa.array([0, 255, 3], pa.uint8())}))
    program = compile_rules(rules_of([{"id": "r", "when": {"field": "x", "in": [-1, 255, 3.0, 10**30]}}]),
                            upto="native_split")
    assert eval_native(program.natives[0].key, batch).tolist() == [False, True, True]
