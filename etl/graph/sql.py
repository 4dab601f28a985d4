"""Spark SQL expressions as the graph sees them: parse, column references, a light type guess.

Parsing uses sqlglot's spark dialect, imported on first use only (it costs
~0.1 s to import). Results are cached per expression text.
"""

from __future__ import annotations

import functools
import re
from collections import deque
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from etl.graph.containers import container_type, element
from etl.graph.types import struct_fields
from etl.sql.catalog import lookup, spark_calls, type_class
from etl.sql.operators import FUNCTIONS as OPERATOR_FUNCTIONS, OPERATOR_CLASSES, REFUSED, result

_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LITERAL_WORDS = frozenset({"true", "false", "null"})  # a bare word that is a value, not a column
_SQLGLOT_ARITY = "The number of provided arguments"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NESTS = re.compile(r"[(\[{~!-]|\b(?:NOT|CASE)\b", re.I)  # what may open a level (etl.load.nesting)


@dataclass(frozen=True)
class SqlError:
    message: str
    line: int = 1  # 1-based, inside the expression text
    col: int = 1
    hint: str | None = None  # set when it parses but goes past one of etl's limits (etl.load.nesting)


@dataclass(frozen=True)
class Parsed:
    """A parsed expression: the root column names it reads, an output name, a type guess."""

    columns: tuple[tuple[str, int], ...] = ()  # (root column name, 0-based offset in the text or -1)
    name: str | None = None  # output column name (alias, or the column itself)
    type: str = "unknown"
    star: bool = False  # `*` (select all)
    bare: bool = False  # a plain column reference without alias
    error: SqlError | None = None
    expr: object = None  # the sqlglot expression (None for the fast path)
    names: tuple[str, ...] = ()  # a generator's output columns: `inline(rows) AS (a, b)`
    paths: tuple[tuple[tuple[str, ...], int], ...] = ()  # nested references `a.b.c` (parts, offset of a or -1)


def _exp():
    from sqlglot import exp

    return exp


def _error_of(e: Exception, text: str) -> SqlError:
    errs = getattr(e, "errors", None) or []
    if errs:
        first = errs[0]
        desc = _ANSI.sub("", str(first.get("description") or e)).strip()
        if desc.startswith("Required keyword"):
            desc = "incomplete expression: an operand is missing"
        line = int(first.get("line") or 1)
        col = int(first.get("col") or 1)
        return SqlError(f"{desc}", line, max(col, 1))
    msg = _ANSI.sub("", str(e)).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return SqlError(msg)


