"""Flink / rsqldb built-in functions -> Spark SQL with the peer's meaning, from the table in etl/sql/functions.tsv.

A row is (name, arity, dialect, Spark SQL template, what NULL / out-of-range / empty / invalid arguments give);
the template names the arguments `_1`, `_2`, ... (`_all`: every one), `etl_regex_ok(p)` is "p compiles as a Java
regular expression" (TRUE for a literal, checked per row for a pattern read from the data: Flink gives NULL
where Spark would stop the query), `python:<rule>` a rule of RULES below, `-` an unsupported function (E012
with the row's note as hint). The parser reads every name of the table as a plain call (etl.sql.dialect), so
sqlglot's own Spark mapping never drops an argument (DATE_FORMAT's third). Functions Spark has under the
same name and meaning pass through; any other name is E012 with the closest one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from sqlglot import exp

from etl.diagnostics import Span, did_you_mean
from etl.sql.flink_functions import TIME_UNSUPPORTED, FlinkRow, table as flink_table, unsupported as flink_unsupported
from etl.sql.function_table import FunctionError, fill, names, row_for, spark_call, table

DIALECTS = ("flink", "rsqldb")


def _int_literal(e: exp.Expression) -> int | None:
    if isinstance(e, exp.Literal) and not e.is_string and e.this.lstrip("-").isdigit():
        return int(e.this)
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and e.this.this.isdigit():
        return -int(e.this.this)
    return None


def _to_date(call: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    """TO_DATE(100): days since 1970-01-01 (rsqldb); TO_DATE('2017-09-15'): the date (NULL when it does not read)."""
    integral = _int_literal(a[0]) is not None or (isinstance(a[0], exp.Cast) and a[0].to.is_type(*exp.DataType.INTEGER_TYPES))
    return spark_call("date_from_unix_date", a[0]) if integral else spark_call("try_to_date", a[0])


def _epoch(call: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    """TO_TIMESTAMP_LTZ(epoch, 3): epoch milliseconds; (epoch, 0): seconds."""
    precision = _int_literal(a[1])
    if precision == 3:
        return spark_call("timestamp_millis", a[0])
    if precision == 0:
        return spark_call("timestamp_seconds", a[0])
    raise FunctionError("TO_TIMESTAMP_LTZ(epoch, precision) takes precision 0 (seconds) or 3 (milliseconds)", a[1],
                        "write TO_TIMESTAMP_LTZ(ts, 3) for epoch milliseconds, TO_TIMESTAMP_LTZ(ts, 0) for seconds",
                        "E011")


def _dissect(call: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    from etl.sql.dissect import translate  # etl.grok and etl.dissect: only for a DISSECT call

    return translate(call, a)


def _strict(call: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    """GREATEST / LEAST as Flink: NULL when any argument is NULL (Spark's skip NULLs)."""
    any_null = exp.or_(*[x.copy().is_(exp.null()) for x in a])
    name = call.name.lower() if isinstance(call, exp.Anonymous) else call.key
    return exp.If(this=any_null, true=exp.null(), false=spark_call(name, *[x.copy() for x in a]))


def _verbatim(call: exp.Expression, a: list[exp.Expression]) -> exp.Expression:
    """Spark's function of the same name, as written (LOG10: sqlglot writes LOG(10, x), an ulp off Math.log10)."""
    return spark_call(call.name.lower(), *[x.copy() for x in a])


RULES: dict[str, Callable[[exp.Expression, list[exp.Expression]], exp.Expression]] = {
    "to_date": _to_date, "epoch": _epoch,
    "dissect": _dissect, "strict": _strict, "verbatim": _verbatim,
}

_WINDOWING = ("TUMBLE", "HOP", "SESSION", "CUMULATE", "DESCRIPTOR", "TABLE")


@functools.cache
def spark_functions() -> frozenset[str]:
    """Spark's built-in SQL functions (the names of etl.sql.catalog, written by scripts/spark_functions.py)."""
    from etl.sql.catalog import catalogue

    return frozenset(catalogue())


def call_of(n: exp.Expression) -> tuple[str, list[exp.Expression]] | None:
    """(upper-case name, arguments) of a call the table may rewrite."""
    if isinstance(n, exp.Anonymous):
        return n.name.upper(), list(n.expressions)
    if isinstance(n, exp.Substring):  # SUBSTRING(s FROM i FOR n) has a parser of its own
        return "SUBSTRING", [a for a in (n.this, n.args.get("start"), n.args.get("length")) if a is not None]
    if isinstance(n, exp.FromBase64):
        return "FROM_BASE64", [n.this]
    return None


class Functions:
    """Rewrites calls of Flink / rsqldb built-ins into Spark SQL; an unknown function is an error with a
    did-you-mean. `dialect`: flink (default) or rsqldb (SET 'sql.dialect' = 'rsqldb')."""

    def __init__(self, on_unknown: Callable[[exp.Anonymous], None] | None = None, dialect: str = "flink",
                 at: Callable[[exp.Expression], Span] | None = None,
                 on_division: Callable[[exp.Div], None] | None = None,
                 on_differs: Callable[[exp.Expression, FlinkRow], None] | None = None):
        self.on_unknown = on_unknown
        self.dialect = dialect
        self.at = at  # where a node is in the script: a refused call is a SqlSyntax there (else a FunctionError)
        self.on_division = on_division  # a `/` whose operands' types are unknown (etl.sql.division): W015
        self.on_differs = on_differs  # a call of a function whose meaning differs from Flink's (its row): W015

    def translate(self, node: exp.Expression, types: Mapping[str, str] | None = None) -> exp.Expression:
        """`node` in Spark SQL with Flink's meaning; `types`: lower-case column name -> Spark type of the columns
        it reads, where known (Flink's integer division needs them: etl.sql.division)."""
        from etl.sql.division import divisions

        node = divisions(node, types or {}, self.on_division)
        for n in node.find_all(exp.Expression):  # the calls as written (a rewrite's own calls are flagged seen)
            row = None if n.meta.get("flink_seen") else differs_row(n)
            n.meta["flink_seen"] = True
            if row is not None and self.on_differs is not None:
                self.on_differs(n, row)

        def fix(n: exp.Expression) -> exp.Expression:
            if isinstance(n, (exp.Like, exp.ILike)):
                return _flink_like(n)
            refused = _refused_construct(n)
            if refused is not None:
                return self.refuse(FunctionError(refused[0], n, refused[1], refused[2]))
            if isinstance(n, exp.Bracket) and isinstance(n.this, exp.Column) and not n.this.table \
                    and n.this.name.upper() == "MAP" and len(n.expressions) % 2 == 0:  # Flink's MAP[k1, v1, ...]
                return spark_call("map", *[e.transform(fix, copy=False) for e in n.expressions])
            if isinstance(n, exp.Bracket) and len(n.expressions) == 1 and not n.meta.get("flink_index"):
                # Flink's array[i] is 1-based (Spark's 0-based), map[k] a key: try_element_at is both, NULL when
                # out of range as in Flink (Spark's [i] stops the query under ANSI)
                out = spark_call("try_element_at", n.this.transform(fix, copy=False),  # its children: not visited after
                          n.expressions[0].transform(fix, copy=False))        # the node was replaced
                out.meta.update(n.meta, flink_index=True)
                return out
            call = call_of(n)
            if call is None:
                return n
            name, args = call
            flink = flink_unsupported().get(name) if name not in names() else None
            if flink is not None:  # a Flink built-in etl does not run (etl/sql/flink_functions.tsv)
                return self.refuse(FunctionError(f"function {name} is not supported", n, flink.note))
            if name in names():
                out = self.rewrite(n, name, args)
                for m in out.walk():
                    m.meta["flink_seen"] = True
                out.meta.update(n.meta)
                return out
            if isinstance(n, exp.Anonymous):
                windowing = name in _WINDOWING or name.split("_")[0] in _WINDOWING[:4]
                if not windowing and name.lower() not in spark_functions() and self.on_unknown is not None:
                    self.on_unknown(n)
            return n

        return node.transform(fix, copy=False)

    def rewrite(self, n: exp.Expression, name: str, args: list[exp.Expression]) -> exp.Expression:
        try:
            return self._rewrite(n, name, args)
        except FunctionError as e:
            return self.refuse(e)

    def refuse(self, e: FunctionError) -> exp.Expression:
        """Raise the refusal: a SqlSyntax at the node's position in the script when known."""
        if self.at is None:
            raise e
        from etl.sql.script import SqlSyntax

        raise SqlSyntax(e.message, self.at(e.node), e.hint, e.code) from None

    def _rewrite(self, n: exp.Expression, name: str, args: list[exp.Expression]) -> exp.Expression:
        star = next((a for a in args if isinstance(a, exp.Star)), None)
        if star is not None:  # Flink reads * only in COUNT(*); Spark would pass every column as an argument
            raise FunctionError(f"{name} takes values, not *", n, f"name the column: {name}(col)")
        row = row_for(name, len(args), self.dialect)
        if row is None:
            arities = sorted({r.arity for r in table() if r.name == name})
            raise FunctionError(f"{name} takes {' or '.join(arities)} argument{'s' if arities != ['1'] else ''}, "
                                f"not {len(args)}", n, f"docs/reference/sql-functions.md: {name}")
        if row.spark == "-":
            raise FunctionError(f"function {name} is not supported", n, row.note)
        if row.spark.startswith("python:"):
            return RULES[row.spark.split(":", 1)[1]](n, args)
        return fill(row.spark, args)


# Flink constructs etl does not run (etl/sql/flink_functions.tsv): (message, hint, code); sqlglot would pass them
# on to Spark, which reads some of them otherwise (TIME '12:00' as a TIMESTAMP) or refuses them at run
_CONSTRUCTS: dict[type, tuple[str, str, str]] = {
    exp.SimilarTo: ("SIMILAR TO is not supported", "write RLIKE with a Java regular expression", "E012"),
    exp.Overlaps: ("OVERLAPS is not supported", "compare the bounds: a_start < b_end AND b_start < a_end", "E012"),
    exp.Exists: ("EXISTS (sub-query) is not supported", "join the table (a lookup) instead", "E011"),
    exp.JSONObject: ("function JSON_OBJECT is not supported", "write to_json(named_struct('k', v, ...))", "E012"),
    exp.Grouping: ("GROUPING() is not supported", "GROUPING SETS over a window TVF give a typed NULL for a set's "
                   "missing keys: test the key IS NULL", "E011"),
    exp.GroupingId: ("GROUPING_ID() is not supported", "GROUPING SETS over a window TVF give a typed NULL for a "
                     "set's missing keys: test the key IS NULL", "E011"),
}


def _refused_construct(n: exp.Expression) -> tuple[str, str, str] | None:
    if type(n) in _CONSTRUCTS:
        return _CONSTRUCTS[type(n)]
    if isinstance(n, (exp.Floor, exp.Ceil)) and n.args.get("to") is not None:
        return (f"{'FLOOR' if isinstance(n, exp.Floor) else 'CEIL'}(timepoint TO unit) is not supported",
                "write date_trunc('MINUTE', ts) for FLOOR(ts TO MINUTE)", "E012")
    if isinstance(n, exp.Is) and isinstance(n.expression, exp.JSON):
        return "IS JSON is not supported", "write get_json_object(s, '$') IS NOT NULL", "E012"
    if isinstance(n, exp.In) and n.args.get("query") is not None:
        return "IN (sub-query) is not supported", "join the table (a lookup) instead", "E011"
    if isinstance(n, exp.Tuple) and not isinstance(n.parent, (exp.In, exp.Tuple)):
        return "a row constructor (v1, v2) is not supported", "write named_struct('a', v1, 'b', v2)", "E012"
    if isinstance(n, (exp.Cast, exp.TryCast)) and n.to.this in (exp.DataType.Type.TIME, exp.DataType.Type.TIMETZ):
        return (f"the TIME type is not supported ({TIME_UNSUPPORTED})",
                "keep the time of day as text ('12:00:00') or use a TIMESTAMP", "E011")
    return None


@functools.cache
def _differs() -> dict[object, FlinkRow]:
    """The calls of the Flink functions the table marks `differs` (Spark's meaning kept): sqlglot's node class or,
    for a plain call, its upper-case name -> the row. GROUPING has Flink's meaning where etl takes it (E011
    elsewhere: etl.sql.grouping)."""
    import sqlglot

    from etl.sql.dialect import DIALECT

    out: dict[object, FlinkRow] = {}
    for r in flink_table():
        for name in r.names if r.status == "differs" and "GROUPING" not in r.names else ():
            text = r.example if r.example.upper().startswith(name) else f"{name}(x)"
            call = next(n for n in sqlglot.parse_one(f"SELECT {text}", dialect=DIALECT).walk()
                        if isinstance(n, exp.Func))
            out[name if isinstance(call, exp.Anonymous) else type(call)] = r
    return out


def differs_row(n: exp.Expression) -> FlinkRow | None:
    """The row of a call of a function whose meaning in etl differs from Flink's (None: any other node)."""
    if isinstance(n, exp.Anonymous):
        return _differs().get(n.name.upper())
    return _differs().get(type(n)) if isinstance(n, exp.Func) else None


def _flink_like(n: exp.Expression) -> exp.Expression:
    """Flink's LIKE without ESCAPE has no escape character ('C:\\%' is C, colon, backslash, anything); Spark's and
    the filter rules' escape with a backslash: a literal pattern gets its backslashes doubled, any other pattern
    an ESCAPE character it cannot hold (U+0000). Done once per node (translate may see a node again)."""
    if isinstance(n.parent, exp.Escape) or n.meta.get("flink_like"):
        return n
    n.meta["flink_like"] = True
    pat = n.expression
    if isinstance(pat, exp.Literal) and pat.is_string:
        if "\\" in pat.this:
            n.set("expression", exp.Literal.string(pat.this.replace("\\", "\\\\")))
        return n
    return exp.Escape(this=n, expression=exp.Literal.string("\x00"))


def unknown_hint(name: str) -> str:
    known = sorted(spark_functions() | {k.lower() for k in names()})
    return did_you_mean(name.lower(), known) or ("a Spark SQL built-in function or an rsqldb one "
                                                  "(docs/reference/sql-functions.md)")


def readme_table() -> str:
    """The reference's table of the functions etl rewrites (docs/reference/sql-functions.md; generated from
    functions.tsv, a test keeps it current)."""
    lines = ["| function | arguments | dialect | Spark SQL | NULL, out of range, empty, invalid |", "|---|---|---|---|---|"]
    for r in table():
        spark = {"-": "not supported (E012)", "python:to_date": "`date_from_unix_date(_1)` for an integer, else "
                 "`try_to_date(_1)`", "python:epoch": "`timestamp_millis(_1)` / `timestamp_seconds(_1)`",
                 "python:dissect": "etl/jvm/Dissect.java's scan via `reflect`, a `named_struct` of the fields",
                 "python:strict": "`IF(_1 IS NULL OR ..., NULL, f(_all))`",
                 "python:verbatim": "Spark's function of this name, as written"}.get(
            r.spark, f"`{r.spark}`")
        cells = [f"`{r.name}`", r.arity, r.dialect if r.dialect != "*" else "", spark, r.note]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
