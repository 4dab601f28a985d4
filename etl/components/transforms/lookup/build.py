"""lookup: enrich events from a dimension table (a static file or mysql source), broadcast or
in rocksdict stores on local disk (etl/compile/lookups/dimension.py, etl/compile/lookups/store.py)."""

from __future__ import annotations

import contextlib
import functools
import os
from typing import Any
from collections.abc import Iterator

from etl import registry
from etl.compile.context import CompileContext, CompileError
from etl.graph.model import Node

FORMATS = {"csv": "csv", "jsonl": "jsonl", "parquet": "parquet"}


def dimension(ctx: CompileContext, node: Node) -> tuple[Any, Any]:
    """The Dimension of the lookup's table, and its own refresh interval."""
    from etl.compile.lookups.dimension import Dimension, table_schema

    table = ctx.graph.node(node.spec.table)
    t = table.spec
    if t.PATH_FIELD:  # a table in files (a static file source)
        if t.format not in FORMATS:
            raise CompileError(f"lookup '{node.id}': a {t.format} file cannot be a lookup table", node, "table",
                               "use csv, jsonl or parquet", code="E400")
        dim = Dimension(table.id, ctx.resolve(t.path), FORMATS[t.format], t.header, t.delimiter, t.schema_)
        with unreadable_at(node, table):
            table_schema(dim, list(node.spec.on.values()))  # a table that does not read fails here, at its path
        return dim, None
    read = registry.lookup("source", t.type).load_reader()  # a static table's reader (mysql)
    if read is not None:
        reader = functools.partial(read, t, base_dir=ctx.graph.base_dir)
        return Dimension(table.id, columns=t.schema_, reader=reader), t.refresh
    raise CompileError(f"lookup '{node.id}': a {t.type} source cannot be a lookup table", node, "table", code="E400")


@contextlib.contextmanager
def unreadable_at(node: Node, table: Node) -> Iterator[None]:
    """A table file that does not read as a table (etl.compile.lookups.store.TableUnreadable) at start: E400 at
    the table's `path:`."""
    from etl.compile.lookups.store import TableUnreadable

    try:
        yield
    except TableUnreadable as e:
        raise CompileError(f"lookup '{node.id}': table '{table.id}': {e.file} does not read as a {table.spec.format} "
                           f"table: {e.reason}", table, "path",
                           "write the table's file in full (header and rows), or point `path:` at one that is",
                           code="E400") from None


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    from etl.compile.lookups.dimension import LookupError_, lookup_join
    from etl.compile.lookups.store import default_base_dir

    spec = node.spec
    dim, table_refresh = dimension(ctx, node)
    if spec.refresh is None and table_refresh is not None:
        spec = spec.model_copy(update={"refresh": table_refresh})
    try:
        with unreadable_at(node, ctx.graph.node(node.spec.table)):
            res = lookup_join(inputs[0], dim, spec, spark=ctx.spark, store=ctx.engine(node, "store"),
                              base_dir=os.path.join(default_base_dir(), ctx.pipeline, node.id))
    except LookupError_ as e:
        raise CompileError(f"lookup '{node.id}': {e}", node, e.field, code="E310") from None
    ctx.record(node.id, "store", res.engine)
    if res.source is not None and ctx.spark.sparkContext.master.startswith("local"):
        with unreadable_at(node, ctx.graph.node(node.spec.table)):
            res.prepare()  # workers share this host: build the store before the first micro-batch
    if res.refresher is not None:
        res.refresher.start()
    return res.df
