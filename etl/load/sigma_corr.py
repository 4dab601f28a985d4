"""Sigma correlation rules (`correlation:` documents): read by pySigma, resolved against a filter's rules.

A correlation document is read by pySigma (``SigmaCorrelationRule.from_dict``:
type, rules, group-by, timespan, condition, aliases, generate) into a
`CorrelationDoc` (plain data, cached with the file's other entries). The
filter that loads the file resolves it (`resolve`) into a `Correlation`: its
referenced rules as etl rule ids (a reference is a rule's Sigma `id` or its
`name`), its group-by fields and aliases as event columns (the filter's field
mapping), its condition. A `sigma_correlation` transform reading the filter's
alerts runs it on event-time windows (etl.components.transforms.sigma_correlation.build).

Semantics (docs/rules-and-sigma.md "Sigma correlation rules"): windows of the timespan aligned to
the epoch (tumbling; `slides: k` makes them sliding, starting every timespan/k);
per (group, window) a value: event_count the alert rows of the referenced
rules, value_count the distinct non-null values of `field`, temporal the
number of distinct referenced rules seen, temporal_ordered the length of the
longest prefix of the rule list matched at strictly increasing event times,
value_sum / value_avg the sum / mean of `field` read as a number (rows where it
is none are left out), value_percentile the `percentile`-th percentile of those
numbers (exact, linear interpolation between the closest ranks, as numpy's
default and Spark's `percentile`), value_median the 50th; an alert when
`value <op> count` (never when the value is NULL: no number in the window).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from etl.spec.base import MAX_DURATION_S

SUPPORTED = ("event_count", "value_count", "temporal", "temporal_ordered", "value_sum", "value_avg",
             "value_percentile", "value_median")
NUMERIC = ("value_sum", "value_avg", "value_percentile", "value_median")  # over `field` read as a number
OPS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<=", "eq": "=", "neq": "!="}
VALUE = {"event_count": "count of alert rows", "value_count": "distinct values of {field}",
         "temporal": "distinct rules seen", "temporal_ordered": "rules seen in order",
         "value_sum": "sum of {field}", "value_avg": "mean of {field}",
         "value_percentile": "{percentile}th percentile of {field} (exact)", "value_median": "median of {field} (exact)"}


@dataclass(frozen=True)
class CorrelationDoc:
    """A correlation document as pySigma read it (references and fields as written)."""

    kind: str
    rules: tuple[str, ...]
    timespan: str
    seconds: int
    group_by: tuple[str, ...]
    aliases: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # alias -> ((rule reference, field), ...)
    op: str
    count: float
    field: str | None
    generate: bool
    positions: tuple[tuple[tuple, int, int], ...]  # (key path inside `correlation:`, line, col)
    unsupported: str | None = None  # why etl cannot run it
    unsupported_key: tuple = ()
    percentile: int | None = None  # value_percentile (value_median: 50)

    def at(self, key: tuple, default: tuple[int, int]) -> tuple[int, int]:
        """Line and column of `key` (e.g. ("rules", 1)), else of its parent, else `default`."""
        for k in (key, key[:1], ("correlation",)):
            for have, line, col in self.positions:
                if have == k:
                    return line, col
        return default


@dataclass(frozen=True)
class Correlation:
    """A correlation rule resolved against the rules of one filter: what the windows compute."""

    rule: str  # etl id (the file name, as for detection rules)
    sigma_id: str | None
    title: str
    level: str | None
    tags: tuple[str, ...]
    kind: str
    rules: tuple[str, ...]  # etl ids of the referenced rules, in the order written
    timespan: str
    seconds: int
    group: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # (label, ((etl rule id, event column), ...))
    op: str
    count: float
    field: str | None  # value_count and the numeric types: the event column
    generate: bool
    file: str
    line: int
    group_keys: tuple[tuple, ...] = ()  # key path of each group label in the document (for positions)
    doc: CorrelationDoc | None = None
    percentile: int | None = None  # value_percentile, value_median (50)

    def positions_of(self, key: tuple) -> tuple[int, int]:
        return self.doc.at(key, (self.line, 1)) if self.doc is not None else (self.line, 1)

    def columns(self) -> list[tuple[str, tuple]]:
        """(event column, key path in the document) of every column the correlation reads."""
        out = [(col, key) for (_, mapping), key in zip(self.group, self.group_keys, strict=True) for _, col in mapping]
        if self.field is not None:
            out.append((self.field, ("condition", "field")))
        return out

    def condition(self, value: str = "value") -> str:
        count = int(self.count) if float(self.count).is_integer() else self.count
        return f"{value} {OPS[self.op]} {count}"

    def window_text(self, slides: int) -> str:
        if slides == 1:
            return f"tumbling {self.timespan} windows"
        return f"sliding {self.timespan} windows every {_ms_text(self.seconds * 1000 // slides)}"

    def explain(self, slides: int) -> str:
        group = ", ".join(_group_text(label, m) for label, m in self.group)
        order = " -> " if self.kind == "temporal_ordered" else ", "
        return (f"{self.rule} ({self.kind}, level {self.level or 'none'}): rules {order.join(self.rules)}; "
                f"{self.window_text(slides)}" + (f" by {group}" if group else "")
                + f"; value = {VALUE[self.kind].format(field=self.field, percentile=self.percentile)}; alert when "
                f"{self.condition()}" + ("; generate: true (its rules' alerts leave the filter too)"
                                         if self.generate else ""))


    def state_text(self, slides: int, watermark: str | None) -> str:
        """What its windowed state holds and what bounds it (`etl explain`): a row per group and open window, dropped
        once the watermark passes the window's end; nothing caps the number of groups."""
        labels = ", ".join(label for label, _ in self.group)
        held = {"value_count": f", each with its distinct {self.field} values",
                "value_percentile": f", each with every {self.field} of its window",
                "value_median": f", each with every {self.field} of its window"}.get(self.kind, "")
        lag = f" + {watermark}" if watermark else ""
        if not self.group:
            return f"  state: one row per open window ({slides} per event){held}, dropped when the watermark passes its end"
        return (f"  state: one row per {labels} value and open window ({slides} per event){held}, dropped when the "
                f"watermark passes the window's end: the {labels} values of about {self.timespan}{lag} of events, "
                "however many (nothing caps them)")


