"""The file source's spec: json, csv, text or parquet files of a folder, read once each or tailed."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from etl.registry import component
from etl.spec.base import Size, SourceBase


@component("source", "file", builder="etl.components.sources.file.build:build")
class FileSource(SourceBase):
    """Files in a folder (or one file); new files are picked up as they appear."""

    SQL_CONNECTORS: ClassVar[tuple[str, ...]] = ("file", "filesystem")
    SQL_OPTIONS: ClassVar[str | None] = "etl.components.sources.file.sql:map_options"

    type: Literal["file"]
    path: str = Field(description="file or folder; relative paths are resolved from the pipeline file")
    format: Literal["jsonl", "csv", "text", "parquet"] = Field(default="jsonl",
        description="jsonl, csv, text (a row per line) or parquet")
    header: bool = Field(default=True, description="csv: first line holds column names")
    delimiter: str = Field(default=",", max_length=1, description="csv: the field separator (one character)")
    max_files_per_trigger: int | None = Field(default=None, ge=1, description="new files read per micro-batch at most")
    max_bytes_per_trigger: Size | None = Field(default=None,
                                               description="bytes of new files read per micro-batch at most")
    text_column: str = Field(default="line", description="text: name of the column holding each line")
    static: bool = Field(default=False, description="read once as a table (for lookup joins)")
    tail: bool = Field(default=False, description="text: follow the files by identity (device, inode) and offset, "
                                                  "as tail -F: appended lines are read; renamed, truncated and "
                                                  "recreated files are followed (docs/pipeline-format.md: what "
                                                  "the file source guarantees)")
    PATH_FIELD: ClassVar[str | None] = "path"
    LOOKUP_TABLE: ClassVar[bool] = True

    def engine_aspects(self) -> tuple[str, ...]:
        return {"jsonl": ("reader",), "text": ("lines",)}.get(self.format, ())

    def dead_letters(self, engines: dict[str, str], undecided: bool) -> bool:
        # a record over ETL_MAX_RECORD_MB (etl/jvm/BoundedLines.java, etl.compile.deadletter's within_record_size),
        # a line that is not UTF-8, malformed json or csv, an event time beyond the horizon
        return True

    def is_static(self) -> bool:
        return self.static

    def files_read_once(self) -> str | None:
        return None if self.static or self.tail else self.path

    def explain_lines(self) -> list[str]:
        tail = ["tail: files followed by (device, inode) and byte offset"] if self.tail else []
        return super().explain_lines() + tail

    @model_validator(mode="after")
    def _tail_reads_text(self) -> FileSource:
        if self.tail and (self.format != "text" or self.static):
            raise ValueError("tail: true follows text files (format: text, not static)")
        if self.tail and (self.max_files_per_trigger or self.max_bytes_per_trigger):
            raise ValueError("tail: true reads what was appended to every file: no max_files_per_trigger or "
                             "max_bytes_per_trigger")
        return self

    @model_validator(mode="after")
    def _parquet_needs_schema(self) -> FileSource:
        if self.format == "parquet" and self.schema_ is None and not self.static:
            raise ValueError("a streaming parquet source needs a declared schema")
        return self

    def declared_columns(self) -> dict[str, str] | None:
        if self.format == "text":
            return {self.text_column: "string"}
        return self.schema_

    def sampled_columns(self, cx: Any, node: Any) -> dict[str, str] | None:
        if self.format in ("jsonl", "csv") and not self.static:  # a stream's columns, as Spark infers them at run
            return cx.inferred_columns(node)
        return None

    def lookup_table_problem(self) -> tuple[str, str] | None:
        if self.format == "text":
            return "a text file cannot be a lookup table", "use format csv, jsonl or parquet"
        return None
