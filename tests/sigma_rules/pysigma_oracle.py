"""An independent reading of Sigma rules, straight from pySigma's parsed objects (the tests' oracle).

`evaluate` walks pySigma's condition tree (ConditionAND/OR/NOT and field = value leaves) over one event:
strings through pySigma's own `SigmaString.to_regex()` (whole value, case-insensitive unless cased), regexes
with their flags, cidr, comparisons, null, exists, numbers, booleans. It shares no code with etl.load.sigma_map.

`matching_event` builds an event the rule matches from the parsed detection (witness values for the leaves,
several fields' constraints merged, OR branches tried at random) and checks it with `evaluate`;
`near_miss` changes one field of it a little until `evaluate` says no.
"""

from __future__ import annotations

import ipaddress
import random
import re
from typing import Any

from sigma import types as t
from sigma.conditions import ConditionAND, ConditionFieldEqualsValueExpression, ConditionNOT, ConditionOR


def conditions(rule: Any) -> list[Any]:
    return [c.parse() for c in rule.detection.parsed_condition]


def evaluate(rule: Any, event: dict) -> bool:
    return any(_eval(c, event) for c in conditions(rule))


def _get(event: dict, field: str) -> Any:
    return event.get(field)


def _text(v: Any) -> str | None:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    return None


def _leaf(field: str, value: Any, event: dict) -> bool:
    v = _get(event, field)
    if isinstance(value, t.SigmaExpansion):
        return any(_leaf(field, x, event) for x in value.values)
    if isinstance(value, t.SigmaNull):
        return v is None
    if isinstance(value, t.SigmaExists):
        return (v is not None) == bool(value.exists)
    if v is None:
        return False
    if isinstance(value, t.SigmaString):
        s = _text(v)
        regex = value.to_regex().regexp.to_plain()
        flags = re.DOTALL | (0 if isinstance(value, t.SigmaCasedString) else re.IGNORECASE)
        return s is not None and re.fullmatch(regex, s, flags) is not None
    if isinstance(value, t.SigmaRegularExpression):
        flags = 0
        for f in value.flags:
            flags |= t.SigmaRegularExpression.sigma_to_python_flags[f]
        s = _text(v)
        return s is not None and re.search(value.regexp.to_plain(), s, flags) is not None
    if isinstance(value, t.SigmaCIDRExpression):
        try:
            return ipaddress.ip_address(str(v)) in value.network
        except ValueError:
            return False
    if isinstance(value, t.SigmaBool):
        return v is bool(value.boolean)
    if isinstance(value, t.SigmaNumber):
        return (not isinstance(v, bool) and isinstance(v, (int, float)) and v == value.number) or v == str(value.number)
    if isinstance(value, t.SigmaCompareExpression):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return False
        n = value.number.number
        op = value.op.name
        return {"LT": v < n, "LTE": v <= n, "GT": v > n, "GTE": v >= n, "NEQ": v != n}[op]
    raise NotImplementedError(type(value).__name__)


def _eval(node: Any, event: dict) -> bool:
    if isinstance(node, ConditionAND):
        return all(_eval(a, event) for a in node.args)
    if isinstance(node, ConditionOR):
        return any(_eval(a, event) for a in node.args)
    if isinstance(node, ConditionNOT):
        return not _eval(node.args[0], event)
    if isinstance(node, ConditionFieldEqualsValueExpression):
        return _leaf(node.field, node.value, event)
    raise NotImplementedError(type(node).__name__)


# --------------------------------------------------------------------------- event generation


