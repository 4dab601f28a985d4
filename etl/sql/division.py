"""Flink's `/` of two integers is an integer: `7 / 2` is 3, `-7 / 2` is -3 (truncated toward zero, as Java), the
type the wider of the two (INT / INT is INT, BIGINT / INT BIGINT); Spark's `/` is a DOUBLE (3.5).

`divisions(node, types, warn)` rewrites each `a / b` whose operands are both of an integer type (a column of a
declared type, an integer literal, a CAST, an integer-typed expression) into `CAST(a DIV b AS <wider type>)`:
Spark's DIV truncates toward zero and gives NULL for a NULL operand, as Flink; a zero divisor stops the query under
ANSI as it fails Flink's job. A DECIMAL or DOUBLE operand keeps Spark's `/` (the same value and, for DECIMAL, the same
precision rule as Flink's). An operand whose type is unknown here keeps Spark's `/` and `warn(node)` is called
(W015 at the `/`). The types are Flink's: SUM of an INT is INT, COUNT BIGINT (the DIV's cast gives Flink's type).
"""

from __future__ import annotations

from typing import Callable, Mapping

from sqlglot import exp

INTEGERS = ("tinyint", "smallint", "int", "bigint")
_ALIASES = {"byte": "tinyint", "short": "smallint", "integer": "int", "long": "bigint"}
DECIMAL = "decimal"
OTHER = "other"  # a known type that is neither an integer nor a DECIMAL (DOUBLE, STRING, NULL ...)


def canonical(spark_type: str) -> str:
    """An integer type's name (tinyint, smallint, int, bigint), DECIMAL or OTHER."""
    base = spark_type.split("(")[0].strip().lower()
    base = _ALIASES.get(base, base)
    return base if base in INTEGERS else DECIMAL if base in ("decimal", "dec", "numeric") else OTHER


def _wider(a: str, b: str) -> str:
    return INTEGERS[max(INTEGERS.index(a), INTEGERS.index(b))]


def _combine(types: list[str | None]) -> str | None:
    if OTHER in types:
        return OTHER
    if not types or None in types:
        return None
    if DECIMAL in types:
        return DECIMAL
    out = types[0]
    for t in types[1:]:
        out = _wider(out, t)  # type: ignore[arg-type]
    return out


def flink_type(n: exp.Expression, types: Mapping[str, str]) -> str | None:
    """What Flink types `n` as, as far as division cares: an integer type's name, DECIMAL, OTHER or None (unknown).
    `types`: lower-case column name -> Spark type of the query's input."""
    if isinstance(n, (exp.Paren, exp.Neg, exp.Alias)):
        return flink_type(n.this, types)
    if isinstance(n, exp.Column):
        t = types.get(n.name.lower()) if not n.table and not isinstance(n.this, exp.Star) else None
        return canonical(t) if t else None
    if isinstance(n, exp.Literal):
        if n.is_string or not n.this.isdigit():
            return DECIMAL if not n.is_string and "e" not in n.this.lower() else OTHER  # 7.0; 1e2 is a DOUBLE
        v = int(n.this)
        return "int" if v <= 2**31 - 1 else "bigint" if v <= 2**63 - 1 else DECIMAL
    if isinstance(n, (exp.Null, exp.Boolean)):
        return OTHER
    if isinstance(n, exp.Cast):  # TryCast too
        return canonical(n.to.sql(dialect="spark"))
    if isinstance(n, (exp.Add, exp.Sub, exp.Mul, exp.Mod, exp.Div)):
        return _combine([flink_type(n.this, types), flink_type(n.expression, types)])
    if isinstance(n, exp.Count):
        return "bigint"
    if isinstance(n, (exp.Sum, exp.Min, exp.Max, exp.Avg)):
        return flink_type(n.this, types)
    if isinstance(n, exp.Case):
        branches = [i.args.get("true") for i in n.args.get("ifs") or []] + [n.args.get("default")]
        return _combine([flink_type(b, types) for b in branches if b is not None and not isinstance(b, exp.Null)])
    if isinstance(n, exp.Coalesce):
        return _combine([flink_type(a, types) for a in [n.this, *n.expressions]])
    if isinstance(n, exp.Func):
        return _call_type(n, types)
    return None


