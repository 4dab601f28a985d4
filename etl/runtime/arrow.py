"""Stream a DataFrame's rows to the driver as Arrow record batches, without holding them all.

PySpark's `toArrow()` collects every batch before returning; here batches are
yielded as the JVM sends them (their order across partitions is not kept).
"""

from __future__ import annotations

import contextlib
from typing import Any
from collections.abc import Iterator

import pyarrow as pa


def arrow_schema(df: Any) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(df.schema, timezone="UTC")


def arrow_batches(df: Any) -> Iterator[pa.RecordBatch]:
    """Yield the rows of `df` as Arrow record batches (classic PySpark; Spark Connect falls back)."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:  # Spark Connect
        yield from df.toArrow().to_batches()
        return
    from pyspark.errors.exceptions.captured import unwrap_spark_exception
    from pyspark.serializers import UTF8Deserializer, read_int
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    from pyspark.traceback_utils import SCCallSiteSync
    from pyspark.util import _load_from_socket

    class _Unordered(ArrowStreamSerializer):
        def load_stream(self, stream: Any) -> Iterator[pa.RecordBatch]:
            yield from super().load_stream(stream)
            num = read_int(stream)
            if num == -1:
                raise RuntimeError(UTF8Deserializer().loads(stream))
            for _ in range(num):
                read_int(stream)

    schema = arrow_schema(df)
    with SCCallSiteSync(df._sc):
        port, secret, server = jdf.collectAsArrowToPython()
    try:
        with _load_from_socket((port, secret), _Unordered()) as stream:
            for rb in stream:
                if rb.schema != schema:
                    with contextlib.suppress(pa.ArrowInvalid, NotImplementedError, AttributeError):
                        rb = rb.cast(schema)
                yield rb
    finally:
        with unwrap_spark_exception():
            server.getResult()
