"""DISSECT(field, 'pattern') in SQL scripts: Logstash's dissect of one text value, a struct of its fields.

The pattern (a string literal) is checked when the script is read (E305 at its position) and the call becomes
Spark SQL: the line is scanned by the dissect transform's own scanner (etl/jvm/Dissect.java, its `json`, through
Spark's reflect()) into the values of the pattern's fields, and the struct is built from them as the transform
sets fields (etl.dissect.apply is the reference): normal fields, then appended ones in order of their `/n`, joined
by the delimiter before each (or a space). A line that does not match, an empty one or NULL gives NULL. The
value stands alone: an appended field starts from its first value (no column of the row is read), and
indirect fields (`%{&key}`), whose names are data, are the dissect transform's only (E305 here).
"""

from __future__ import annotations

import base64

from sqlglot import exp

from etl.dissect import DissectError, outputs, parse, sets, spec_bytes
from etl.grok import quote as _quote
from etl.sql.function_table import FunctionError, fill

SOURCE = "\x00"  # the value's name in etl.dissect.apply (no field can have it)


def translate(call: exp.Expression, args: list[exp.Expression]) -> exp.Expression:
    """The Spark SQL of DISSECT(field, 'pattern')."""
    pattern = args[1]
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise FunctionError("DISSECT's pattern must be a string literal", pattern,
                            "write the pattern in the call: DISSECT(line, '%{ts} %{level} %{msg}')", "E011")
    try:
        d = parse(pattern.this)
        types = outputs([(SOURCE, d)], {SOURCE: "string"}, {}, "indirect")
        if any(f.kind == "indirect" for f in d.fields):
            raise DissectError("indirect fields (%{&key}) are the dissect transform's: a struct's fields are fixed",
                               next(f.offset for f in d.fields if f.kind == "indirect"),
                               "use the dissect transform of a YAML pipeline (its `indirect_field` map)")
    except DissectError as e:
        raise FunctionError(f"DISSECT pattern: {e.message}", pattern, e.hint, "E305") from None
    values: dict[tuple[str, ...], str] = {}

    def lit(text: str) -> str:
        return exp.Literal.string(text).sql(dialect="spark")

    for f in sets(d):
        v = f"_v[{f.index}]"
        old = values.get(f.path)
        values[f.path] = v if f.kind == "normal" or old is None else f"concat({old}, {lit(f.join)}, {v})"
    tree: dict = {}
    for path, v in values.items():
        if path[0] == "@metadata":
            continue
        node = tree
        for p in path[:-1]:
            node = node.setdefault(p, {})
        node[path[-1]] = v

    def struct(node: dict) -> str:
        return "named_struct(" + ", ".join(f"{lit(k)}, {struct(v) if isinstance(v, dict) else v}"
                                           for k, v in node.items()) + ")"

    if not tree:
        raise FunctionError("DISSECT pattern sets no field (every one is skipped)", pattern,
                            "name the fields to keep: %{name}", "E305")
    body = struct(tree)
    spec = base64.b64encode(spec_bytes(d)).decode("ascii")
    ddl = "STRUCT<" + ", ".join(f"{_quote(k)}: {v}" for k, v in types.items()) + ">"  # its type for
    template = (f"CAST(transform(array(from_json(reflect('etl.jvm.Dissect', 'json', _1, '{spec}'), "  # validate
                f"'array<string>')), _v -> IF(_v IS NULL, NULL, {body}))[0] AS {ddl})")
    return fill(template, [args[0]])
