"""etl.compile.unions.union_by_name: the rows and the columns (and their order) of a chain of unionByName."""

from __future__ import annotations

from functools import reduce

import pytest

from etl.compile.unions import union_by_name

pytestmark = pytest.mark.spark


def test_a_balanced_union_is_the_chain(spark):
    frames = [spark.createDataFrame([(i, f"r{i}")], f"a int, c{i % 3} string") for i in range(7)]
    chain = reduce(lambda x, y: x.unionByName(y, allowMissingColumns=True), frames)
    got = union_by_name(frames)
    assert got.columns == chain.columns == ["a", "c0", "c1", "c2"]
    assert sorted(map(tuple, got.collect())) == sorted(map(tuple, chain.collect())) == [
        (0, "r0", None, None), (1, None, "r1", None), (2, None, None, "r2"), (3, "r3", None, None),
        (4, None, "r4", None), (5, None, None, "r5"), (6, "r6", None, None)]
    assert union_by_name(frames[:1]) is frames[0]
