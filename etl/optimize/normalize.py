"""Pass 1: lift rules into the IR and normalize them.

* every predicate gets a canonical key (derivation repeats collapsed, ``caseless``
  kept only where it means something, ``in``/``cidr`` values sorted and deduped);
  predicates with equal keys become one bit, shared by all rules;
* constant predicates are folded: ``in: []`` is false; a pattern that matches
  the empty string matches every value that has text (``has_text``);
* and/or are flattened, constants folded, duplicate children removed, ``x and
  not x`` is false and ``x or not x`` is true (predicates are two-valued: a
  predicate on null is false, so ``not`` is plain negation);
* identical sub-expressions are interned by a stable fingerprint, across rules.

Bad regexes and networks raise :class:`RuleCompileError` pointing at the node.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from typing import Any

from etl.regexes.hsregex import op_regex, plan_pattern
from etl.matching.ir import (
    And, Const, Expr, FilterProgram, NodePath, Not, Or, Pred, PredicateInfo, PredicateKey,
    RuleCompileError, RuleProgram, leaves,
)
from etl.spec.rules import PATTERN_OPS, All, AnyOf, Predicate, Rule
from etl.spec.rules import Not as SpecNot

IDEMPOTENT = ("lower", "upper", "trim", "collapse_ws")
CASELESS_OPS = PATTERN_OPS + ("eq", "ne", "in", "fieldref")


# --------------------------------------------------------------------------- lift


def lift(rules: list[Rule]) -> FilterProgram:
    """Spec rules -> IR with one raw predicate per occurrence (not yet canonical)."""
    preds: list[PredicateInfo] = []
    out: list[RuleProgram] = []

    def walk(node: Any, rule_id: str, path: tuple) -> Expr:
        origin = NodePath(rule_id, path)
        if isinstance(node, Predicate):
            key = PredicateKey(node.field, tuple(node.apply), node.op, _raw_value(node), node.caseless)
            preds.append(PredicateInfo(len(preds), key, "", (rule_id,), (origin,)))
            return Pred(len(preds) - 1, origin)
        if isinstance(node, All):
            return And(tuple(walk(c, rule_id, path + ("all", i)) for i, c in enumerate(node.all)), origin)
        if isinstance(node, AnyOf):
            return Or(tuple(walk(c, rule_id, path + ("any", i)) for i, c in enumerate(node.any)), origin)
        if isinstance(node, SpecNot):
            return Not(walk(node.not_, rule_id, path + ("not",)), origin)
        raise TypeError(f"not a rule node: {node!r}")

    for i, rule in enumerate(rules):
        origin = NodePath(rule.id)
        expr = walk(rule.when, rule.id, ())
        out.append(RuleProgram(i, rule.id, expr, rule.severity, tuple(rule.tags), origin))
    return FilterProgram(rules=tuple(out), predicates=tuple(preds), passes=("lift",))


def _raw_value(p: Predicate) -> Any:
    v = p.value
    if isinstance(v, list):
        return tuple(v)
    if v is True and p.op in ("is_null", "not_null"):
        return None
    return v


# --------------------------------------------------------------------------- predicate keys


def _kind_key(v: Any) -> tuple:
    if isinstance(v, bool):
        return (0, v)
    if isinstance(v, (int, float)):
        return (1, float(v), isinstance(v, float))
    return (2, v)


def canonical_key(key: PredicateKey, origin: object | None) -> PredicateKey | Const:
    """Canonical form of a predicate, or a constant when it cannot depend on the event."""
    derivs: list[str] = []
    for d in key.derivations:
        if not (derivs and derivs[-1] == d and d in IDEMPOTENT):
            derivs.append(d)
    op, value = key.op, key.value
    caseless = key.caseless and op in CASELESS_OPS
    if op in ("eq", "ne") and not isinstance(value, str):
        caseless = False
    if op == "in":
        uniq: dict[tuple, Any] = {}
        for v in value:
            uniq.setdefault(_kind_key(v), v)
        value = tuple(uniq[k] for k in sorted(uniq, key=lambda k: (k[0], str(k[1:]))))
        if not value:
            return Const(False, origin)
        if not any(isinstance(v, str) for v in value):
            caseless = False
    if op in ("gt", "ge", "lt", "le") and not isinstance(value, str):
        value = float(value)
    if op in ("is_null", "not_null"):
        return PredicateKey(key.field, (), op, None, False)
    if op == "cidr":
        return PredicateKey(key.field, tuple(derivs), op, _networks(value, origin), False)
    if op in PATTERN_OPS and _always(op, value, caseless, origin):
        # a pattern matching the empty string matches every value that has a text form
        return PredicateKey(key.field, (), "has_text", None, False)
    return PredicateKey(key.field, tuple(derivs), op, value, caseless)


def _networks(value: Any, origin: object | None) -> tuple[str, ...]:
    """A cidr predicate's networks, each once, in a canonical order."""
    nets = value if isinstance(value, tuple) else (value,)
    try:
        parsed = {ipaddress.ip_network(n, strict=False) for n in nets}
    except ValueError as e:
        raise RuleCompileError(f"bad network in cidr: {e}", origin) from None
    ordered = sorted(parsed, key=lambda n: (n.version, n.network_address, n.prefixlen))
    return tuple(str(n) for n in ordered)


