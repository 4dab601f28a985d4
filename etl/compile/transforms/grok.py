"""grok: one compiled regex in the JVM, every field captured in a single pass, no Python UDF.

The pattern is expanded by `etl.grok.expand` into a java.util.regex with one
plain group per field. One `regexp_replace` rewrites a matching line into
MARK + group1 SEP group2 SEP ... (and leaves a non-matching line as it is), a
`split` cuts it into fields; `:int`/`:float` fields are converted with
try_cast. Lines that contain MARK or SEP themselves (control characters, rare
in text) take a slower exact path: one `regexp_extract` per field.

A line that does not match, and a field that does not convert, is a failure:
dead letter (default), dropped, or kept with NULL fields (`on_error`). An empty
capture is NULL (as with regexp_extract, an empty and a missing group look alike).
"""

from __future__ import annotations

from typing import Any

from etl.compile.context import ERR, PAYLOAD, Built, CompileContext, CompileError
from etl.compile.deadletter import from_shared
from etl.graph.model import Node

SEP = "\u0001"
MARK = "\u0002"
SPARK_TYPES = {"string": "string", "int": "int", "float": "float"}  # as etl.graph.columns says


def expand(node: Node) -> Any:
    from etl.grok import GrokError, expand as grok_expand

    try:
        return grok_expand(node.spec.pattern, dict(node.spec.custom_patterns) or None)
    except GrokError as e:
        hint = f"did you mean {', '.join(e.suggestions)}?" if getattr(e, "suggestions", ()) else None
        raise CompileError(f"grok '{node.id}': {e}", node, "pattern", hint, code="E302") from None


def with_captures(df: Any, line: Any, g: Any, name: str) -> Any:
    """`df` plus column `name`: array<string> of every group (one per GrokField), NULL when no match.

    Two projections on purpose: the regex runs once per line in the first; the second
    only reads its result. Both are fenced (see `fence`) so that the optimizer neither
    merges them nor copies the regex into a filter pushed below them. (Measured: checking
    for MARK/SEP up front is cheaper than validating the split afterwards.)"""
    from pyspark.sql import functions as F

    from etl.compile.deadletter import fence

    n = len(g.fields)
    search = "(?s)^.*?(?:" + g.java_regex + ").*$"
    replacement = MARK + SEP.join(f"${f.group}" for f in g.fields)
    special = F.contains(line, F.lit(SEP)) | F.contains(line, F.lit(MARK))
    exact = F.when(line.rlike(g.java_regex),
                   F.array(*[F.regexp_extract(line, g.java_regex, f.group) for f in g.fields]))
    packed = F.when(~special, F.regexp_replace(line, F.lit(search), F.lit(replacement)))
    staged = df.withColumns({f"{name}_p": fence(packed), f"{name}_x": F.when(special, exact)})
    p = F.col(f"{name}_p")
    fast = F.when(F.startswith(p, F.lit(MARK)), F.split(F.substring(p, 2, 1 << 30), SEP, n))
    return staged.withColumn(name, fence(F.coalesce(F.col(f"{name}_x"), fast))).drop(f"{name}_p", f"{name}_x")


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Built:
    from pyspark.sql import functions as F

    spec = node.spec
    df = inputs[0]
    if spec.field not in df.columns:
        raise CompileError(f"grok '{node.id}': input has no column '{spec.field}'", node, "field",
                           f"columns: {', '.join(df.columns)}", code="E310")
    g = expand(node)
    line = F.col(spec.field)
    groups = "_etl_groups"
    staged = with_captures(df, line, g, groups)
    arr = F.col(groups)

    values: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    for name, typ in g.columns:
        idx = [i for i, f in enumerate(g.fields) if f.name == name]
        parts = [F.nullif(arr.getItem(i), F.lit("")) for i in idx]
        text = parts[0] if len(parts) == 1 else F.coalesce(*parts)
        raw[name] = text
        values[name] = text if typ == "string" else text.try_cast(SPARK_TYPES[typ])

    err = F.when(line.isNull(), F.lit(f"field '{spec.field}' is null")).when(
        arr.isNull(), F.lit("no match for grok pattern"))
    for name, typ in g.columns:
        if typ != "string":
            err = err.when(raw[name].isNotNull() & values[name].isNull(),
                           F.concat(F.lit(f"field '{name}': cannot convert '"), raw[name], F.lit(f"' to {typ}")))
    names = {name for name, _ in g.columns}
    keep = [F.col(c) for c in df.columns if c not in names and (spec.keep_original or c != spec.field)]
    shared = staged.select(*keep, *[values[n].alias(n) for n, _ in g.columns],
                           err.alias(ERR), F.when(err.isNotNull(), line).alias(PAYLOAD))
    return from_shared(shared, ctx.pipeline, node.id, spec.on_error)
