"""WHERE -> the rule-shaped part (a filter's `rules`, run by the filter optimizer) and the rest (`expr`).

Rule-shaped: ANDs and ORs of LIKE / ILIKE / REGEXP / RLIKE / comparisons with a
literal / IN (literals) / IS [NOT] NULL over a column, or over lower() / upper()
/ trim() of a column. These conditions keep a row exactly when the SQL
condition is true (NULL counts as false in both; no NOT is routed, so SQL's
three-valued logic and the rules' two-valued one agree).
A top-level OR becomes one rule per branch (`r1`, `r2`, ...; the filter keeps a
row when any rule matches); anything else rule-shaped becomes one rule `r1`.
Conjuncts that are not rule-shaped stay a Spark SQL `expr`; the filter applies
both (rules first, then expr).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

_CMP: dict[type, str] = {exp.EQ: "eq", exp.GT: "gt", exp.GTE: "ge", exp.LT: "lt", exp.LTE: "le"}
_FLIP = {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge", "eq": "eq"}
_DERIV: dict[type, str] = {exp.Lower: "lower", exp.Upper: "upper", exp.Trim: "trim"}


def conjuncts(cond: exp.Expression) -> list[exp.Expression]:
    return _flat(cond, exp.And)


def disjuncts(cond: exp.Expression) -> list[exp.Expression]:
    return _flat(cond, exp.Or)


def _flat(cond: exp.Expression, kind: type) -> list[exp.Expression]:
    """The operands of a chain of `kind` (AND or OR; through parentheses), left to right. Iterative: sqlglot
    parses `a OR b OR c ...` into a left-deep tree as deep as the chain is long (10,000 terms)."""
    out: list[exp.Expression] = []
    stack = [cond]
    while stack:
        e = unparen(stack.pop())
        if isinstance(e, kind):
            stack += (e.expression, e.this)
        else:
            out.append(e)
    return out


def unparen(e: exp.Expression) -> exp.Expression:
    while isinstance(e, exp.Paren):
        e = e.this
    return e


def _field(e: exp.Expression) -> tuple[str, list[str]] | None:
    e = unparen(e)
    apply: list[str] = []
    while type(e) in _DERIV and not (isinstance(e, exp.Trim) and (e.args.get("expression") or e.args.get("position"))):
        apply.insert(0, _DERIV[type(e)])
        e = unparen(e.this)
    if isinstance(e, exp.Column) and len(e.parts) == 1 and not isinstance(e.this, exp.Star):
        return e.name, apply
    return None


def _scalar(e: exp.Expression) -> Any:
    e = unparen(e)
    neg = isinstance(e, exp.Neg)
    if neg:
        e = e.this
    if isinstance(e, exp.Boolean) and not neg:
        return e.this
    if not isinstance(e, exp.Literal):
        raise ValueError
    if e.is_string:
        if neg:
            raise ValueError
        return e.this
    text = e.this
    value = float(text) if any(c in text for c in ".eE") else int(text)
    return -value if neg else value


def predicate(e: exp.Expression) -> dict | None:
    """A rule predicate for one condition, or None when it is not rule-shaped."""
    e = unparen(e)
    try:
        if isinstance(e, (exp.Like, exp.ILike, exp.RegexpLike)) and not e.args.get("negate") \
                and not e.args.get("escape") and not isinstance(e.parent, exp.Escape):
            f = _field(e.this)
            pat = _scalar(e.expression)
            if f is None or not isinstance(pat, str):
                return None
            op = "regex" if isinstance(e, exp.RegexpLike) else "like"
            return _pred(f, op, pat, caseless=isinstance(e, exp.ILike))
        if type(e) in _CMP:
            op = _CMP[type(e)]
            f, other = _field(e.this), e.expression
            if f is None:
                f, other, op = _field(e.expression), e.this, _FLIP[op]
            if f is None:
                return None
            value = _scalar(other)
            if op != "eq":
                if isinstance(value, (str, bool)):
                    return None
                value = float(value)
            return _pred(f, op, value)
        if isinstance(e, exp.In) and not e.args.get("query") and not e.args.get("field"):
            f = _field(e.this)
            if f is None or not e.expressions:
                return None
            return _pred(f, "in", [_scalar(x) for x in e.expressions])
        if isinstance(e, exp.Is) and isinstance(e.expression, exp.Null):
            f = _field(e.this)
            return None if f is None else _pred(f, "is_null", True)
        if isinstance(e, exp.Not) and isinstance(unparen(e.this), exp.Is) and isinstance(unparen(e.this).expression,
                                                                                           exp.Null):
            f = _field(unparen(e.this).this)
            return None if f is None else _pred(f, "not_null", True)
    except (ValueError, TypeError):
        return None
    return None


def _pred(f: tuple[str, list[str]], op: str, value: Any, caseless: bool = False) -> dict:
    out: dict[str, Any] = {"field": f[0]}
    if f[1]:
        out["apply"] = f[1]
    if caseless:
        out["caseless"] = True
    out[op] = value
    return out


def tree(e: exp.Expression) -> dict | None:
    """A rule tree (all / any / predicate) for a condition, or None when any part is not rule-shaped."""
    e = unparen(e)
    if isinstance(e, exp.And):
        parts = [tree(c) for c in conjuncts(e)]
        return None if any(p is None for p in parts) else {"all": parts}
    if isinstance(e, exp.Or):
        parts = [tree(c) for c in disjuncts(e)]
        return None if any(p is None for p in parts) else {"any": parts}
    return predicate(e)


def split(cond: exp.Expression) -> tuple[list[dict], list[exp.Expression], list[exp.Expression]]:
    """(rules, the conditions they came from, the conjuncts left for `expr`)."""
    ruled: list[exp.Expression] = []
    rest: list[exp.Expression] = []
    for c in conjuncts(cond):
        (ruled if tree(c) is not None else rest).append(c)
    if not ruled:
        return [], [], rest
    if len(ruled) == 1 and isinstance(unparen(ruled[0]), exp.Or):
        branches = disjuncts(ruled[0])
        return [{"id": f"r{i}", "when": tree(b)} for i, b in enumerate(branches, 1)], branches, rest
    whens = [tree(c) for c in ruled]
    when = whens[0] if len(whens) == 1 else {"all": whens}
    return [{"id": "r1", "when": when}], ruled, rest