@functools.lru_cache(maxsize=8192)
def parse(text: str) -> Parsed:
    """Parse one expression (a condition, a derived value, or `expr AS alias`)."""
    stripped = text.strip()
    if _PLAIN_NAME.match(stripped) and stripped.lower() not in _LITERAL_WORDS:  # fast path: a bare column name
        return Parsed(((stripped, text.find(stripped)),), stripped, "unknown", bare=True)
    if not stripped:
        return Parsed(error=SqlError("empty expression"))
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import ErrorLevel, ParseError, SqlglotError

    from etl.load import nesting
    from etl.sql.dialect import too_deep

    try:
        spark = Dialect.get_or_raise("spark")
        tokens = spark.tokenize(stripped)
        deep = too_deep(tokens) if len(_NESTS.findall(stripped)) > nesting.MAX_NESTING else None
        if deep is not None:
            at = deep.start
            line = stripped.count("\n", 0, at) + 1
            return Parsed(error=SqlError(nesting.message("the expression is"), line, at - stripped.rfind("\n", 0, at),
                                         nesting.HINT))
        try:
            trees = [t for t in spark.parser().parse(tokens, stripped) if t is not None]
        except ParseError as e:
            if not all(str(x.get("description", "")).startswith(_SQLGLOT_ARITY) or _empty_call(x, stripped)
                       for x in e.errors):
                raise
            # a number of arguments sqlglot's class for the name does not take (first_value(x, true),
            # lag(x, 1, 0, true)): Spark's catalogue tells (etl.graph.calls, E012); the extra arguments are dropped
            trees = [t for t in spark.parser(error_level=ErrorLevel.IGNORE).parse(tokens, stripped) if t is not None]
        if len(trees) > 1:
            return Parsed(error=SqlError("expected one expression, found several statements"))
        tree = trees[0] if trees else None
    except SqlglotError as e:  # ParseError, TokenError, UnsupportedError, ...
        return Parsed(error=_error_of(e, text))
    except (ValueError, TypeError, RecursionError, AttributeError, KeyError, IndexError) as e:
        # sqlglot raises assorted errors on malformed input; all are "cannot parse"
        return Parsed(error=SqlError(f"cannot parse: {type(e).__name__}: {e}"))
    if tree is None:
        return Parsed(error=SqlError("empty expression"))
    exp = _exp()
    deep, columns = _walk(tree)
    if deep > nesting.MAX_SPARK_DEPTH:
        return Parsed(error=SqlError(f"the expression is {deep:,} operators deep (a chain of ANDs, ORs, + ... counts "
                                     f"one per term), more than etl gives Spark ({nesting.MAX_SPARK_DEPTH}: its "
                                     "planner recurses per level, a chain of 1,500 ANDs overflowed its stack)",
                                     hint=nesting.SPARK_HINT))
    # a statement is a query or starts with a statement's keyword (sqlglot gives many expressions classes outside
    # Condition: from_utc_timestamp(ts, 'UTC') is an AtTimeZone, first_value(x, true) an IgnoreNulls)
    if isinstance(tree, (exp.Query, exp.Command, exp.Values)) or \
            tokens[0].token_type in spark.parser_class.STATEMENT_PARSERS:
        return Parsed(error=SqlError("expected an expression, not a statement"))
    cols, paths = _references(columns, text)
    name = None
    star = isinstance(tree, exp.Star)
    bare = False
    body = tree
    if isinstance(tree, exp.Aliases):  # a generator with several output columns
        names = tuple(a.name for a in tree.expressions)
        return Parsed(tuple(dict.fromkeys(cols)), None, "unknown", False, False, None, tree.this, names,
                      tuple(paths))
    if isinstance(tree, exp.Alias):
        name = tree.alias
        body = tree.this
    elif isinstance(tree, exp.Column) and len(tree.parts) == 1:
        name = tree.name
        bare = True
    return Parsed(tuple(dict.fromkeys(cols)), name, "unknown", star, bare, None, body, (), tuple(paths))


def _references(columns: Any, text: str) -> tuple[list[tuple[str, int]], list[tuple[tuple[str, ...], int]]]:
    """(root column, offset) of every column reference, and (path, offset) of the nested ones (a.b.c)."""
    exp = _exp()
    cols: list[tuple[str, int]] = []
    paths: list[tuple[tuple[str, ...], int]] = []
    for c in columns:
        parts = c.parts
        if not parts:
            continue
        root = parts[0].name
        if not root or isinstance(c.this, exp.Star):
            continue
        cols.append((root, _offset(text, root)))
        if len(parts) > 1:
            path = [p.name for p in parts]
            up = c
            while isinstance(up.parent, exp.Dot) and up.parent.this is up:
                up = up.parent
                path.append(up.expression.name)
            paths.append((tuple(path), _offset(text, root)))
    return cols, paths


def _empty_call(err: dict, text: str) -> bool:
    """sqlglot's class for a name wants an argument where Spark takes none (lag(), lead(): lag(NULL); concat():
    ''): the error names the class of a call `name()` of the text that Spark's catalogue takes without arguments."""
    found = _REQUIRED.match(str(err.get("description", "")))
    if found is None:
        return False
    name = found.group(1).lower()
    fn = lookup(name)
    return fn is not None and fn.takes(0) and re.search(rf"(?<![\w.]){name}\s*\(\s*\)", text, re.I) is not None


_REQUIRED = re.compile(r"Required keyword: '\w+' missing for <class 'sqlglot\.expressions\.[\w.]*?(\w+)'>")


def _walk(tree) -> tuple[int, list]:
    """(the tree's depth, its columns outside subqueries, breadth first): one iterative walk (a chain of 10,000
    ANDs is a tree 10,000 deep)."""
    exp = _exp()
    deepest, columns = 0, []
    queue = deque([(tree, 1, False)])
    while queue:
        node, depth, queried = queue.popleft()
        deepest = max(deepest, depth)
        if isinstance(node, exp.Column) and not queried:
            columns.append(node)
        inner = queried or isinstance(node, exp.Query)
        queue.extend((c, depth + 1, inner) for c in node.iter_expressions())
    return deepest, columns


