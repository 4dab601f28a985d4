"""Message payloads -> declared columns, shared by the queue sources (kafka, rocketmq).

``decode_json`` turns a column of JSON text into the source's declared columns
plus the dead-letter columns ERR (why the row failed, NULL when it did not)
and PAYLOAD (the original text): a value that is empty, not JSON, not an
object, or does not fit the schema keeps its payload and gets a reason, which
`etl.compile.deadletter.from_shared` then routes to the dead-letter sink.
A value over ETL_MAX_RECORD_MB is not parsed: its dead letter keeps its first
1,024 characters and its size. ``bounded_value`` is the same bound on a `text`
or `raw` value (etl.compile.deadletter.within_record_size).
"""

from __future__ import annotations

from typing import Any

from etl.connectors.api import ERR, OVER, PAYLOAD, CompileError, as_shared, json_parser, json_struct, within_record_size
from etl.components.sources.file.build import max_record_bytes, struct_of

CORRUPT = "_etl_corrupt"
DECODED = "_etl_json"
SIZE = "_etl_size"


def bounded_value(df: Any, value: str) -> Any:
    """`df` (a `text` or `raw` message's columns) as a shared frame whose rows with a `value` over ETL_MAX_RECORD_MB are
    dead letters: `record of N bytes is over the maximum record size ...; payload: its first 1024 characters` (of
    the text, or of the bytes in base64)."""
    return within_record_size(as_shared(df), max_record_bytes(), [value])


def decode_json(df: Any, text: Any, spec: Any, node: Any, kind: str, *, empty: str,
                null: str | None = None, parser: str | None = None) -> Any:
    """``text`` (a string column of ``df``) decoded to ``spec.schema_`` with ERR/PAYLOAD beside it.

    ``empty``: the reason for an empty value; ``null``: for a NULL one (None: the empty reason); ``parser``: the
    physical plan's `parser` engine (json-parse-jvm, from_json; None: json-parse-jvm where the session has etl's
    jar)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    if not spec.schema_:
        raise CompileError(f"{kind} source '{node.id}': format json needs a declared schema", node, "schema",
                           "declare `schema: {column: type}` (or use format: text)", code="E405")
    schema = struct_of(node, spec.schema_)
    full = StructType(list(schema.fields) + [StructField(CORRUPT, StringType(), True)])
    spark = df.sparkSession
    cap = max_record_bytes()
    size = F.octet_length(text)
    big = size > F.lit(cap)
    parsed = df.select(F.when(big, F.substring(text, 1, 1024)).otherwise(text).alias(PAYLOAD),
                       json_struct(spark, F.when(~big | text.isNull(), text), full, CORRUPT, json_parser(spark, parser))
                       .alias(DECODED), size.alias(SIZE))
    j, payload, n = F.col(DECODED), F.col(PAYLOAD), F.col(SIZE)
    over = F.concat(F.lit("record of "), n.cast("string"), F.lit(" " + OVER.format(cap=cap)))
    cases = [(n > F.lit(cap), over)] + ([(payload.isNull(), null)] if null is not None else []) + [(j.isNull(), empty)]
    err = F.when(cases[0][0], cases[0][1])
    for cond, reason in cases[1:]:
        err = err.when(cond, F.lit(reason))
    err = (err.when(j[CORRUPT].isNull(), F.lit(None).cast("string"))
           .when(F.expr(f"try_parse_json({PAYLOAD})").isNull(), F.lit("malformed json"))
           .when(~F.expr(f"startswith(ltrim({PAYLOAD}), '{{')"), F.lit("json value is not an object"))
           .otherwise(F.lit("json does not match the declared schema ("
                            + ", ".join(f"{k} {v}" for k, v in spec.schema_.items()) + ")")))
    return parsed.select(*[j[f.name].alias(f.name) for f in schema.fields], err.alias(ERR), payload)