def silent(correlations: Any) -> frozenset[str]:
    """Rules referenced by correlation rules none of which says `generate: true`: they emit no alert of their own
    (Sigma's default), they only feed the correlations."""
    cs = list(correlations)
    referenced = {r for c in cs for r in c.rules}
    return frozenset(referenced - {r for c in cs if c.generate for r in c.rules})


def _group_text(label: str, mapping: tuple[tuple[str, str], ...]) -> str:
    cols = {c for _, c in mapping}
    if len(cols) == 1:
        col = next(iter(cols))
        return label if col == label else f"{label} ({col})"
    return f"{label} (" + ", ".join(f"{r}: {c}" for r, c in mapping) + ")"


def _ms_text(ms: int) -> str:
    """A duration as Sigma writes one: 2m30s, 75ms, 1h."""
    out = ""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        if ms >= size:
            out += f"{ms // size}{unit}"
            ms %= size
    return out or "0s"


# ------------------------------------------------------------------------------------------- reading
_ITEM = re.compile(r"^(\s*)-\s*(.*)$")
_KEY = re.compile(r"^(\s*)([^\s:#][^:]*?)\s*:(\s|$)")


def _positions(lines: list[str], offset: int) -> tuple[tuple[tuple, int, int], ...]:
    """Key paths inside the `correlation:` block: (key,), (key, index) of list items, (key, subkey)."""
    out: list[tuple[tuple, int, int]] = []
    inside = False
    child: tuple[str, int] | None = None  # current child key and its indent
    for i, ln in enumerate(lines):
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        if not ln[0].isspace() and not ln.startswith("-"):
            inside = ln.startswith("correlation:")
            if inside:
                out.append((("correlation",), i + 1 + offset, 1))
            child = None
            continue
        if not inside:
            continue
        indent = len(ln) - len(ln.lstrip())
        m = _KEY.match(ln)
        if m and (child is None or indent <= child[1]) and not ln.lstrip().startswith("-"):
            child = (m.group(2).strip("'\""), indent)
            out.append(((child[0],), i + 1 + offset, indent + 1))
            rest = ln[m.end():].strip()
            if rest.startswith("["):  # a flow list: rules: [a, b]
                pos = m.end() + ln[m.end():].index("[") + 1
                for k, text in enumerate(rest.strip("[]").split(",")):
                    name = text.strip().strip("'\"")
                    at = ln.find(name, pos)
                    out.append(((child[0], k), i + 1 + offset, at + 1))
                    pos = at + len(name)
            continue
        if child is None:
            continue
        item = _ITEM.match(ln)
        if item:
            k = sum(1 for key, _l, _c in out if len(key) == 2 and key[0] == child[0] and isinstance(key[1], int))
            out.append(((child[0], k), i + 1 + offset, len(item.group(1)) + 3))
        elif m:
            out.append(((child[0], m.group(2).strip("'\"")), i + 1 + offset, indent + 1))
    return tuple(out)


