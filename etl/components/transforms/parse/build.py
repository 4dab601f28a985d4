"""parse: a text column as json (etl/jvm/JsonParse.java or from_json: the physical plan's `parser`), kv (str_to_map) or csv (from_csv) into typed columns.

Malformed text, and a value that does not convert to its declared type, make
the row a failure (dead letter by default; `on_error`). A NULL field is a
failure too ("field is null"): nothing is dropped silently.
"""

from __future__ import annotations

import re
from typing import Any

from etl.compile.context import ERR, PAYLOAD, Built, CompileContext, CompileError
from etl.compile.deadletter import fence, from_shared
from etl.compile.json_parse import json_struct
from etl.graph.model import Node

CORRUPT = "_etl_corrupt"


def _ddl(node: Node, schema: dict[str, str], extra: bool) -> Any:
    from pyspark.sql.types import StringType, StructField, StructType, _parse_datatype_string

    fields = []
    for name, typ in schema.items():
        try:
            dt = _parse_datatype_string(typ)
        except Exception as e:  # noqa: BLE001 - Spark's parser raises several types
            raise CompileError(f"parse '{node.id}': unknown type {typ!r} for column '{name}' ({e})", node, "schema",
                               code="E311") from None
        fields.append(StructField(name, dt, True))
    if extra:
        fields.append(StructField(CORRUPT, StringType(), True))
    return StructType(fields)


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Built:
    from pyspark.sql import functions as F

    spec = node.spec
    df = inputs[0]
    if spec.field not in df.columns:
        raise CompileError(f"parse '{node.id}': input has no column '{spec.field}'", node, "field",
                           f"columns: {', '.join(df.columns)}", code="E310")
    text = F.col(spec.field)
    names = list(spec.schema_)
    null_err = F.when(text.isNull(), F.lit(f"field '{spec.field}' is null"))
    if spec.format in ("json", "csv"):
        schema = _ddl(node, spec.schema_, extra=True)
        opts = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
        if spec.format == "json":
            parsed = json_struct(ctx.spark, text, schema, CORRUPT, ctx.built_with(node, "parser"))
        else:
            parsed = F.from_csv(text, schema.simpleString(), {**opts, "sep": spec.delimiter})
        staged = df.withColumn("_etl_parsed", fence(parsed))
        p = F.col("_etl_parsed")
        cols = {n: p.getField(n) for n in names}
        err = null_err.when(p.getField(CORRUPT).isNotNull(), F.lit(f"malformed {spec.format}"))
        if spec.format == "json":  # a JSON value that is not an object parses to NULL
            err = err.when(p.isNull(), F.lit("malformed json: not an object"))
    else:
        _ddl(node, spec.schema_, extra=False)
        pair, kv = re.escape(spec.kv.pair_sep), re.escape(spec.kv.kv_sep)
        m = F.expr(f"map_filter(str_to_map(`{spec.field}`, '{_sql(pair)}', '{_sql(kv)}'), (k, v) -> k != '')")
        staged = df.withColumn("_etl_parsed", fence(m))
        p = F.col("_etl_parsed")
        err = null_err.when(F.exists(F.map_values(p), lambda v: v.isNull()),
                            F.lit(f"malformed key-value pair (no '{spec.kv.kv_sep}')"))
        cols = {}
        for n, t in spec.schema_.items():
            v = p.getItem(n)
            cols[n] = v if t == "string" else v.try_cast(t)
            if t != "string":
                err = err.when(v.isNotNull() & cols[n].isNull(),
                               F.concat(F.lit(f"field '{n}': cannot convert '"), v, F.lit(f"' to {t}")))
    keep = [F.col(c) for c in df.columns if c not in names and (spec.keep_original or c != spec.field)]
    shared = staged.select(*keep, *[cols[n].alias(n) for n in names], err.alias(ERR),
                           F.when(err.isNotNull(), text).alias(PAYLOAD))
    return from_shared(shared, ctx.pipeline, node.id, spec.on_error)


def _sql(s: str) -> str:
    return s.replace("\\", "\\\\").replace("'", "\\'")