def _witness(value: Any) -> Any:
    """A value satisfying one leaf, or None when this generator cannot make one (a regex, a fieldref)."""
    if isinstance(value, t.SigmaExpansion):
        return _witness(value.values[0])
    if isinstance(value, t.SigmaString):
        out = []
        for p in value.s:
            if isinstance(p, str):
                out.append(p)
            elif p is t.SpecialChars.WILDCARD_SINGLE:
                out.append("x")
            elif p is t.SpecialChars.WILDCARD_MULTI:
                out.append("")
            else:
                return None
        kind = ("contains" if value.startswith(t.SpecialChars.WILDCARD_MULTI)
                and value.endswith(t.SpecialChars.WILDCARD_MULTI) else
                "ends" if value.startswith(t.SpecialChars.WILDCARD_MULTI) else
                "starts" if value.endswith(t.SpecialChars.WILDCARD_MULTI) else "exact")
        return (kind, "".join(out))
    if isinstance(value, t.SigmaCIDRExpression):
        net = value.network
        return ("exact", str(net.network_address + (1 if net.num_addresses > 1 else 0)))
    if isinstance(value, t.SigmaNumber):
        return ("exact", value.number)
    if isinstance(value, t.SigmaBool):
        return ("exact", bool(value.boolean))
    if isinstance(value, t.SigmaExists):
        return ("exact", "x") if value.exists else ("absent", None)
    if isinstance(value, t.SigmaNull):
        return ("absent", None)
    if isinstance(value, t.SigmaCompareExpression):
        n = value.number.number
        return ("exact", {"LT": n - 1, "LTE": n, "GT": n + 1, "GTE": n, "NEQ": n + 1}[value.op.name])
    return None


def _want(node: Any, truth: bool, cons: dict, rng: random.Random) -> bool:
    """Add constraints making `node` evaluate to `truth` (a false leaf adds none); False when impossible."""
    if isinstance(node, ConditionNOT):
        return _want(node.args[0], not truth, cons, rng)
    if isinstance(node, (ConditionAND, ConditionOR)):
        every = isinstance(node, ConditionAND) == truth
        if every:
            return all(_want(a, truth, cons, rng) for a in node.args)
        args = list(node.args)
        rng.shuffle(args)
        for a in args:
            trial = {k: list(v) for k, v in cons.items()}
            if _want(a, truth, trial, rng):
                cons.clear()
                cons.update(trial)
                return True
        return False
    if not truth:
        return True
    w = _witness(node.value)
    if w is None:
        return False
    cons.setdefault(node.field, []).append(w)
    return True


def _build(cons: dict) -> dict:
    event: dict = {}
    for field, items in cons.items():
        if any(k == "absent" for k, _ in items):
            continue
        exact = [v for k, v in items if k == "exact"]
        if exact:
            event[field] = exact[-1]
            continue
        starts = [v for k, v in items if k == "starts"]
        mids = [v for k, v in items if k == "contains"]
        ends = [v for k, v in items if k == "ends"]
        event[field] = "".join(starts[:1]) + " " + " ".join(mids) + " " + "".join(ends[-1:])
    return event


def matching_event(rule: Any, tries: int = 40) -> dict | None:
    rng = random.Random(rule.title)
    for _ in range(tries):
        for cond in conditions(rule):
            cons: dict = {}
            if _want(cond, True, cons, rng):
                event = _build(cons)
                if event and evaluate(rule, event):
                    return event
    return None


def near_miss(rule: Any, event: dict) -> dict | None:
    """`event` with one field changed a little (a character replaced, dropped or added) so that the rule no
    longer matches; None when no such change is found."""
    for field in sorted(event):
        v = event[field]
        if not isinstance(v, str):
            cands = [v + 1] if isinstance(v, (int, float)) and not isinstance(v, bool) else []
        else:
            stripped = v.strip()
            cands = []
            for i in range(len(v) - 1, -1, -1):
                if v[i].isalnum():
                    cands.append(v[:i] + ("q" if v[i].lower() != "q" else "z") + v[i + 1:])
                    if len(cands) >= 6:
                        break
            cands += [stripped[:-1], stripped[1:], v + "x", "x" + v]
        for c in cands:
            other = {**event, field: c}
            if not evaluate(rule, other):
                return other
    return None