def _offset(text: str, name: str) -> int:
    m = re.search(r"(?<![A-Za-z0-9_`])`?" + re.escape(name) + r"`?(?![A-Za-z0-9_])", text)
    return m.start() if m else -1


_BOOL = ("EQ", "NEQ", "GT", "GTE", "LT", "LTE", "And", "Or", "Not", "Like", "ILike", "RegexpLike", "In",
         "Is", "Between", "NullSafeEQ", "Exists")
_STRING_FUNCS = frozenset({"lower", "upper", "concat", "concat_ws", "trim", "ltrim", "rtrim", "substring", "substr",
                           "regexp_extract", "regexp_replace", "date_format", "format_string", "lpad", "rpad",
                           "replace", "split_part", "initcap", "md5", "sha1", "sha2", "hex", "to_json", "string",
                           "uuid", "coalesce_str", "reverse", "repeat", "translate", "base64", "url_decode",
                           "url_encode"})
_BIGINT_FUNCS = frozenset({"count", "unix_timestamp"})
_INT_FUNCS = frozenset({"length", "char_length", "size", "array_size", "instr", "locate", "hash", "year", "month",
                        "day", "dayofmonth", "hour", "minute", "second", "dayofweek"})  # Spark's int results
_DOUBLE_FUNCS = frozenset({"round", "bround", "sqrt", "exp", "ln", "log", "log10", "log2", "pow", "power", "rand",
                           "avg", "percentile_approx", "stddev", "variance", "cbrt", "degrees", "radians"})
_TS_FUNCS = frozenset({"to_timestamp", "current_timestamp", "now", "timestamp_millis", "timestamp_seconds",
                       "from_unixtime_ts", "date_trunc", "window_start", "window_end", "timestamp"})


def guess_type(text: str, columns: dict[str, str] | None, functions: dict[str, str] | None = None) -> str:
    """A best-effort Spark type of an expression; 'unknown' when unsure. `functions`: the pipeline's scalar
    functions (lower name -> result type)."""
    p = parse(text)
    if p.error is not None:
        return "unknown"
    lowered = {k.lower(): v for k, v in (columns or {}).items()}
    if p.expr is None:  # bare column (fast path)
        return lowered.get(text.strip().lower(), "unknown")
    return _type_of(p.expr, lowered, functions or {})


def node_type(node: Any, columns: dict[str, str] | None, functions: dict[str, str] | None = None) -> str:
    """guess_type of a parsed expression's node (a part of `Parsed.expr`)."""
    return _type_of(node, {k.lower(): v for k, v in (columns or {}).items()}, functions or {})


def _field_type(node: Any, cols: dict[str, str]) -> str:
    """`g.client` (`g.a.b`): a struct column's field, as Spark resolves a qualified name that is no table (a
    GROK(...) struct, a ROW column); "unknown" when the first part is no struct column of the input."""
    parts = [p.name for p in node.parts]
    typ = cols.get(parts[0].lower())
    for part in parts[1:]:
        fields = struct_fields(typ) if typ is not None else None
        if fields is None:
            return "unknown"
        typ = next((t for k, t in fields.items() if k.lower() == part.lower()), None)
    return typ if typ is not None else "unknown"


