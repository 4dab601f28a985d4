"""Filter program IR: the plan object the filter optimizer builds and the matcher runs.

Plain frozen dataclasses, no behaviour beyond small helpers. Every node keeps an
``origin`` (an opaque object, by default a :class:`NodePath` naming the rule and
the path of the node inside ``when``) so that later layers can point an error at
a YAML line. ``origin`` never takes part in equality or fingerprints.

Shape of a compiled program::

    FilterProgram
      rules        per rule: id and a boolean tree (And/Or/Not/Const) over Pred(index)
      predicates   one PredicateInfo per distinct predicate (the "bits"); Pred(index) points here
      natives      cheap predicates evaluated first (Spark SQL text + pyarrow evaluation)
      databases    one Hyperscan database per (field, derivations) with its patterns
      fallbacks    patterns that run through Python ``re`` instead of Hyperscan
      fingerprint_fields   the fields the rule set reads
"""

from __future__ import annotations

import hashlib
import json
import dataclasses
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

Origin = object


@dataclass(frozen=True)
class NodePath:
    """Default origin: a rule id and the path of a node relative to the rule's ``when``.

    ``NodePath("r", ("any", 1))`` is the second child of ``when: {any: [...]}``;
    ``()`` is ``when`` itself. Keys are the YAML keys (all, any, not) and list indices.
    """

    rule: str
    path: tuple[str | int, ...] = ()

    def __str__(self) -> str:
        where = ".".join(str(p) for p in self.path)
        return f"rule {self.rule}" + (f" at when.{where}" if where else "")


# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Const:
    value: bool
    origin: object | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Pred:
    """A leaf: predicate number ``index`` of ``FilterProgram.predicates`` (its bit index)."""

    index: int
    origin: object | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Not:
    child: Expr
    origin: object | None = field(default=None, compare=False)


@dataclass(frozen=True)
class And:
    children: tuple[Expr, ...]
    origin: object | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Or:
    children: tuple[Expr, ...]
    origin: object | None = field(default=None, compare=False)


Expr = Const | Pred | Not | And | Or


def leaves(expr: Expr) -> list[int]:
    """Predicate indices of a tree, depth first, each once."""
    out: list[int] = []
    seen: set[int] = set()

    def walk(e: Expr) -> None:
        if isinstance(e, Pred):
            if e.index not in seen:
                seen.add(e.index)
                out.append(e.index)
        elif isinstance(e, Not):
            walk(e.child)
        elif isinstance(e, (And, Or)):
            for c in e.children:
                walk(c)

    walk(expr)
    return out


def render_expr(expr: Expr) -> str:
    """Compact text of a tree: ``and(p0, or(p1, not(p2)))``."""
    if isinstance(expr, Const):
        return "true" if expr.value else "false"
    if isinstance(expr, Pred):
        return f"p{expr.index}"
    if isinstance(expr, Not):
        return f"not({render_expr(expr.child)})"
    name = "and" if isinstance(expr, And) else "or"
    return f"{name}(" + ", ".join(render_expr(c) for c in expr.children) + ")"


# --------------------------------------------------------------------------- predicates


def _canon(value: Any) -> Any:
    """JSON-able canonical form of a predicate value, keeping the type apart (1 vs 1.0 vs true)."""
    if isinstance(value, bool):
        return ["b", value]
    if isinstance(value, int):
        return ["i", value]
    if isinstance(value, float):
        return ["f", repr(value)]
    if isinstance(value, str):
        return ["s", value]
    if isinstance(value, tuple):
        return ["t", [_canon(v) for v in value]]
    if value is None:
        return ["n"]
    raise TypeError(f"unsupported predicate value {value!r}")


@dataclass(frozen=True)
class PredicateKey:
    """A predicate in canonical form; two predicates with equal keys are the same bit."""

    field: str
    derivations: tuple[str, ...]
    op: str
    value: Any  # str | int | float | bool | tuple (in, cidr) | None (is_null, not_null)
    caseless: bool = False

    def canonical(self) -> str:
        return json.dumps([self.field, list(self.derivations), self.op, _canon(self.value), self.caseless],
                          ensure_ascii=True, separators=(",", ":"))

    def fingerprint(self) -> str:
        return _fingerprint(self)

    def describe(self) -> str:
        """Human text, e.g. ``lower(cmd) regex 'curl' caseless``."""
        subject = self.field
        for d in self.derivations:
            subject = f"{d}({subject})"
        if self.value is None:
            text = f"{subject} {self.op}"
        elif isinstance(self.value, tuple):
            text = f"{subject} {self.op} [" + ", ".join(_show(v) for v in self.value) + "]"
        else:
            text = f"{subject} {self.op} {_show(self.value)}"
        return text + (" caseless" if self.caseless else "")


