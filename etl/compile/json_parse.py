"""JSON text -> a struct of declared columns plus a corrupt-record column: the physical plan's `parser` engine.

`json-parse-jvm` (etl/jvm/JsonParse.java, with etl's jar) gives exactly the
struct of `from_json(text, schema, {mode: PERMISSIVE, columnNameOfCorruptRecord})`
(the `from_json` engine, without the jar) without the copy of every row Spark's
from_json makes when a corrupt-record column is asked for. Used by the kafka and
rocketmq sources' json values (etl.connectors.messages) and the `parse`
transform's json (tests/spark/test_json_parse.py compares both on hostile values).
"""

from __future__ import annotations

from typing import Any

from etl.compile import jvm

ENGINES = ("json-parse-jvm", "from_json")


def json_struct(spark: Any, text: Any, schema: Any, corrupt: str, engine: str) -> Any:
    """The column of `text` parsed to `schema` (a StructType with the string field `corrupt`) by `engine`."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if engine == "json-parse-jvm":
        return Column(spark.sparkContext._jvm.etl.jvm.JsonParse.parsed(text._jc, schema.json(), corrupt))
    if engine != "from_json":
        raise ValueError(f"unknown json parser {engine!r} (one of {', '.join(ENGINES)})")
    # strings of any length, as JsonParse.java: Spark's default is 20 MB, sources cap records (ETL_MAX_RECORD_MB)
    return F.from_json(text, schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": corrupt,
                                      "maxStringLen": str(2**31 - 1)})


def json_parser(spark: Any, planned: str | None) -> str:
    """The physical plan's `parser` engine; None (a caller without a plan): json-parse-jvm where the session has
    etl's jar, else from_json."""
    if planned is not None:
        return planned
    return "json-parse-jvm" if jvm.available(spark) else "from_json"
