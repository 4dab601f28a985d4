"""Rule trees for the matcher: folding, vectorized evaluation, three-valued bounds, compiled row functions."""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

import numpy as np

from etl.matching.ir import And, Const, Expr, Not, Or, Pred


def fold(e: Expr, value_of: Callable[[int], bool | None]) -> Expr:
    """Substitute known leaves (value_of -> bool) and fold constants."""
    if isinstance(e, Pred):
        v = value_of(e.index)
        return e if v is None else Const(v)
    if isinstance(e, Const):
        return e
    if isinstance(e, Not):
        c = fold(e.child, value_of)
        return Const(not c.value) if isinstance(c, Const) else Not(c)
    is_and = isinstance(e, And)
    kids = []
    for c in e.children:
        c = fold(c, value_of)
        if isinstance(c, Const):
            if c.value != is_and:
                return Const(not is_and)
            continue
        kids.append(c)
    if not kids:
        return Const(is_and)
    if len(kids) == 1:
        return kids[0]
    return (And if is_and else Or)(tuple(kids))


def skeleton(e: Expr, keep: set[int]) -> Expr:
    """The tree with every leaf not in ``keep`` replaced by one placeholder (Pred(-1))."""
    if isinstance(e, Pred):
        return e if e.index in keep else Pred(-1)
    if isinstance(e, Not):
        return Not(skeleton(e.child, keep))
    if isinstance(e, (And, Or)):
        return type(e)(tuple(skeleton(c, keep) for c in e.children))
    return e


def dense(e: Expr, nat: dict[int, np.ndarray]) -> Any:
    """Vectorized value of a tree whose leaves are all natives (bool or numpy array)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Pred):
        return nat[e.index]
    if isinstance(e, Not):
        v = dense(e.child, nat)
        return (not v) if isinstance(v, bool) else ~v
    vals = [dense(c, nat) for c in e.children]
    if isinstance(e, And):
        out: Any = True
        for v in vals:
            out = (out and v) if isinstance(out, bool) and isinstance(v, bool) else np.logical_and(out, v)
        return out
    out = False
    for v in vals:
        out = (out or v) if isinstance(out, bool) and isinstance(v, bool) else np.logical_or(out, v)
    return out


def bounds(e: Expr, nat: dict[int, np.ndarray]) -> tuple[Any, Any]:
    """Three-valued (lower, upper) bounds with every pattern unknown."""
    if isinstance(e, Const):
        return e.value, e.value
    if isinstance(e, Pred):
        v = nat.get(e.index)
        return (False, True) if v is None else (v, v)
    if isinstance(e, Not):
        lo, hi = bounds(e.child, nat)
        neg = (lambda x: (not x) if isinstance(x, bool) else ~x)  # noqa: E731
        return neg(hi), neg(lo)
    parts = [bounds(c, nat) for c in e.children]
    comb = np.logical_and if isinstance(e, And) else np.logical_or
    lo, hi = parts[0]
    for a, b in parts[1:]:
        lo, hi = comb(lo, a), comb(hi, b)
    return lo, hi


def py_expr(e: Expr, natives: set[int]) -> str:
    if isinstance(e, Const):
        return "True" if e.value else "False"
    if isinstance(e, Pred):
        return f"N[{e.index}][r]" if e.index in natives else f"({e.index} in b)"
    if isinstance(e, Not):
        return f"(not {py_expr(e.child, natives)})"
    kids = sorted(e.children, key=lambda c: 0 if isinstance(c, Pred) and c.index in natives else 1)
    op = " and " if isinstance(e, And) else " or "
    return "(" + op.join(py_expr(c, natives) for c in kids) + ")"


def compile_rule_functions(exprs: dict[int, Expr], natives: set[int]) -> dict[int, Callable]:
    src = []
    for k, e in exprs.items():
        src.append(f"def _r{k}(b, r, N):\n    return bool({py_expr(e, natives)})\n")
    ns: dict[str, Any] = {}
    exec(compile("".join(src) or "pass\n", "<filter-rules>", "exec"), ns)  # generated from ints only
    return {k: ns[f"_r{k}"] for k in exprs}


def csr(mapping: dict[int, list[int]], size: int) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(size + 1, dtype=np.int64)
    for k, v in mapping.items():
        ptr[k + 1] = len(v)
    np.cumsum(ptr, out=ptr)
    targets = np.zeros(int(ptr[-1]), dtype=np.int64)
    for k, v in mapping.items():
        targets[ptr[k]:ptr[k + 1]] = v
    return ptr, targets


def expand(rows: np.ndarray, keys: np.ndarray, ptr: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, key) pairs -> (row, target) pairs through a CSR map key -> targets."""
    if len(rows) == 0:
        return rows, keys
    starts = ptr[keys]
    counts = ptr[keys + 1] - starts
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows_rep = np.repeat(rows, counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    vals = targets[np.repeat(starts, counts) + (np.arange(total) - first)]
    return rows_rep, vals