@lru_cache(maxsize=65536)
def _fingerprint(key: PredicateKey) -> str:
    return hashlib.sha1(key.canonical().encode()).hexdigest()[:16]


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=True)
    return repr(v)


@dataclass(frozen=True)
class PredicateInfo:
    """One distinct predicate (one bit) and where it is used."""

    index: int
    key: PredicateKey
    fingerprint: str
    rules: tuple[str, ...]
    origins: tuple[object, ...] = field(default=(), compare=False)

    @property
    def origin(self) -> object | None:
        return self.origins[0] if self.origins else None


# --------------------------------------------------------------------------- evaluation units


@dataclass(frozen=True)
class NativePredicate:
    """A cheap predicate evaluated before any pattern work.

    ``sql`` is Spark SQL text with the same meaning (null -> false), or None when
    only the matcher can evaluate it (cidr, caseless equality). ``vectorized``
    says whether the matcher evaluates it with a pyarrow.compute kernel or once
    per distinct value in Python.
    """

    leaf: int
    key: PredicateKey
    sql: str | None
    vectorized: bool
    origin: object | None = field(default=None, compare=False)


RowMode = Literal["exact", "confirm", "python"]


@dataclass(frozen=True)
class HsPattern:
    """One expression of a Hyperscan database.

    ``leaves`` are the predicate bits it decides and ``serves`` their fingerprints.
    ``python_regex``/``python_flags`` are the reference semantics (``re.search``).
    ``ascii_rows``/``other_rows`` say how a Hyperscan report is used on rows whose
    scanned value is pure ASCII / contains other characters: ``exact`` (the report
    is the answer), ``confirm`` (the expression is a superset: a report is
    confirmed with Python ``re``, no report means no match) or ``python`` (the
    Hyperscan answer is ignored and Python ``re`` decides).
    """

    pattern_id: int
    expression: bytes
    flags: int
    leaves: tuple[int, ...]
    serves: tuple[str, ...]
    python_regex: str
    python_flags: int
    ascii_rows: RowMode = "exact"
    other_rows: RowMode = "exact"
    note: str | None = None
    origin: object | None = field(default=None, compare=False)

    @property
    def exact(self) -> bool:
        return self.ascii_rows == "exact" and self.other_rows == "exact"


@dataclass(frozen=True)
class PatternDatabase:
    """All pattern predicates on one (field, derivations): scanned once per value."""

    field: str
    derivations: tuple[str, ...]
    patterns: tuple[HsPattern, ...]
    serialized: bytes | None = None  # hyperscan.dumpb output, set by the fallback pass

    @property
    def subject(self) -> str:
        s = self.field
        for d in self.derivations:
            s = f"{d}({s})"
        return s


@dataclass(frozen=True)
class FallbackPattern:
    """A pattern predicate that runs through Python ``re`` on every candidate value."""

    leaf: int
    field: str
    derivations: tuple[str, ...]
    python_regex: str
    python_flags: int
    reason: str
    rules: tuple[str, ...]
    origin: object | None = dataclasses.field(  # `field` here is the class's attribute
        default=None, compare=False)


@dataclass(frozen=True)
class RuleProgram:
    index: int
    rule_id: str
    expr: Expr
    severity: str | None = None
    tags: tuple[str, ...] = ()
    origin: object | None = field(default=None, compare=False)


@dataclass(frozen=True)
class FilterProgram:
    """The plan object for one rule set. Passes fill it in; the matcher runs it."""

    rules: tuple[RuleProgram, ...]
    predicates: tuple[PredicateInfo, ...] = ()
    natives: tuple[NativePredicate, ...] = ()
    databases: tuple[PatternDatabase, ...] = ()
    fallbacks: tuple[FallbackPattern, ...] = ()
    fingerprint_fields: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()
    digest: str = ""

    @property
    def rule_ids(self) -> tuple[str, ...]:
        return tuple(r.rule_id for r in self.rules)

    @property
    def runs_python_re(self) -> bool:
        """Does some pattern run in Python ``re`` (a fallback, or a Hyperscan report to confirm)? Such a search
        may give up (etl.matching.regex_budget) and leave a row undecided."""
        return bool(self.fallbacks) or any(not p.exact for d in self.databases for p in d.patterns)

    def with_pass(self, name: str, **changes: Any) -> FilterProgram:
        from dataclasses import replace

        return replace(self, passes=self.passes + (name,), **changes)


class RuleCompileError(ValueError):
    """A rule cannot be compiled (bad regex, bad network, ...); ``origin`` points at it."""

    def __init__(self, message: str, origin: object | None = None):
        super().__init__(message if origin is None else f"{origin}: {message}")
        self.message = message
        self.origin = origin