# C901: one branch per expression kind (a dispatch)
def _type_of(node, cols: dict[str, str], fns: dict[str, str] | None = None) -> str:  # noqa: C901
    """`fns`: the pipeline's functions (lower name -> the type of a call's value)."""
    exp = _exp()
    name = type(node).__name__
    if isinstance(node, exp.Paren):
        return _type_of(node.this, cols, fns)
    if isinstance(node, exp.Alias):
        return _type_of(node.this, cols, fns)
    if isinstance(node, exp.Identifier):  # a lambda's variable
        return cols.get(node.name.lower(), "unknown")
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):  # w.s of a lambda's struct w
        fields = struct_fields(_type_of(node.this, cols, fns))
        name = node.expression.name.lower()
        return next((t for k, t in (fields or {}).items() if k.lower() == name), "unknown")
    if isinstance(node, exp.Column):
        if len(node.parts) == 1:
            return cols.get(node.name.lower(), "unknown")
        return _field_type(node, cols)
    if isinstance(node, exp.Cast):  # includes TryCast
        return node.to.sql(dialect="spark").lower()
    if isinstance(node, exp.Literal):
        return "string" if node.is_string else number_type(node.this)
    if isinstance(node, exp.HexString):
        return "binary"
    if isinstance(node, exp.Interval):
        return interval_type(node)
    if isinstance(node, exp.Neg):  # -x: x's type (a number or an interval)
        typ = _type_of(node.this, cols, fns)
        return typ if typ.startswith(("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")) else \
            "unknown"
    if isinstance(node, exp.Boolean) or name in _BOOL:
        return "boolean"
    if isinstance(node, exp.Struct):
        return _struct_type(node, cols, fns)
    if name in OPERATOR_CLASSES:
        told = operator_type(OPERATOR_CLASSES[name], node.this, node.expression, cols, fns)
        if told is None and isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.right, exp.Interval):
            left = _type_of(node.left, cols, fns)  # a timestamp plus or minus an interval is a timestamp
            return left if left in ("timestamp", "timestamp_ntz") else "unknown"
        return told or "unknown"
    widened = _widened(node, cols, fns)
    if widened is not None:
        return widened
    contained = container_type(node, cols, lambda n, c: _type_of(n, c, fns))
    if contained is not None:
        return contained
    fname = ""
    if isinstance(node, exp.Anonymous):
        fname = str(node.this).lower()
        if fns and fname in fns:  # a call of one of the pipeline's Python functions
            return fns[fname]
        if fname in OPERATOR_FUNCTIONS and len(node.expressions) == 2:  # try_mod(a, b)
            return operator_type(fname, node.expressions[0], node.expressions[1], cols, fns) or "unknown"
    elif isinstance(node, exp.Func):
        fname = node.sql_name().lower() if hasattr(node, "sql_name") else name.lower()
    told = _catalogued_type(node, fname, cols, fns) if fname else None
    if told is not None:
        return told
    if fname in _STRING_FUNCS or isinstance(node, (exp.Lower, exp.Upper, exp.Trim, exp.Substring,
                                                   exp.RegexpExtract, exp.TimeToStr)):
        return "string"
    if fname in _INT_FUNCS or isinstance(node, (exp.Length, exp.ArraySize)):
        return "int"
    if fname in _BIGINT_FUNCS or isinstance(node, exp.Count):
        return "bigint"
    if isinstance(node, exp.RegexpSplit) or fname == "split":
        return "array<string>"
    if isinstance(node, exp.GenerateSeries) or fname == "sequence":
        start = _type_of(node.args.get("start") or node.this, cols, fns)
        return f"array<{start}>" if start in ("int", "bigint", "date", "timestamp") else "unknown"
    if isinstance(node, exp.Bracket) or fname in ("explode", "explode_outer", "_explodeouter") \
            or isinstance(node, exp.Explode):
        inner = _type_of(node.this, cols, fns)  # an array's element (a map's value) type
        if inner.startswith("array<") and inner.endswith(">"):
            return inner[6:-1]
        if inner.startswith("map<") and isinstance(node, exp.Bracket):
            return _split_map(inner)
        return "unknown"
    if fname in _DOUBLE_FUNCS or isinstance(node, (exp.Round, exp.Sqrt, exp.Ln, exp.Pow)):
        return "double"
    if fname in _TS_FUNCS or isinstance(node, (exp.CurrentTimestamp, exp.StrToTime, exp.UnixToTime)):
        return "timestamp"
    if isinstance(node, (exp.Max, exp.Min)):
        return _type_of(node.this, cols, fns)
    return "unknown"


def number_type(text: str) -> str:
    """Spark's type of a number literal: 1e3 a double, 1.5 decimal(2,1) (its digits, its scale), 5 an int,
    3000000000 a bigint, an integer past bigint's range a decimal of its digits ("unknown" past 38 of them)."""
    digits = text.lstrip("+-")
    if any(ch in digits for ch in "eE"):
        return "double"
    whole, _, frac = digits.partition(".")
    if not (whole + frac).isdigit():
        return "unknown"
    if not frac and "." not in digits:
        n = int(whole)
        if n < 2**31:  # (a minus sign is a negation: -2147483648 is -(2147483648), a bigint)
            return "int"
        if n < 2**63:
            return "bigint"
    p = len(str(int(whole + frac)))
    p, s = max(p, len(frac)), len(frac)
    return f"decimal({p},{s})" if p <= 38 else "unknown"


