"""Unknown functions in SQL scripts (the rewrites of Flink / rsqldb built-ins: tests/sql/test_sql_conformance.py)."""
from __future__ import annotations

from etl.sql.dialect import DIALECT
from etl.sql.functions import Functions


def test_unknown_function_is_reported_with_the_closest_name():
    seen = []
    e = DIALECT.parse("SELECT SPLIT_INDX(s, ',', 1), upper(s)")[0]
    Functions(seen.append).translate(e)
    assert [n.name for n in seen] == ["SPLIT_INDX"]
    from etl.sql.functions import unknown_hint

    assert unknown_hint("SPLIT_INDX") == "did you mean 'split_index'?"