def _error_key(message: str) -> tuple:
    low = message.lower()
    for word, key in (("condition", "condition"), ("timespan", "timespan"), ("group-by", "group-by"),
                      ("alias", "aliases"), ("generate", "generate"), ("rule reference", "rules"),
                      ("type", "type")):
        if word in low:
            return (key,)
    return ("correlation",)


def read_correlation(d: dict, lines: list[str], offset: int, title_line: int
                     ) -> tuple[CorrelationDoc, str | None, tuple[int, int]]:
    """(the document, None, position) or (a stand-in holding positions only, why pySigma cannot read it, where)."""
    from sigma.correlations import SigmaCorrelationCondition, SigmaCorrelationRule
    from sigma.exceptions import SigmaError

    positions = _positions(lines, offset)
    default = (title_line, 1)
    try:
        rule = SigmaCorrelationRule.from_dict(d)
    except (SigmaError, ValueError, TypeError, KeyError, AttributeError) as e:
        probe = CorrelationDoc("", (), "", 0, (), (), "", 0, None, False, positions)
        return probe, f"pySigma cannot read the correlation rule: {e}", probe.at(_error_key(str(e)), default)
    cond: Any = rule.condition
    simple = isinstance(cond, SigmaCorrelationCondition)
    field = cond.fieldref if simple else None
    doc = CorrelationDoc(
        kind=rule.type.name.lower(), rules=tuple(r.reference for r in rule.rules or ()),
        timespan=rule.timespan.spec, seconds=int(rule.timespan.seconds), group_by=tuple(rule.group_by or ()),
        aliases=tuple((a.alias, tuple((ref.reference, f) for ref, f in a.mapping.items())) for a in rule.aliases),
        op=cond.op.name.lower() if simple else "", count=cond.count if simple else 0,
        field=field if isinstance(field, str) else None, generate=bool(rule.generate), positions=positions,
        percentile=50 if rule.type.name == "VALUE_MEDIAN" else (cond.percentile if simple else None))
    why, key = _unsupported(doc, simple, field)
    if why is not None:
        doc = CorrelationDoc(**{**doc.__dict__, "unsupported": why, "unsupported_key": key})
    return doc, None, doc.at(("correlation",), default)


def _unsupported(doc: CorrelationDoc, simple: bool, field: Any) -> tuple[str | None, tuple]:
    if doc.kind not in SUPPORTED:
        return (f"correlation type {doc.kind} is not supported (supported: {', '.join(SUPPORTED)})", ("type",))
    if not simple:
        return "an extended (boolean) correlation condition is not supported: only gt, gte, lt, lte, eq, neq " \
               "with a count", ("condition",)
    if doc.kind in ("value_count",) + NUMERIC and not isinstance(field, str):
        return f"{doc.kind} needs one `field` in its condition", ("condition", "field")
    if doc.kind == "value_percentile" and (doc.percentile is None or not 0 <= doc.percentile <= 100):
        return ("value_percentile needs a `percentile` from 0 to 100 in its condition (e.g. percentile: 95)",
                ("condition", "percentile") if doc.percentile is not None else ("condition",))
    if not doc.rules:
        return "a correlation without `rules` is not supported", ("rules",)
    if doc.seconds > MAX_DURATION_S:  # its windows could not be built at run (a window's size is a Duration)
        return f"timespan {doc.timespan} is longer than etl's windows take (at most 365d)", ("timespan",)
    return None, ()


# ----------------------------------------------------------------------------------------- resolving
class Unresolved(ValueError):
    def __init__(self, reason: str, key: tuple):
        super().__init__(reason)
        self.reason = reason
        self.key = key


