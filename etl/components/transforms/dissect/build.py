"""dissect: Logstash's delimiter parser, the scan in the JVM and the fields set by Spark expressions.

Each mapping's line is scanned once (etl/jvm/Dissect.java, one static call in
Spark's generated code: `dissect-jvm`; without etl's jar, etl.dissect's
reference in a Python UDF: `dissect-python`) into an array of the pattern's
values, NULL when it does not match. The fields are then set from that array
as Logstash sets them (etl.dissect.apply is the reference): normal fields,
then appended ones in order of their `/n` (joined by the delimiter before each,
or `append_separator`), then indirect ones (into one map column). A later
mapping may dissect a field an earlier one set. `convert_datatype` converts
last (Dissect.integer/decimal: Logstash's BigDecimal rules).

A line that does not match (or is NULL or empty), and a value that does not
convert, is a failure: dead letter (default), dropped, or kept (`on_error`;
kept, a failed mapping sets nothing, as in Logstash).
"""

from __future__ import annotations

from typing import Any

from etl.compile import jvm
from etl.compile.context import ERR, PAYLOAD, Built, CompileContext, CompileError
from etl.compile.deadletter import fence, from_shared
from etl.dissect import (CONVERSIONS, DissectError, Dissection, convert, field_path, outputs, parse_mappings, sets,
                         spec_bytes)
from etl.graph.model import Node


def dissections(node: Node, columns: dict[str, str]) -> list[tuple[str, Dissection]]:
    """The node's mappings, checked against the input's columns (validate reports the same errors at their
    positions: etl/components/transforms/dissect/hooks.py)."""
    spec = node.spec
    try:
        out = parse_mappings(dict(spec.mapping))
        outputs(out, columns, dict(spec.convert_datatype), spec.indirect_field)
    except DissectError as e:
        raise CompileError(f"dissect '{node.id}': {e.message}", node, "mapping", e.hint, code="E305") from None
    return out


def values(spark: Any, line: Any, d: Dissection, engine: str) -> Any:
    """array<string>: the value of each field of `d` on `line` (pattern order), NULL when it does not match."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StringType

    if engine == "dissect-jvm":
        return jvm.static_call(spark, "etl.jvm.Dissect", "values", ArrayType(StringType()), line,
                               F.lit(bytearray(spec_bytes(d))))
    return _python_values(d)(line)


def _python_values(d: Dissection) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StringType

    return F.udf(lambda s: None if s is None else d.values(s), ArrayType(StringType()), useArrow=True)


def converted(spark: Any, value: Any, to: str, engine: str) -> Any:
    """`value` (a string column) converted as convert_datatype `to` (int|float): NULL when it does not convert."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    if engine == "dissect-jvm":
        text = jvm.static_call(spark, "etl.jvm.Dissect", "integer" if to == "int" else "decimal", StringType(), value)
        return text.try_cast(CONVERSIONS[to])

    return F.udf(lambda s: None if s is None else convert(s, to), CONVERSIONS[to], useArrow=True)(value)


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Built:
    from pyspark.sql import functions as F

    spec = node.spec
    df = inputs[0]
    mappings = dissections(node, {f.name: f.dataType.simpleString() for f in df.schema.fields})
    staged, out, err, payload = dissected(df, mappings, dict(spec.convert_datatype), spec.append_separator,
                                          spec.indirect_field, ctx.built_with(node, "dissect"))
    gone = set(spec.remove_field)
    keep = [F.col(c) for c in df.columns if c not in out and c not in gone]
    shared = staged.select(*keep, *[c.alias(n) for n, c in out.items() if n not in gone], err.alias(ERR),
                           F.when(err.isNotNull(), payload).alias(PAYLOAD))
    return from_shared(shared, ctx.pipeline, node.id, spec.on_error)


