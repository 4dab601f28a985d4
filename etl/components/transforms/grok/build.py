"""grok: one compiled regex in the JVM, every field captured in a single pass, no Python UDF.

The pattern is expanded by `etl.grok.expand` into a java.util.regex with one
plain group per field. The physical plan names one of three engines
(etl.physical.engines, aspect `captures`): with etl's jar on the class path
(etl/compile/jvm.py) one static call per line (etl/jvm/Grok.java) searches the
line and returns its captures as an array of strings, guided by the pattern's
matcher program (etl/grokvm: `grok-program`) or by java.util.regex alone
(`java-regex`, e.g. with ETL_GROK_PROGRAM=off); without it (`spark-regexp`),
one `regexp_replace` rewrites a
matching line into MARK + group1 SEP group2 SEP ... (and leaves a non-matching
line as it is) and a `split` cuts it into fields (lines that contain MARK or SEP
themselves, control characters rare in text, take a slower exact path: one
`regexp_extract` per field). Both give the captures of the same regex, searched
as Logstash reads grok (LOGSTASH). `:int`/`:float` fields are converted with try_cast.

A line that does not match, and a field that does not convert, is a failure:
dead letter (default), dropped, or kept with NULL fields (`on_error`); with `target`
(SQL's GROK) the captures are the fields of one struct column, NULL for a line that
does not match, which is no failure. An empty capture is NULL, unless
`keep_empty_captures` (string fields: ''); a group that did not take part is NULL.
So is a line on which java.util.regex runs past its step budget (it backtracks:
etl/jvm/CountedText.java), with its own reason, GAVE_UP. The three answers of a line
(etl/jvm/Grok.java) are told apart by the captures array alone: NULL (no match), one
element per field (matched; a pattern without captures gives an empty array, and matches
like any other), one element more (gave up).
"""

from __future__ import annotations

import functools
import struct
from typing import Any

from etl.compile import jvm
from etl.compile.context import ERR, PAYLOAD, Built, CompileContext, CompileError
from etl.compile.deadletter import fence, from_shared
from etl.graph.model import Node
from etl.grok import SPARK_TYPES, GrokError, columns_of, expand as grok_expand, markers, under

# Logstash's reading of grok (Ruby's Regexp::MULTILINE) in java.util.regex's inline flags: '.' takes a newline (s),
# ^ $ are line anchors (m), only \n ends a line (d: UNIX_LINES); etl/jvm/Grok.java compiles with the same FLAGS
LOGSTASH = "(?smd)"
SEP = "\u0001"
MARK = "\u0002"
# the dead-letter reason of a line on which java.util.regex ran past its step budget (etl/jvm/CountedText.java)
GAVE_UP = ("grok pattern gave up: java.util.regex read more than 100000 + 100 x length characters of the line "
           "(catastrophic backtracking)")


def expand(node: Node) -> Any:
    try:
        return grok_expand(node.spec.regex_source(), dict(node.spec.custom_patterns) or None, node.spec.patterns,
                           node.spec.named_captures_only)
    except GrokError as e:
        hint = f"did you mean {', '.join(e.suggestions)}?" if getattr(e, "suggestions", ()) else None
        raise CompileError(f"grok '{node.id}': {e}", node, "pattern", hint, code="E302") from None


def spec_bytes(g: Any, program: bool = True) -> bytes:
    """The pattern as etl/jvm/Grok.java reads it (its docstring has the layout), with its matcher program
    (etl/grokvm) when `program` and there is one (else java.util.regex answers alone)."""
    rx = g.java_regex.encode("utf-8")
    groups = [f.group for f in g.fields]
    prog = (program_of(g) if program else None) or b""
    return (b"EGS1" + struct.pack("<I", len(rx)) + rx + struct.pack(f"<H{len(groups)}H", len(groups), *groups)
            + struct.pack("<I", len(prog)) + prog)


def program_of(g: Any) -> bytes | None:
    """The serialized matcher program of a pattern (etl/grokvm), or None (program_reason says why)."""
    from etl.grokvm.cache import program_bytes

    return program_bytes(g.python_regex)[0]


def program_reason(g: Any) -> str | None:
    from etl.grokvm.cache import program_bytes

    return program_bytes(g.python_regex)[1]