def _always(op: str, value: Any, caseless: bool, origin: object | None) -> bool:
    """Whether a pattern operator's regex matches the empty string; RuleCompileError when it is invalid."""
    regex = op_regex(op, value)
    flags = re.IGNORECASE if caseless else 0
    try:
        if "(?<" in regex:  # look-behind width is checked by re's compiler, not its parser
            re.compile(regex, flags)
        plan = plan_pattern(regex, flags, check=False)  # parses with re's parser
    except (re.error, OverflowError, RecursionError) as e:
        raise RuleCompileError(f"invalid regular expression {value!r}: {e}", origin) from None
    return plan.kind == "always"


# --------------------------------------------------------------------------- expressions


class _Normalizer:
    def __init__(self, raw: tuple[PredicateInfo, ...]):
        self.raw = raw
        self.by_fp: dict[str, int] = {}
        self.keys: list[PredicateKey] = []
        self.origins: list[list[object]] = []
        self.consts: dict[int, Const] = {}
        self.fps: dict[Expr, str] = {}
        self.interned: dict[str, Expr] = {}
        self.shared = 0

    def fp(self, e: Expr) -> str:
        got = self.fps.get(e)
        if got is not None:
            return got
        if isinstance(e, Const):
            s = "T" if e.value else "F"
        elif isinstance(e, Pred):
            s = "p" + self.keys[e.index].fingerprint()
        elif isinstance(e, Not):
            s = "n" + _h("not", self.fp(e.child))
        else:
            tag = "and" if isinstance(e, And) else "or"
            s = _h(tag, *sorted(self.fp(c) for c in e.children))
        self.fps[e] = s
        return s

    def intern(self, e: Expr) -> Expr:
        f = self.fp(e)
        got = self.interned.get(f)
        if got is None:
            self.interned[f] = e
            return e
        if not isinstance(e, (Pred, Const)):
            self.shared += 1
        return got

    def pred(self, p: Pred, rule_id: str) -> Expr:
        info = self.raw[p.index]
        key = canonical_key(info.key, p.origin)
        if isinstance(key, Const):
            return key
        f = key.fingerprint()
        idx = self.by_fp.get(f)
        if idx is None:
            idx = len(self.keys)
            self.by_fp[f] = idx
            self.keys.append(key)
            self.origins.append([])
        self.origins[idx].extend(info.origins)
        return self.intern(Pred(idx, p.origin))

    def norm(self, e: Expr, rule_id: str) -> Expr:
        if isinstance(e, Const):
            return e
        if isinstance(e, Pred):
            return self.pred(e, rule_id)
        if isinstance(e, Not):
            c = self.norm(e.child, rule_id)
            if isinstance(c, Const):
                return Const(not c.value, e.origin)
            if isinstance(c, Not):
                return c.child
            return self.intern(Not(c, e.origin))
        is_and = isinstance(e, And)
        absorbing, neutral = (False, True) if is_and else (True, False)
        flat: dict[str, Expr] = {}
        stack = [self.norm(c, rule_id) for c in e.children]
        while stack:
            c = stack.pop(0)
            if isinstance(c, Const):
                if c.value == absorbing:
                    return Const(absorbing, e.origin)
                continue
            if isinstance(c, And if is_and else Or):
                stack[0:0] = list(c.children)
                continue
            flat.setdefault(self.fp(c), c)
        for _f, c in flat.items():
            if isinstance(c, Not) and self.fp(c.child) in flat:
                return Const(absorbing, e.origin)  # x and not x / x or not x
        if not flat:
            return Const(neutral, e.origin)
        if len(flat) == 1:
            return next(iter(flat.values()))
        children = tuple(flat[f] for f in sorted(flat))
        return self.intern((And if is_and else Or)(children, e.origin))


