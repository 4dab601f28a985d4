"""The file sink's spec (jsonl, csv, parquet files, written exactly once per micro-batch) and the default dead-letter
sink built on it."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from etl.registry import component
from etl.spec.base import SinkBase


@component("sink", "file", builder="etl.components.sinks.file.build:FileSink")
class FileSink(SinkBase):
    """Files per micro-batch, staged by Spark's writer and published by the driver (Hadoop FileSystem API)."""

    SQL_CONNECTORS: ClassVar[tuple[str, ...]] = ("file", "filesystem")
    SQL_OPTIONS: ClassVar[str | None] = "etl.components.sinks.file.sql:map_options"

    type: Literal["file"]
    path: str = Field(description="output folder: a local path (relative paths are resolved from the pipeline "
                                  "file) or any Hadoop URI (file://, hdfs://, s3a:// with its connector)")
    format: Literal["jsonl", "csv", "parquet"] = Field(default="jsonl", description="jsonl, csv or parquet")

    SPARK_WRITER: ClassVar[str] = (
        "Spark's own file writer on the executors into a staging folder through the Hadoop FileSystem of the "
        "path (any Hadoop URI); the driver publishes the batch (manifest, renames)")
    PATH_FIELD: ClassVar[str | None] = "path"

    def engine_aspects(self) -> tuple[str, ...]:
        return ("json",) if self.format == "jsonl" else ()  # how jsonl lines are rendered

    def is_idempotent(self) -> bool:
        return True

    def output_key(self) -> str | None:
        return f"path:{self.path}"


def default_dead_letter(path: str) -> FileSink:
    """The dead-letter sink of a pipeline without `dead_letter:`: jsonl files in `path` (the runtime's folder is
    beside the checkpoint; the physical planner only reads the type and format)."""
    return FileSink(id="dead_letter", type="file", path=path, format="jsonl")