def with_captures(df: Any, line: Any, g: Any, name: str, engine: str = "grok-program") -> Any:
    """`df` plus column `name`: array<string> of every group (one per GrokField), NULL when no match, one
    element more than there are fields when the regex gave up (etl/jvm/Grok.java).
    `engine`: grok-program | java-regex (etl/jvm/Grok.java) | spark-regexp (`with_captures_sql`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StringType

    if engine == "spark-regexp":
        return with_captures_sql(df, line, g, name)
    found = jvm.static_call(df.sparkSession, "etl.jvm.Grok", "captures", ArrayType(StringType()), line,
                            F.lit(bytearray(spec_bytes(g, program=engine == "grok-program"))))
    return df.withColumn(name, fence(found))


def with_captures_sql(df: Any, line: Any, g: Any, name: str) -> Any:
    """with_captures in Spark SQL functions alone (a session without etl's jar).

    Two projections on purpose: the regex runs once per line in the first; the second
    only reads its result. Both are fenced (see `fence`) so that the optimizer neither
    merges them nor copies the regex into a filter pushed below them. (Measured: checking
    for MARK/SEP up front is cheaper than validating the split afterwards.)"""
    from pyspark.sql import functions as F

    n = len(g.fields)
    rx = LOGSTASH + g.java_regex
    if n == 0:  # matched or not, nothing to cut (split would give one empty element)
        return df.withColumn(name, fence(F.when(line.rlike(rx), F.array().cast("array<string>"))))
    search = LOGSTASH + "\\A.*?(?:" + g.java_regex + ").*\\z"  # \A \z: the whole line, whatever m does
    replacement = MARK + SEP.join(f"${f.group}" for f in g.fields)
    special = F.contains(line, F.lit(SEP)) | F.contains(line, F.lit(MARK))
    exact = F.when(line.rlike(rx), F.array(*[F.regexp_extract(line, rx, f.group) for f in g.fields]))
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
    engine = ctx.built_with(node, "captures")
    if engine == "spark-regexp" and (spec.keep_empty_captures or markers(g)):
        key = "keep_empty_captures" if spec.keep_empty_captures else "break_on_match"
        raise CompileError(f"grok '{node.id}': {key} needs etl's jar (Grok.java): Spark's regexp functions give '' "
                           "for a group that did not take part", node, key, "build etl's jar (docs/jvm.md)",
                           code="E302")
    staged = with_captures(df, line, g, groups, engine)
    found = F.col(groups)
    gave_up = F.size(found) == len(g.fields) + 1  # one element more: the regex gave up (etl/jvm/Grok.java)
    hits = [found.getItem(i).isNotNull() for i in markers(g)]  # several patterns, break_on_match false:
    # the line matches when one of them did (etl.grok.combine)
    arr = F.when(~gave_up & functools.reduce(lambda a, b: a | b, hits), found) if hits else F.when(~gave_up, found)

    stay = {f.name: f.dataType.simpleString() for f in df.schema.fields
            if spec.keep_original or f.name != spec.field}
    try:  # validate reports these (etl/spec/transform_hooks.py)
        leaves = g.outputs({} if spec.target else stay, tuple(spec.overwrite))
    except GrokError as e:
        raise CompileError(f"grok '{node.id}': {e}", node, "pattern", e.hint, code="E302") from None
    if spec.target:  # every capture a field of one struct column; the input's columns are not touched
        leaves = under(leaves, spec.target)
        stay = {k: v for k, v in stay.items() if k != spec.target}
    # an empty capture is no value (Logstash), unless keep_empty_captures (then '' for a string field)
    raw = [arr.getItem(i) if spec.keep_empty_captures and f.type == "string" else F.nullif(arr.getItem(i), F.lit(""))
           for i, f in enumerate(g.fields)]
    conv = [r if f.type == "string" else r.try_cast(SPARK_TYPES[f.type]) for r, f in zip(raw, g.fields, strict=True)]

    tree: dict[str, Any] = {}
    for leaf in leaves:
        node_ = tree
        for k in leaf.path[:-1]:
            node_ = node_.setdefault(k, {})
        node_[leaf.path[-1]] = _leaf_value(leaf, [conv[i] for i in leaf.indices], stay)

    def column(value: Any, top: bool = False) -> Any:
        if not isinstance(value, dict):
            return value
        parts = {k: column(v) for k, v in value.items()}
        whole = F.struct(*[p.alias(k) for k, p in parts.items()])
        if top:  # the target: a struct when the line matched (its fields may all be NULL), else NULL
            return F.when(arr.isNotNull(), whole)
        return F.when(F.coalesce(*[p.isNotNull() for p in parts.values()], F.lit(False)), whole)

    err = F.when(gave_up, F.lit(GAVE_UP))
    if not spec.target:  # with a target, a NULL line or one that does not match gives a NULL target
        err = F.when(line.isNull(), F.lit(f"field '{spec.field}' is null")).when(
            gave_up, F.lit(GAVE_UP)).when(arr.isNull(), F.lit("no match for grok pattern"))
    for f, r, c in zip(g.fields, raw, conv, strict=True):
        if f.type != "string":
            err = err.when(r.isNotNull() & c.isNull(),
                           F.concat(F.lit(f"field '{f.name}': cannot convert '"), r, F.lit(f"' to {f.type}")))
    out = columns_of(leaves)
    keep = [F.col(c) for c in df.columns if c not in out and c in stay]
    shared = staged.select(*keep, *[column(tree[n], top=n == spec.target).alias(n) for n in out],
                           err.alias(ERR), F.when(err.isNotNull(), line).alias(PAYLOAD))
    return from_shared(shared, ctx.pipeline, node.id, spec.on_error)


def _leaf_value(leaf: Any, got: list[Any], stay: dict[str, str]) -> Any:
    """The column of one output field from its captures `got`, by the field's mode (etl.grok's Leaf.mode)."""
    from pyspark.sql import functions as F

    old = F.col(leaf.path[0])
    if leaf.mode in ("first", "replace"):
        return got[0] if len(got) == 1 else F.coalesce(*got)
    if leaf.mode == "last":
        return F.coalesce(*reversed(got), *([old] if stay.get(leaf.path[0]) == leaf.spark_type else []))
    if leaf.mode == "append":
        got = [x.cast("string") for x in got]
        start = F.array(old) if stay[leaf.path[0]] == "string" else F.coalesce(old, F.array())
        items = F.concat(start, F.array(*got))
    else:
        items = F.array(*got)
    items = F.filter(items, lambda x: x.isNotNull())
    return F.when(F.size(items) > 0, items)