def _h(*parts: str) -> str:
    return hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:16]


def _renumber(exprs: list[Expr]) -> tuple[list[Expr], list[int]]:
    """Number the predicates the trees still use by first use (depth first); drop the others.

    Shared sub-expressions stay shared (rebuilt once, by identity)."""
    new_of: dict[int, int] = {}
    old_of: list[int] = []
    memo: dict[int, Expr] = {}

    def walk(e: Expr) -> Expr:
        got = memo.get(id(e))
        if got is not None:
            return got
        if isinstance(e, Pred):
            if e.index not in new_of:
                new_of[e.index] = len(old_of)
                old_of.append(e.index)
            out: Expr = Pred(new_of[e.index], e.origin)
        elif isinstance(e, Not):
            out = Not(walk(e.child), e.origin)
        elif isinstance(e, (And, Or)):
            out = type(e)(tuple(walk(c) for c in e.children), e.origin)
        else:
            out = e
        memo[id(e)] = out
        return out

    return [walk(e) for e in exprs], old_of


def normalize(program: FilterProgram) -> FilterProgram:
    n = _Normalizer(program.predicates)
    exprs, old_of = _renumber([n.norm(r.expr, r.rule_id) for r in program.rules])
    rules = tuple(
        RuleProgram(r.index, r.rule_id, e, r.severity, r.tags, r.origin) for r, e in zip(program.rules, exprs, strict=True)
    )
    used_by: list[dict[str, None]] = [{} for _ in old_of]
    for r in rules:
        for leaf in leaves(r.expr):
            used_by[leaf].setdefault(r.rule_id)
    preds = []
    for new, old in enumerate(old_of):
        k = n.keys[old]
        preds.append(PredicateInfo(new, k, k.fingerprint(), tuple(used_by[new]), tuple(n.origins[old])))
    return program.with_pass("normalize", rules=rules, predicates=tuple(preds))


def shared_subexpressions(program: FilterProgram) -> int:
    """Composite sub-expressions used more than once across the rule set (after normalize)."""
    counts: dict[int, int] = {}
    seen_nodes: dict[int, Expr] = {}

    def walk(e: Expr) -> None:
        if isinstance(e, (And, Or, Not)):
            counts[id(e)] = counts.get(id(e), 0) + 1
            seen_nodes[id(e)] = e
            if counts[id(e)] > 1:
                return
            for c in (e.children if isinstance(e, (And, Or)) else (e.child,)):
                walk(c)

    for r in program.rules:
        walk(r.expr)
    return sum(1 for c in counts.values() if c > 1)