def _call_type(n: exp.Func, types: Mapping[str, str]) -> str | None:
    """The type of a call of one of Spark's functions, from its catalogue (etl.sql.catalog): a fixed one
    (CHAR_LENGTH: INT), or its first argument's where Spark keeps an integer argument's type (ABS)."""
    from etl.sql.catalog import lookup

    fn = lookup(n.name if isinstance(n, exp.Anonymous) else n.sql_name())
    if fn is None:
        return None
    if fn.returns and not fn.returns.startswith("$"):
        return canonical(fn.returns)
    first = (n.expressions or [None])[0] if isinstance(n, exp.Anonymous) else n.this
    t = flink_type(first, types) if isinstance(first, exp.Expression) else None
    by_first = dict(fn.by_class).get(1, {})
    keeps = fn.returns == "$1" or by_first.get("l" if t == "bigint" else "i") == "$"
    return t if keeps else None  # ABS(x) has x's type


def divisions(node: exp.Expression, types: Mapping[str, str],
              warn: Callable[[exp.Div], None] | None) -> exp.Expression:
    """`node` with Flink's meaning of each `/` (see the module's text) and of AVG of an integer (Flink's is the
    argument's type, the sum divided by the count as integers: AVG of 1 and 2 is 1, Spark's 1.5); each is looked at
    once."""
    for avg in list(node.find_all(exp.Avg)):
        t = flink_type(avg.this, types) if not isinstance(avg.this, exp.Distinct) else None
        if t in INTEGERS:
            new = exp.Cast(this=exp.IntDiv(this=exp.Sum(this=avg.this.copy()), expression=exp.Count(
                this=avg.this.copy())), to=exp.DataType.build(t))  # NULL when no value (SUM's NULL DIV 0)
            new.meta.update(avg.meta)
            if avg is node:
                node = new
            else:
                avg.replace(new)
    for d in reversed(list(node.find_all(exp.Div, bfs=False))):  # the inner divisions first
        if d.meta.get("flink_div"):
            continue
        a, b = flink_type(d.this, types), flink_type(d.expression, types)
        if a in INTEGERS and b in INTEGERS:
            new = exp.Cast(this=exp.IntDiv(this=d.this, expression=d.expression),
                           to=exp.DataType.build(_wider(a, b)))  # type: ignore[arg-type]
            new.meta.update(d.meta)
            if d is node:
                node = new
            else:
                d.replace(new)
            continue
        d.meta["flink_div"] = True
        if not {a, b} & {OTHER, DECIMAL} and warn is not None:
            warn(d)
        for side, t, other in (("this", a, b), ("expression", b, a)):  # DECIMAL / 2: Flink's 2 is an INT,
            lit = d.args[side]  # DECIMAL(10, 0) in the quotient's type (its scale), Spark's a DECIMAL(1, 0)
            if t in INTEGERS and other == DECIMAL and isinstance(lit.this if isinstance(lit, exp.Neg) else lit,
                                                                 exp.Literal):
                d.set(side, exp.Cast(this=lit, to=exp.DataType.build(t)))
    return node


def known_types(nodes: list[exp.Expression], names: list[str], types: Mapping[str, str]) -> dict[str, str]:
    """name -> type of the expressions (already in Spark SQL) whose type is known: an integer type's name, DECIMAL
    or OTHER."""
    out = {}
    for name, n in zip(names, nodes):
        t = flink_type(n, types)
        if t is not None:
            out[name] = t
    return out


def aggregate_types(keys: list[str], aggs: list[dict], types: Mapping[str, str]) -> dict[str, str]:
    """The known types of a GROUP BY's columns: its keys' and its aggregates' (COUNT is BIGINT; SUM, MIN, MAX have
    their argument's type in Flink)."""
    out = {k: types[k.lower()] for k in keys if k.lower() in types}
    for a in aggs:
        field = str(a.get("field", "")).lower()
        if a["fn"] == "count" and not a.get("distinct"):
            out[a["as"]] = "bigint"
        elif a["fn"] in ("sum", "min", "max") and field in types:
            out[a["as"]] = types[field]
    return out