def resolve(entry: Any, etl_ids: dict[str, str], skipped: dict[str, str],
            field_of: Callable[[str], str], rule_id: str) -> Correlation:
    """The correlation of `entry` over the filter's loaded rules.

    etl_ids: Sigma id or name -> etl id of every loaded detection rule; skipped: Sigma id or name -> why a rule
    of the files is not loaded. Raises Unresolved (the reason and the key path of the culprit)."""
    doc: CorrelationDoc = entry.correlation
    ids = []
    for k, ref in enumerate(doc.rules):
        if ref in etl_ids:
            ids.append(etl_ids[ref])
        elif ref in skipped:
            raise Unresolved(f"referenced rule {ref!r} is not loaded: {skipped[ref]}", ("rules", k))
        else:
            raise Unresolved(f"referenced rule {ref!r} is not among the filter's Sigma rules (a rule's `id` or "
                             "`name`)", ("rules", k))
    aliases = dict(doc.aliases)
    group: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    keys: list[tuple] = []
    for k, label in enumerate(doc.group_by):
        if label in aliases:
            mapping = dict(aliases[label])
            for ref in mapping:
                if ref not in doc.rules:
                    raise Unresolved(f"alias {label!r} maps rule {ref!r}, which the correlation does not reference",
                                     ("aliases", label))
            missing = [ref for ref in doc.rules if ref not in mapping]
            if missing:
                raise Unresolved(f"alias {label!r} names no field for rule {missing[0]!r}", ("aliases", label))
            cols = tuple((etl_ids[ref], field_of(mapping[ref])) for ref in dict.fromkeys(doc.rules))
            keys.append(("aliases", label))
        else:
            cols = tuple((rid, field_of(label)) for rid in dict.fromkeys(ids))
            keys.append(("group-by", k))
        group.append((label, cols))
    return Correlation(
        rule=rule_id, sigma_id=entry.sigma_id, title=entry.title, level=entry.level, tags=entry.tags,
        kind=doc.kind, rules=tuple(ids), timespan=doc.timespan, seconds=doc.seconds, group=tuple(group),
        op=doc.op, count=doc.count, field=field_of(doc.field) if doc.field is not None else None,
        generate=doc.generate, file=entry.file, line=entry.line, group_keys=tuple(keys), doc=doc,
        percentile=doc.percentile)


# ------------------------------------------------------------------------------------------ reloading
# what a running sigma_correlation's windowed state is made of, per correlation: (attribute, key path, text)
_STATE = (("kind", ("type",), "type"), ("rules", ("rules",), "rules"), ("seconds", ("timespan",), "timespan"),
          ("group", ("group-by",), "group-by"), ("field", ("condition", "field"), "field"),
          ("percentile", ("condition", "percentile"), "percentile"))


def needs_restart(old: list[Correlation], new: list[Correlation]) -> list[tuple[str, int, int, str]]:
    """What in `new` (the correlation rules as the files are now) a running query holding `old` cannot apply:
    (file, line, col, message) each. A changed condition, title, level, tags or `generate`, and a removed
    correlation apply at the next micro-batch; an added correlation or a changed type, rules, timespan,
    group-by (aliases), field or percentile changes the windowed state and needs a restart."""
    before = {c.rule: c for c in old}
    out = []
    for c in new:
        was = before.get(c.rule)
        if was is None:
            out.append((c.file, c.line, 1, f"Sigma correlation rule '{c.title}' ({c.rule}) is new: a correlation added "
                        "while running needs a restart (a windowed state of its own)"))
            continue
        for attr, key, text in _STATE:
            if getattr(was, attr) != getattr(c, attr):
                line, col = c.positions_of(key)
                shown = {"seconds": (was.timespan, c.timespan)}.get(attr, (getattr(was, attr), getattr(c, attr)))
                out.append((c.file, line, col, f"Sigma correlation rule '{c.title}' ({c.rule}) changed its {text} "
                            f"({_short(shown[0])} -> {_short(shown[1])}): that changes the windowed state and needs "
                            "a restart"))
                break
    return out


def _short(v: Any) -> str:
    if isinstance(v, tuple) and v and isinstance(v[0], tuple):  # a group: its labels
        return "[" + ", ".join(label for label, _m in v) + "]"
    if isinstance(v, tuple):
        return "[" + ", ".join(map(str, v)) + "]"
    return str(v)