def integer_digits(node: Any) -> int | None:
    """The number of digits of an integer literal (Spark types it decimal(digits, 0) beside a decimal)."""
    exp = _exp()
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return len(str(int(node.this)))
    return None


_INTERVAL_UNITS = MappingProxyType({u + s: u for u in ("year", "month", "day", "hour", "minute", "second")
                                    for s in ("", "s")})


def interval_type(node: Any) -> str:
    """INTERVAL 1 HOUR: interval hour, INTERVAL '1 2' DAY TO HOUR: interval day to hour, as Spark types them
    ("unknown": a unit Spark reads otherwise, a unit inside the text)."""
    exp = _exp()
    unit = node.args.get("unit")
    if isinstance(unit, exp.IntervalSpan):
        a, b = (_INTERVAL_UNITS.get(str(u.name).lower()) for u in (unit.this, unit.expression))
        return f"interval {a} to {b}" if a and b else "unknown"
    u = _INTERVAL_UNITS.get(str(unit.name).lower()) if unit is not None else None
    return f"interval {u}" if u else "unknown"


def operator_type(op: str, left: Any, right: Any, cols: dict[str, str], fns: dict[str, str] | None) -> str | None:
    """Spark's type of `left op right` (etl.sql.operators; None: it does not tell or Spark refuses it)."""
    a, b = _type_of(left, cols, fns), _type_of(right, cols, fns)
    if "unknown" in (a, b):  # text || anything Spark takes is text
        return "string" if op == "||" and "string" in (a, b) else None
    typ = result(op, a, b, integer_digits(left), integer_digits(right))
    return None if typ == REFUSED else typ


def _widened(node: Any, cols: dict[str, str], fns: dict[str, str] | None) -> str | None:
    """The one type Spark brings the values of a CASE, an IF, coalesce/nvl/ifnull, nvl2, greatest/least, array(...)
    to (etl.sql.operators' coalesce and greatest tables: coalesce(int, double) is double); None: not one of
    those; "unknown" when a value's type is, or Spark refuses them."""
    exp = _exp()
    if isinstance(node, exp.Case):
        values = [i.args.get("true") for i in node.args.get("ifs") or []] + [node.args.get("default")]
    elif isinstance(node, (exp.If, exp.Nvl2)):
        values = [node.args.get("true"), node.args.get("false")]
    elif isinstance(node, (exp.Coalesce, exp.Greatest, exp.Least)):
        values = [node.this, *node.expressions]
    elif isinstance(node, exp.Array):
        values = list(node.expressions)
    else:
        return None
    op = "greatest" if isinstance(node, (exp.Greatest, exp.Least)) else "coalesce"
    typ = None
    for v in values:
        if v is None or isinstance(v, exp.Null):
            continue
        t = _type_of(v, cols, fns)
        if t == "unknown":
            return "unknown"
        typ = t if typ is None else result(op, typ, t)
        if typ is None or typ == REFUSED:
            return "unknown"
    if isinstance(node, exp.Array):  # array(): Spark's empty array, array<void>, beside any array is that array
        return f"array<{typ or 'void'}>" if typ is not None or not values else "unknown"
    return typ or "unknown"


def _struct_type(node: Any, cols: dict[str, str], fns: dict[str, str] | None) -> str:
    """struct(a, b AS c): struct<a:t,c:u> as Spark writes it, when every field's name and type are known."""
    exp = _exp()
    fields = []
    for e in node.expressions:
        if isinstance(e, exp.PropertyEQ):
            name, value = e.this.name, e.expression
        elif isinstance(e, exp.Alias):
            name, value = e.alias, e.this
        elif isinstance(e, exp.Column):
            name, value = e.name, e
        else:
            return "unknown"
        t = _type_of(value, cols, fns)
        if not name or t == "unknown":
            return "unknown"
        fields.append(f"{name}:{t}")
    return f"struct<{','.join(fields)}>" if fields else "unknown"


