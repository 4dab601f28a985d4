"""generator source: synthetic events from the `fields` spec, seeded and deterministic.

Event i is a pure function of (seed, i): a restart replays exactly the same
events, and Spark checkpoints the offsets (the event index) like any
replayable source. `generate_at` makes the events of an array of indices as
one Arrow record batch with numpy (no per-row Python for numbers; strings
through Arrow compute).

* `count`: stop after that many events (works with `--once`: AvailableNow);
* `rate`: events per second, in event time (event i happens at
  start_time + i / rate) and in wall-clock pacing of an unbounded run;
  without `rate`, event i happens at start_time + i milliseconds;
* `rows_per_batch`: events per micro-batch at most. An unbounded generator
  under `--once` produces one micro-batch.

Two streams of indices, with the same offsets (`{"index": N}`, the next event's index), limits, pacing and
partitions, so a checkpoint of either resumes with the other (build.py picks one, the physical plan's `offsets`
engine): etl/jvm/GeneratorIndex.java, whose offsets the JVM keeps, its indices turned into events by
`events_of` (mapInArrow in Spark's shared Python workers); without etl's jar, the PySpark Python streaming data
source here (`etl_generator`), for which Spark keeps a Python process per query (its "streaming source runner",
about 100 MB) for the offsets and partitions.

This module is what Spark's Python processes import (that runner, and the workers that read or map): numpy,
pyarrow, pyspark's data source API and etl.spec.generated only. The builder (build.py) imports the compile layer;
measured in a fresh interpreter, importing this module from there instead made each such process about 20 MB
larger (etl.compile, the graph, the plan, pydantic's models).
"""

from __future__ import annotations

import json
import math
import string
import time
import zlib
from typing import Any
from collections.abc import Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from etl.spec.generated import field_order, parse_time

