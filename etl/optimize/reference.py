"""Naive reference interpreter of the rule language: the definition of what a rule means.

It works directly on spec ``Rule`` objects and one event (a dict), with no
optimization, and is what the optimized matcher is tested against.

Values
    A field ``a.b`` is the key ``"a.b"`` when the event has it, else the nested
    lookup ``event["a"]["b"]``; a missing field is null. A value is null, a
    bool, a number (int or float, not bool), a text (str) or something else.

Null
    **A predicate on a missing or null field is false** (``is_null`` excepted,
    which is true). ``not`` negates booleans normally, so ``not {field: x,
    eq: 1}`` is true when ``x`` is null. (Two-valued logic; SQL would say
    unknown.) ``ne`` is "not null and not equal".

Text form (pattern operators and cidr)
    a text is itself; a bool is ``"true"``/``"false"``; an int is its decimal
    form; a float is Python's ``str(float)``; other values have no text form
    and the predicate is false.

Derivations (``apply``), in order, on text only
    ``lower``/``upper`` are ``str.lower``/``str.upper``; ``trim`` is
    ``str.strip()`` (Unicode whitespace, ``str.isspace``); ``collapse_ws``
    turns every run of whitespace into one space. For eq/ne/in/gt/... they
    apply to text values; numbers and bools are compared as they are.

Comparisons
    fieldref: as eq, with the other field's value (null: false).
    eq: same kind and equal (numbers numerically; a bool only equals a bool;
    no coercion between text and numbers). With ``caseless`` and text on both
    sides: equal character by character under Python ``re.IGNORECASE``.
    in: eq to one member. gt/ge/lt/le: number vs number or text vs text (code
    point order), otherwise false.

Patterns (semantics of ``re.search`` on the derived text)
    regex: ``re.search(regex, text)`` (``re.IGNORECASE`` when caseless);
    contains/starts_with/ends_with: substring/prefix/suffix; like: SQL LIKE
    over the whole value, ``%`` any run (newlines included), ``_`` one
    character, a backslash makes the next character literal (a trailing
    backslash is itself). caseless compares characters under
    ``re.IGNORECASE``.

cidr
    the text form (derivations applied) parsed by ``ipaddress.ip_address``
    (invalid: false) lies in one of the networks.

This module is deliberately independent of the optimizer: LIKE, contains
and friends are implemented directly, not through regex translation.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from typing import Any, cast
from collections.abc import Sequence

from etl.spec.rules import All, AnyOf, Not, Predicate, Rule


def lookup(event: dict, field: str) -> Any:
    if field in event:
        return event[field]
    cur: Any = event
    for part in field.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "text"
    return "other"


def text_form(v: Any) -> str | None:
    k = kind(v)
    if k == "text":
        return v
    if k == "bool":
        return "true" if v else "false"
    if k == "number":
        return str(v)
    return None


def derive(s: str, derivations: Sequence[str]) -> str:
    for d in derivations:
        if d == "lower":
            s = s.lower()
        elif d == "upper":
            s = s.upper()
        elif d == "trim":
            s = s.strip()
        elif d == "collapse_ws":
            out: list[str] = []
            in_ws = False
            for ch in s:
                if ch.isspace():
                    if not in_ws:
                        out.append(" ")
                    in_ws = True
                else:
                    out.append(ch)
                    in_ws = False
            s = "".join(out)
        else:
            raise ValueError(f"unknown derivation {d}")
    return s


@lru_cache(maxsize=65536)
def _ceq_caseless(text_ch: str, pat_ch: str) -> bool:
    return text_ch == pat_ch or re.fullmatch(re.escape(pat_ch), text_ch, re.IGNORECASE) is not None


def _ceq(a: str, b: str, caseless: bool) -> bool:
    return a == b if not caseless else _ceq_caseless(a, b)


def _seq_eq(text: str, pat: str, caseless: bool) -> bool:
    return len(text) == len(pat) and all(_ceq(a, b, caseless) for a, b in zip(text, pat, strict=True))


def like_match(text: str, pattern: str, caseless: bool) -> bool:
    """SQL LIKE by dynamic programming over (text position, pattern token)."""
    tokens: list[tuple[str, str]] = []  # ("any", ""), ("one", ""), ("lit", ch)
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            tokens.append(("lit", pattern[i + 1]))
            i += 2
        else:
            tokens.append(("any", "") if ch == "%" else ("one", "") if ch == "_" else ("lit", ch))
            i += 1
    n = len(text)
    reach = [False] * (n + 1)  # reach[j]: tokens so far can consume text[:j]
    reach[0] = True
    for t, ch in tokens:
        nxt = [False] * (n + 1)
        if t == "any":
            on = False
            for j in range(n + 1):
                on = on or reach[j]
                nxt[j] = on
        else:
            for j in range(n):
                if reach[j] and (t == "one" or _ceq(text[j], ch, caseless)):
                    nxt[j + 1] = True
        reach = nxt
    return reach[n]


def _eq(v: Any, target: Any, caseless: bool) -> bool:
    kv, kt = kind(v), kind(target)
    if kv != kt:
        return False
    if kv == "text" and caseless:
        return _seq_eq(v, target, True)
    return v == target


def _cmp(v: Any, op: str, target: Any) -> bool:
    if isinstance(target, str):
        if kind(v) != "text":
            return False
    else:
        if kind(v) != "number":
            return False
        target = float(target)
    if op == "gt":
        return v > target
    if op == "ge":
        return v >= target
    if op == "lt":
        return v < target
    return v <= target


def eval_predicate(p: Predicate, event: dict) -> bool:
    v = lookup(event, p.field)
    op = p.op
    if op == "is_null":
        return v is None
    if v is None:
        return False
    if op == "not_null":
        return True
    if op == "fieldref":  # the other field's value, compared as eq compares
        w = lookup(event, p.fieldref) if p.fieldref is not None else None
        return w is not None and _eq(v, w, p.caseless)
    if op in ("eq", "ne", "in", "gt", "ge", "lt", "le"):
        if kind(v) == "text" and p.apply:
            v = derive(v, p.apply)
        if op == "eq":
            return _eq(v, p.eq, p.caseless)
        if op == "ne":
            return not _eq(v, p.ne, p.caseless)
        if op == "in":
            return any(_eq(v, t, p.caseless) for t in p.in_ or ())
        return _cmp(v, op, p.value)
    s = text_form(v)
    if s is None:
        return False
    return _eval_text(p, op, derive(s, p.apply))


def _eval_text(p: Predicate, op: str, s: str) -> bool:
    """An operator on the value's text form (derivations applied)."""
    if op == "cidr":
        try:
            addr = ipaddress.ip_address(s)
        except ValueError:
            return False
        nets = [p.cidr] if isinstance(p.cidr, str) else p.cidr or []
        return any(addr in ipaddress.ip_network(n, strict=False) for n in nets)
    c = p.caseless
    if op == "regex":
        return re.search(cast(str, p.regex), s, re.IGNORECASE if c else 0) is not None
    if op == "contains":
        t = cast(str, p.contains)  # the operator's field is set (the spec checks it)
        if not c:
            return t in s
        return any(_seq_eq(s[i:i + len(t)], t, True) for i in range(len(s) - len(t) + 1))
    if op == "starts_with":
        t = cast(str, p.starts_with)
        return s.startswith(t) if not c else _seq_eq(s[:len(t)], t, True)
    if op == "ends_with":
        t = cast(str, p.ends_with)
        return s.endswith(t) if not c else len(s) >= len(t) and _seq_eq(s[len(s) - len(t):], t, True)
    if op == "like":
        return like_match(s, cast(str, p.like), c)
    raise ValueError(f"unknown operator {op}")


def eval_node(node: Any, event: dict) -> bool:
    if isinstance(node, Predicate):
        return eval_predicate(node, event)
    if isinstance(node, All):
        return all(eval_node(c, event) for c in node.all)
    if isinstance(node, AnyOf):
        return any(eval_node(c, event) for c in node.any)
    if isinstance(node, Not):
        return not eval_node(node.not_, event)
    raise TypeError(f"not a rule node: {node!r}")


def matched_rules(rules: list[Rule], event: dict) -> list[str]:
    """Ids of the rules an event matches, in rule order."""
    return [r.id for r in rules if eval_node(r.when, event)]