def _catalogued_type(node, fname: str, cols: dict[str, str], fns: dict[str, str] | None) -> str | None:
    """The result type Spark's catalogue gives a call of `fname` (etl.sql.catalog): one type, or its first
    argument's; None when it depends on more."""
    fn = lookup(fname)
    if fn is None and isinstance(node, _exp().Func) and not isinstance(node, _exp().Anonymous):
        fn = _spark_name_of(node)  # sqlglot's name is its own (try_add is a SafeAdd): the name Spark reads
    if fn is not None and fn.by_class:
        return _by_class_type(node, cols, fns)
    if fn is None or not fn.returns:
        return None
    if not fn.returns.startswith("$"):
        return fn.returns
    if fn.returns != "$1":
        return None
    exp = _exp()
    first = node.expressions[0] if isinstance(node, exp.Anonymous) and node.expressions else node.this
    if not isinstance(first, exp.Expression):
        return None
    typ = _type_of(first, cols, fns)
    return None if typ == "unknown" else typ


def _spark_name_of(node) -> Any:
    """The catalogued function a sqlglot function node is, by the name its Spark SQL calls it (None: none)."""
    calls = spark_calls(node.sql(dialect="spark"))
    return lookup(calls[0].name) if calls and calls[0].offset == 0 else None


def _by_class_type(node, cols: dict[str, str], fns: dict[str, str] | None) -> str | None:
    """The result of a call whose type depends on its arguments' classes (the catalogue's `by_class`: abs(int) is
    int, abs(string) double): the arguments, as Spark reads them off the call's text, at each position that
    changes the result must agree on one ("unknown" when they do not); None when a type is unknown or the call
    cannot be read (the older guesses then)."""
    text = node.sql(dialect="spark")
    calls = spark_calls(text)
    if not calls or calls[0].offset != 0 or calls[0].syntax:
        return None
    fn = lookup(calls[0].name)
    if fn is None or not fn.by_class:
        return None
    args = calls[0].args
    last = fn.by_class[-1][0] if fn.arity.endswith("+") else None
    told: set[str] = set()
    for i, (arg, _) in enumerate(args):
        p = i + 1 if last is None or i + 1 < last else last
        table = dict(fn.by_class).get(p)
        if table is None:
            continue
        if not fn.told(i, len(args)):
            return None
        typ = guess_type(arg, cols, fns) if "->" not in arg else "unknown"  # (a lambda's type is its body's)
        result = table.get(type_class(typ) or "?")
        if typ == "unknown" or result is None:
            return None
        told.add(typ if result == "$" else result)
    if len(told) > 1 and any("decimal" in t for t in told):
        return "unknown"  # (pmod(i, n) is decimal(10,2): the operator's precision rules, not the wider type)
    wider: str | None = None
    for t in sorted(told):  # Spark's wider type of them (coalesce(b, 0) bigint, sequence(b, b, 300) array<bigint>)
        wider = t if wider is None else _wider(wider, t)
        if wider is None:
            return "unknown"
    return wider


def _wider(a: str, b: str) -> str | None:
    """The type Spark brings `a` and `b` to (arrays element by element); None: none."""
    if a == b:
        return a
    ea, eb = element(a), element(b)
    if ea is not None and eb is not None:
        inner = _wider(ea, eb)
        return f"array<{inner}>" if inner is not None else None
    typ = result("coalesce", a, b)
    return None if typ in (None, REFUSED) else typ


def _split_map(t: str) -> str:
    """The value type of 'map<k,v>' (nested types kept whole)."""
    body, depth = t[4:-1], 0
    for i, ch in enumerate(body):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            return body[i + 1:].strip()
    return "unknown"


def generated_types(p: Parsed, columns: dict[str, str] | None, functions: dict[str, str] | None = None) -> list[str]:
    """The types of the columns `inline(rows) AS (a, b)` gives, from the type of `rows` (array<struct<a: t, ...>>);
    'unknown' each when it cannot tell."""
    exp = _exp()
    unknown = ["unknown"] * len(p.names)
    if not isinstance(p.expr, (exp.Inline, exp.Anonymous)) or p.expr.this is None:
        return unknown
    arg = p.expr.this if isinstance(p.expr, exp.Inline) else (p.expr.expressions or [None])[0]
    if arg is None:
        return unknown
    t = guess_type(arg.sql(dialect="spark"), columns, functions).replace(" ", "")
    if not (t.startswith("array<struct<") and t.endswith(">>")):
        return unknown
    fields, depth, cur = [], 0, ""
    for ch in t[len("array<struct<"):-2] + ",":
        depth += ch in "<("
        depth -= ch in ">)"
        if ch == "," and depth == 0:
            fields.append(cur.partition(":")[2] or "unknown")
            cur = ""
        else:
            cur += ch
    return fields if len(fields) == len(p.names) else unknown
