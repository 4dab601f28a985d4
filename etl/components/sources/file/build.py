"""file source: jsonl, csv, text lines or parquet files in a folder watched for new files.

A jsonl/csv source without `schema` is read with the columns validate inferred from a sample of its files
(etl.load.infer, kept in the graph, shown by etl explain); where validate could read no sample (a remote path,
no file yet) Spark infers them from every file when the run starts.

Malformed jsonl/csv lines are not dropped: they go to dead letters with the
line as payload (PERMISSIVE mode with a corrupt-record column). jsonl is read by
etl/jvm/JsonLinesFormat.java where the session has etl's jar: Spark's own reader
and parser with the same rows, without the copy Spark makes of every row when
a corrupt-record column is asked for.

Every line is checked before it is parsed (etl/jvm/BoundedLines.java, with etl's
jar: jsonl, and text by TextLinesFormat.java): a line over ETL_MAX_RECORD_MB is a
dead letter with its first 1,024 bytes and its size, never held whole in memory
(csv and parquet rows, and Spark's own text and json readers' lines: after they are
read, by etl.compile.deadletter.within_record_size);
a line that is not valid UTF-8 is one with its bytes in base64; a jsonl line
with a lone surrogate's escape (`\ud800`) is one too. Spark's JSON parser takes
strings up to the same size (its maxStringLen, 20 MB by default).
"""

from __future__ import annotations

import os
from typing import Any

from etl import settings
from etl.connectors.api import (ERR, PAYLOAD, CompileContext, CompileError, as_shared, from_shared,
                                register_data_source, with_event_time, within_record_size)
from etl.graph.model import Node

CORRUPT = "_etl_corrupt"
JSON_LINES = "etl.jvm.JsonLinesFormat"  # Spark's json source, its malformed-line check cheaper (etl/jvm)
TEXT_LINES = "etl.jvm.TextLinesFormat"  # Spark's text source with each line checked (etl/jvm)
REJECT = "_etl_reject"  # why BoundedLines.java rejected a line (NULL: it did not)


def max_record_bytes() -> int:
    return settings.current().max_record_mb * 1024 * 1024


def checked(reader: Any) -> Any:
    """`reader` with etl's line checks (JsonLinesFormat, TextLinesFormat) and Spark's JSON strings as long."""
    cap = str(max_record_bytes())
    return reader.option("etlMaxRecordBytes", cap).option("etlRejectColumn", REJECT).option("maxStringLen", cap)


def struct_of(node: Node, columns: dict[str, str]) -> Any:
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    fields = []
    for name, typ in columns.items():
        try:
            fields.append(StructField(name, _parse_datatype_string(typ), True))
        except Exception as e:  # noqa: BLE001 - Spark's parser raises several types
            raise CompileError(f"source '{node.id}': unknown type {typ!r} for column '{name}' ({e})", node,
                               "schema", code="E311") from None
    return StructType(fields)


def _infer(ctx: CompileContext, node: Node, path: str) -> Any:
    """Spark's inference over every file (where validate could not read a sample: a remote path, no file yet)."""
    spec = node.spec
    reader = ctx.spark.read
    try:
        if spec.format == "csv":
            df = reader.options(header=str(spec.header).lower(), sep=spec.delimiter, inferSchema="true").csv(path)
        else:
            df = reader.json(path)
        schema = df.schema
    except Exception as e:  # noqa: BLE001 - AnalysisException for an empty folder and friends
        raise CompileError(f"source '{node.id}': cannot infer the columns of {path} ({str(e).splitlines()[0]})",
                           node, "path", "declare `schema: {column: type}`", code="E405") from None
    from pyspark.sql.types import StructType

    fields = [f for f in schema.fields if f.name != "_corrupt_record"]
    if not fields:
        raise CompileError(f"source '{node.id}': no files to infer columns from in {path}", node, "path",
                           "declare `schema: {column: type}`", code="E405")
    return StructType(fields)