NAME = "etl_generator"
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = z + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def field_key(seed: int, name: str) -> np.uint64:
    base = np.array([(seed * 1_000_003) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64) ^ np.uint64(zlib.crc32(name.encode()))
    return _mix(base)[0]


def hashes(seed: int, name: str, idx: np.ndarray) -> np.ndarray:
    """64 random bits per event index, independent per (seed, field name)."""
    with np.errstate(over="ignore"):
        return _mix(idx * _GOLDEN + field_key(seed, name))


def uniform(seed: int, name: str, idx: np.ndarray) -> np.ndarray:
    return (hashes(seed, name, idx) >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def spec_options(spec: Any) -> dict[str, Any]:
    """The JSON handed to the data source (options are strings)."""
    return {
        "fields": {n: f.model_dump(mode="json", exclude_none=True) for n, f in spec.fields.items()},
        "count": spec.count, "rate": spec.rate, "seed": spec.seed, "start_time": spec.start_time,
        "rows_per_batch": spec.rows_per_batch, "columns": spec.declared_columns(),
    }


def ddl(opts: dict[str, Any]) -> str:
    """The events' columns and types, as Spark's DDL."""
    return ", ".join(f"`{n}` {t}" for n, t in opts["columns"].items())


def generate(opts: dict[str, Any], lo: int, hi: int, arrow_schema: pa.Schema | None = None) -> pa.RecordBatch:
    """Events [lo, hi) as one record batch, columns in declaration order."""
    return generate_at(opts, np.arange(lo, hi, dtype=np.uint64), arrow_schema)


def events_of(opts: dict[str, Any], arrow_schema: pa.Schema,
              batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow's function over GeneratorIndex.java's rows: each batch of event indices (its one column) as the
    batch of their events."""
    for b in batches:
        yield generate_at(opts, b.column(0).to_numpy().astype(np.uint64), arrow_schema)


def generate_at(opts: dict[str, Any], idx: np.ndarray, arrow_schema: pa.Schema | None = None) -> pa.RecordBatch:
    """The events of the indices `idx` (uint64) as one record batch, columns in declaration order (else the
    columns and types of `arrow_schema`)."""
    fields: dict[str, dict] = opts["fields"]
    seed = int(opts["seed"])
    cols_types: dict[str, str] = opts["columns"]
    n = len(idx)
    rate = opts.get("rate") or 1000.0
    start_us = int(parse_time(opts["start_time"]).timestamp() * 1_000_000)
    out: dict[str, pa.Array] = {}
    for name in field_order(fields):
        f = fields[name]
        typ = cols_types.get(name, "string")
        if "choice" in f:
            choices = f["choice"]
            w = np.asarray(f.get("weights") or [1.0] * len(choices), dtype=np.float64)
            cum = np.cumsum(w / w.sum())
            k = np.minimum(np.searchsorted(cum, uniform(seed, name, idx), side="right"), len(choices) - 1)
            values = pa.array(choices if typ == "bigint" else [None if c is None else str(c) for c in choices],
                              type=pa.int64() if typ == "bigint" else pa.string())
            arr = values.take(pa.array(k))
        elif "int_range" in f:
            a, b = f["int_range"]
            h, span = hashes(seed, name, idx), b - a + 1
            off = h if span == 1 << 64 else h % np.uint64(span)  # [min, max] of int64: every value of the hash
            with np.errstate(over="ignore"):  # a + off, in [a, b], computed modulo 2**64
                arr = pa.array((off + np.uint64(a & 0xFFFFFFFFFFFFFFFF)).view(np.int64))
        elif "float_range" in f:
            a, b = f["float_range"]
            arr = pa.array(a + uniform(seed, name, idx) * (b - a))
        elif "sequence" in f:
            arr = pa.array(idx.astype(np.int64) + np.int64(f["sequence"]))
        elif "ipv4" in f:
            h = hashes(seed, name, idx)
            octet = [(h >> np.uint64(s)) & np.uint64(255) for s in (24, 16, 8, 0)]
            octet[0] = octet[0] % np.uint64(223) + np.uint64(1)
            octet[3] = octet[3] % np.uint64(254) + np.uint64(1)
            arr = pc.binary_join_element_wise(*[pc.cast(pa.array(o.astype(np.int64)), pa.string()) for o in octet], ".")
        elif "timestamp" in f:
            us = start_us + np.floor(idx.astype(np.float64) * (1_000_000.0 / rate)).astype(np.int64)
            arr = pa.array(us, type=pa.timestamp("us", tz="UTC"))
        elif "template" in f:
            parts: list[Any] = []
            for literal, ref, _, _ in string.Formatter().parse(f["template"]):
                if literal:
                    parts.append(pa.array([literal] * n, pa.string()))
                if ref:
                    parts.append(pc.cast(out[ref], pa.string()))
            arr = pc.binary_join_element_wise(*parts, "") if parts else pa.array([""] * n, pa.string())
        else:  # const
            v = f.get("const")
            arr = pa.array([v] * n) if typ == "bigint" else pa.array([None if v is None else str(v)] * n, pa.string())
        out[name] = arr
    names = list(fields)
    batch = pa.RecordBatch.from_arrays([out[n] for n in names], names=names)
    if arrow_schema is not None:
        batch = batch.select(arrow_schema.names).cast(arrow_schema)
    return batch


class _Range(InputPartition):
    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi


def _split(lo: int, hi: int, parts: int) -> list[_Range]:
    if hi <= lo:
        return []
    parts = max(1, min(parts, math.ceil((hi - lo) / 10_000)))
    step = math.ceil((hi - lo) / parts)
    return [_Range(a, min(hi, a + step)) for a in range(lo, hi, step)]


def _arrow_schema(schema: Any) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


class GeneratorStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str], schema: Any):
        self.opts = json.loads(options["spec"])
        self.parallelism = int(options.get("partitions", "2"))
        self.schema = schema
        self.count = self.opts.get("count")
        self.rate = self.opts.get("rate")
        self.per_batch = int(self.opts["rows_per_batch"])
        self.t0: float | None = None
        self.base = 0
        self.available_now = False
        self.target: int | None = None

    def initialOffset(self) -> dict:
        return {"index": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now = True

    def _limit(self, start: int) -> int:
        if self.available_now:
            if self.target is None:
                self.target = self.count if self.count is not None else start + self.per_batch
            return self.target
        end = self.count if self.count is not None else None
        if self.rate:
            if self.t0 is None:
                self.t0, self.base = time.monotonic(), start
            paced = self.base + int(self.rate * (time.monotonic() - self.t0))
            end = paced if end is None else min(end, paced)
        return start + self.per_batch if end is None else end

    def latestOffset(self, start: dict, limit: Any) -> dict:
        s = int(start["index"])
        end = self._limit(s)
        if isinstance(limit, ReadMaxRows):
            end = min(end, s + limit.max_rows)
        elif not isinstance(limit, ReadAllAvailable):
            end = min(end, s + self.per_batch)
        return {"index": max(s, end)}

    def getDefaultReadLimit(self) -> Any:
        return ReadMaxRows(self.per_batch)

    def partitions(self, start: dict, end: dict) -> list[_Range]:
        return _split(int(start["index"]), int(end["index"]), self.parallelism)

    def read(self, partition: _Range) -> Iterator[pa.RecordBatch]:  # type: ignore[override]  # the partitions it made
        yield generate(self.opts, partition.lo, partition.hi, _arrow_schema(self.schema))

    def commit(self, end: dict) -> None:
        pass


class GeneratorBatchReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: Any):
        self.opts = json.loads(options["spec"])
        self.parallelism = int(options.get("partitions", "2"))
        self.schema = schema

    def partitions(self) -> list[_Range]:
        return _split(0, int(self.opts.get("count") or 0), self.parallelism) or [_Range(0, 0)]

    def read(self, partition: _Range) -> Iterator[pa.RecordBatch]:  # type: ignore[override]  # the partitions it made
        yield generate(self.opts, partition.lo, partition.hi, _arrow_schema(self.schema))


class GeneratorDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return ddl(json.loads(self.options["spec"]))

    def streamReader(self, schema: Any) -> GeneratorStreamReader:
        return GeneratorStreamReader(self.options, schema)

    def reader(self, schema: Any) -> GeneratorBatchReader:
        return GeneratorBatchReader(self.options, schema)