def dissected(df: Any, mappings: list[tuple[str, Dissection]], convert_datatype: dict[str, str],
              append_separator: str | None, indirect_field: str, engine: str,
              tag: str = "") -> tuple[Any, dict[str, Any], Any, Any]:
    """(df plus the scans' columns, {output column: its value}, the failure's reason (NULL: none), the first
    mapping's line). The mappings are checked (etl.dissect.outputs); `tag` keeps the scans' columns of several
    calls apart (tests)."""
    from pyspark.sql import functions as F

    ev: dict[tuple[str, ...], Any] = {(c,): F.col(c) for c in df.columns}  # the event: path -> its value
    written: list[tuple[str, ...]] = []  # paths the dissection sets, in order
    pairs: list[tuple[Any, Any]] = []  # indirect fields: (key, value), in order
    err: Any = None
    payload: Any = None
    staged = df
    for k, (source, d) in enumerate(mappings):
        line = ev[field_path(source)].cast("string")
        name = f"_etl_dissect{tag}{k}"
        staged = staged.withColumn(name, fence(values(staged.sparkSession, line, d, engine)))
        vals = F.col(name)
        ok = vals.isNotNull()
        why = F.when(line.isNull(), F.lit(f"field '{source}' is null")).when(
            line == "", F.lit(f"field '{source}' is empty")).when(~ok, F.lit("no match for dissect pattern"))
        err = why if err is None else F.coalesce(err, why)
        payload = line if payload is None else payload
        for f in sets(d):
            v = vals.getItem(f.index)
            old = ev.get(f.path)
            if f.kind == "indirect":  # the key: the field's value in the event, else another field's of the name
                alt = other_value_col(d, vals, f)
                pairs.append((F.when(ok, alt if old is None else F.coalesce(old.cast("string"), alt)), v))
                continue
            if f.kind == "append":
                sep = f.join if append_separator is None else append_separator
                if old is not None:
                    v = F.concat(F.coalesce(F.concat(old.cast("string"), F.lit(sep)), F.lit("")), v)
            ev[f.path] = F.when(ok, v) if old is None else F.when(ok, v).otherwise(old)
            if f.path not in written:
                written.append(f.path)
    for field, to in convert_datatype.items():
        path = field_path(field)
        raw = ev[path]
        got = converted(staged.sparkSession, raw, to, engine)
        ev[path] = got
        err = F.coalesce(err, F.when(raw.isNotNull() & got.isNull(), F.concat(
            F.lit(f"field '{field}': cannot convert '"), raw, F.lit(f"' to {to}"))))

    tree: dict[str, Any] = {}
    for path in written:
        if path[0] == "@metadata":  # Logstash's @metadata is not part of the event
            continue
        node_ = tree
        for p in path[:-1]:
            node_ = node_.setdefault(p, {})
        node_[path[-1]] = ev[path]

    def column(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return F.struct(*[column(v).alias(k) for k, v in value.items()])

    out = {n: column(v) for n, v in tree.items()}
    if pairs:
        out[indirect_field] = pair_map(pairs)
    return staged, out, err, payload


def other_value_col(d: Dissection, vals: Any, f: Any) -> Any:
    """etl.dissect.other_value as a column: the value of the first other field named as `f`, else ''."""
    from pyspark.sql import functions as F

    for g in d.fields:
        if g.index != f.index and g.name == f.name:
            return vals.getItem(g.index)
    return F.lit("")


def pair_map(pairs: list[tuple[Any, Any]]) -> Any:
    """map<string,string> of the indirect fields' (key, value) pairs whose key is not empty (NULL: none), a later
    pair replacing an earlier one of the same key (Logstash sets the field again)."""
    from pyspark.sql import functions as F

    entries = F.filter(F.array(*[F.struct(k.alias("k"), v.alias("v")) for k, v in pairs]),
                       lambda e: e["k"].isNotNull() & (e["k"] != ""))
    if len(pairs) == 1:
        m = F.map_from_entries(entries)
    else:
        m = F.aggregate(entries, F.create_map().cast("map<string,string>"),
                        lambda acc, e: F.map_concat(F.map_filter(acc, lambda k, _: k != e["k"]),
                                                    F.create_map(e["k"], e["v"])))
    return F.when(F.size(m) > 0, m)