def build(ctx: CompileContext, node: Node) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    spec = node.spec
    path = ctx.resolve(spec.path)
    if not os.path.exists(path) and not any(ch in path for ch in "*?["):
        raise CompileError(f"source '{node.id}': {path} does not exist", node, "path",
                           "create the folder (new files are picked up as they appear)", code="E405")
    if spec.tail:  # lines by file identity and offset (etl.components.sources.file.tail)
        from etl.components.sources.file.tail import NAME, TailDataSource

        register_data_source(ctx.spark, TailDataSource)
        df = (ctx.spark.readStream.format(NAME).option("path", path).option("source", node.id)
              .option("column", spec.text_column).option("reject", REJECT)
              .option("maxRecordBytes", str(max_record_bytes())).load())
        line = F.col(f"`{spec.text_column}`")
        shared = df.select(line, F.col(REJECT).alias(ERR), line.alias(PAYLOAD))  # as the text-jvm reader's
        return from_shared(_event_time(shared, node), ctx.pipeline, node.id)
    reader = ctx.spark.readStream
    if os.path.isfile(path):  # a streaming file source reads folders: watch the file's folder for that name
        reader = reader.option("pathGlobFilter", _glob_escape(os.path.basename(path)))
        path = os.path.dirname(path)
    if spec.max_files_per_trigger and spec.max_bytes_per_trigger:
        raise CompileError(f"source '{node.id}': give max_files_per_trigger or max_bytes_per_trigger, not both",
                           node, "max_bytes_per_trigger", code="E104")
    if spec.max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", spec.max_files_per_trigger)
    if spec.max_bytes_per_trigger:
        reader = reader.option("maxBytesPerTrigger", int(spec.max_bytes_per_trigger))
    if spec.format == "text" and ctx.built_with(node, "lines") == "text-jvm":
        df = checked(reader).schema(f"value string, {REJECT} string").format(TEXT_LINES).load(path)
        shared = df.select(F.col("value").alias(spec.text_column), F.col(REJECT).alias(ERR), F.col("value").alias(PAYLOAD))
        return from_shared(_event_time(shared, node), ctx.pipeline, node.id)
    if spec.format in ("text", "parquet"):
        if spec.format == "text":
            df = reader.format("text").load(path).withColumnRenamed("value", spec.text_column)
        else:
            df = reader.schema(struct_of(node, spec.schema_)).parquet(path)
        shared = within_record_size(as_shared(df), max_record_bytes())  # (and the horizon's dead letters)
        return from_shared(_event_time(shared, node), ctx.pipeline, node.id)
    sampled = ctx.graph.inferred.get(node.id)  # the columns validate inferred (etl.load.infer): run reads those
    columns = spec.schema_ or (sampled.columns if sampled is not None else None)
    schema = struct_of(node, columns) if columns else _infer(ctx, node, path)
    full = StructType(list(schema.fields) + [StructField(CORRUPT, StringType(), True)])
    reader = reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT)
    label = "malformed json line" if spec.format == "jsonl" else "malformed csv line"
    err = F.when(F.col(CORRUPT).isNotNull(), F.lit(label))
    if spec.format == "csv":
        df = reader.schema(full).options(header=str(spec.header).lower(), sep=spec.delimiter).csv(path)
    elif ctx.built_with(node, "reader") == "jsonl-jvm":  # JsonLinesFormat: Spark's reader, without its per-row copy
        full = StructType(list(full.fields) + [StructField(REJECT, StringType(), True)])
        df = checked(reader.schema(full)).format(JSON_LINES).load(path)
        err = F.coalesce(F.col(REJECT), err)
    else:
        df = reader.schema(full).option("maxStringLen", str(max_record_bytes())).json(path)
    if spec.format == "csv" or REJECT not in df.columns:  # (etl/jvm/BoundedLines.java checked jsonl-jvm's lines)
        shared = guarded_rows(df, schema.fields, label)
    else:
        shared = df.select(*[F.col(f.name) for f in schema.fields], err.alias(ERR), F.col(CORRUPT).alias(PAYLOAD))
    shared = _event_time(shared, node)
    return from_shared(shared, ctx.pipeline, node.id)


def guarded_rows(df: Any, fields: list, label: str) -> Any:
    """The rows of Spark's csv or json reader (PERMISSIVE, the malformed line in CORRUPT) as the source shares them:
    `fields`, ERR (`label` for a malformed line; a row over ETL_MAX_RECORD_MB: the record-size guard's reason) and
    PAYLOAD, the two reasons one CASE (within_record_size's `failed`). bench/json_read.py --size-guard reads these."""
    from pyspark.sql import functions as F

    shared = df.select(*[F.col(f.name) for f in fields], F.lit(None).cast("string").alias(ERR),
                       F.col(CORRUPT).alias(PAYLOAD))
    return within_record_size(shared, max_record_bytes(), failed=[(F.col(PAYLOAD).isNotNull(), label)])


def _glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]{}\\" else c for c in name)


def _event_time(df: Any, node: Node) -> Any:
    et = node.spec.event_time
    return with_event_time(df, node, et) if et is not None else df
