"""What the graph and `etl explain` ask of each built-in transform: its output columns and its explain lines.

One mixin per transform type, a base of its spec class in etl.spec.transforms
(a plugin transform defines the two methods on its own spec class). Each
`output_columns(cx, node, inputs)` gives the node's columns from its inputs'
and checks every column it reads, reporting through `cx`, the column pass
(etl.graph.columns.ColumnPass); see etl.spec.base.Component.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import model_validator

from etl import registry
from etl.diagnostics import Span
from etl.spec.aggregates import checked_aggregates, output_type, state_engine_why

Cols = dict[str, str]


class FilterHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        if self.expr is not None:
            cx.expr(node, ("expr",), self.expr, cols, cx.where(node, "expr"))
        if cols is not None:
            from etl.spec.rules import walk_predicates

            absent = []
            for sr in cx.graph.rules.get(node.id, ()):
                if getattr(sr, "sigma", None) is not None:
                    absent.extend(_sigma_fields(cx, node, sr, cols))
                    continue
                for pred, ppath in walk_predicates(sr.rule.when, ("when",)):
                    where = f"rule '{sr.rule.id}' of filter '{node.id}'"
                    found = cx.need(cols, pred.field, sr.span_of(*ppath, "field"), where)
                    if found is not None:
                        cx.rule_value(cols, found, pred, lambda *k, p=ppath, r=sr: r.span_of(*p, *k), where)
            if absent:  # such a Sigma rule never matches: it is left out of the filter
                cx.graph.rules[node.id] = tuple(r for r in cx.graph.rules[node.id] if r.rule.id not in absent)
                if cx.graph.sigma.get(node.id) is not None:
                    cx.graph.sigma[node.id].absent = len(absent)
            if self.mode == "tag":
                from etl.spec.sigma import DETAIL_TYPE

                cols[self.tag_field] = DETAIL_TYPE if self.details else "array<string>"
            elif self.mode == "alerts":
                from etl.spec.sigma import ALERT_COLUMNS

                cols.pop(cx.find(cols, self.tag_field) or self.tag_field, None)
                cols.update(ALERT_COLUMNS)
        if self.mode == "tag":
            cx.internal(node, self.tag_field, cx.span(node, "tag_field"))
        _unread_correlations(cx, node)
        return cols

    def explain_lines(self: Any) -> list[str]:
        out = [f"mode {self.mode}" + (f", tag field {self.tag_field}" if self.mode == "tag" else "")]
        if self.expr:
            out.append(f"expr: {self.expr}")
        return out


def _unread_correlations(cx: Any, node: Any) -> None:
    """W340 for each Sigma correlation rule of a filter that no sigma_correlation transform reads."""
    stats = cx.graph.sigma.get(node.id)
    if stats is None or not stats.correlations:
        return
    if any(getattr(registry.traits_of(n.spec), "RUNS_CORRELATIONS", False) for n in cx.graph.downstream(node.id)):
        return
    for c in stats.correlations:
        cx.report.warning("W340", f"Sigma correlation rule '{c.title}' does not run: no sigma_correlation transform "
                          f"reads filter '{node.id}'", Span(c.file, c.line, 1),
                          f"add `{{id: correlated, type: sigma_correlation, input: {node.id}}}` (the filter in "
                          "`mode: alerts`)")


def _sigma_fields(cx: Any, node: Any, sr: Any, cols: Cols) -> list[str]:
    """W341 for a Sigma rule reading a column the events do not have; returns [its id] then."""
    from etl.spec.sigma import missing_fields

    absent = set(missing_fields((f for f, _ in sr.fields), cols))
    missing = [(f, sf) for f, sf in sr.fields if f in absent]
    if not missing:
        return []
    cx.report.warning("W341", f"{sr.name} (filter '{node.id}') reads "
                      + ", ".join(f"'{f}'" for f, _ in missing) + " that the events do not have: it never "
                      "matches", sr.field_span(missing[0][1]), "map the Sigma field onto an event column with "
                      "`sigma.field_mapping` (or a `preset`), or select the rules of this log source only")
    return [sr.rule.id]


class DeriveHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        for name, text in self.columns.items():
            cx.internal(node, name, cx.key_span(node, "columns", name))
            cx.expr(node, ("columns", name), text, cols, cx.where(node, f"columns.{name}"))
            if cols is not None:
                existing = cx.find(cols, name)
                typ = cx.guess_type(text, cols)
                if existing is not None and existing != name:
                    del cols[existing]
                cols[existing or name] = typ
        return cols

    def explain_lines(self: Any) -> list[str]:
        return [f"{k} = {v}" for k, v in self.columns.items()]


def _one_of_its_name(cx: Any, node: Any, out: Cols, name: str, i: int) -> None:
    """E104 for a select's second column of a name (case-insensitively, as Spark resolves names): Spark keeps both,
    a later reference to either is ambiguous (AMBIGUOUS_REFERENCE) and a file sink refuses them."""
    prior = next((k for k in out if k.lower() == name.lower()), None)
    if prior is not None:
        cx.report.error("E104", f"select '{node.id}' gives two columns named {prior!r} and {name!r} (Spark resolves "
                        "names case-insensitively: a reference to either is ambiguous)", cx.span(node, "fields", i),
                        f"name one otherwise: ... AS {name}_2")


class SelectHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        out: Cols | None = {}
        for i, text in enumerate(self.fields or []):
            p = cx.expr(node, ("fields", i), text, cols, cx.where(node, f"fields[{i}]"))
            if out is None or p is None:
                out = None if p is None else out
                continue
            if p.names:  # a generator: inline(rows) AS (a, b)
                for n, t in zip(p.names, cx.generated_types(p, cols), strict=True):
                    cx.internal(node, n, cx.span(node, "fields", i))
                    out[n] = t
            elif p.star:
                out = None if cols is None else {**out, **cols}
            elif p.bare:
                src = cx.find(cols, p.name) if cols is not None else None
                _one_of_its_name(cx, node, out, src or p.name, i)
                out[src or p.name] = cols[src] if src else "unknown"
            else:
                cx.internal(node, p.name, cx.span(node, "fields", i))
                _one_of_its_name(cx, node, out, p.name or text.strip(), i)
                out[p.name or text.strip()] = cx.guess_type(text, cols)
        if self.fields is None:
            out = None if cols is None else dict(cols)
        for old, new in self.rename.items():
            cx.internal(node, new, cx.span(node, "rename", old))
            found = cx.need(out, old, cx.key_span(node, "rename", old), cx.where(node, "rename"))
            if found is not None and out is not None:
                out = {(new if k == found else k): v for k, v in out.items()}
        for i, name in enumerate(self.drop):
            found = cx.need(out, name, cx.span(node, "drop", i), cx.where(node, "drop"))
            if found is not None and out is not None:
                out.pop(found, None)
        return out

    def explain_lines(self: Any) -> list[str]:
        out = []
        if self.fields is not None:
            out.append("fields: " + ", ".join(self.fields))
        if self.rename:
            out.append("rename: " + ", ".join(f"{a} -> {b}" for a, b in self.rename.items()))
        if self.drop:
            out.append("drop: " + ", ".join(self.drop))
        return out


class GrokHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        from etl.grok import GrokError, columns_of, expand

        cols = cx.first(inputs)
        found = cx.need(cols, self.field, cx.span(node, "field"), cx.where(node, "field"))
        try:
            g = expand(self.regex_source(), self.custom_patterns or None, self.patterns, self.named_captures_only)
            stay = {k: v for k, v in (cols or {}).items() if self.keep_original or k != found}
            leaves = g.outputs({} if self.target else stay, tuple(self.overwrite))
            out = columns_of(leaves)
            if self.target is not None and not out:
                raise GrokError("grok: the pattern captures no field to put into the target", hint=(
                    "name a capture: %{IP:client}; to test whether a line matches, use REGEXP / rlike"))
        except GrokError as e:
            hint = e.hint
            if e.suggestions:
                hint = "did you mean " + " or ".join(f"'{s}'" for s in e.suggestions) + "?"
            msg = e.message.removeprefix("grok: ").split(" (did you mean")[0]
            span = cx.span(node, "pattern")
            for keys, text in self._pattern_texts():
                if e.name and cx.smap is not None and f"%{{{e.name}" in text:
                    span = cx.inner(node, keys, text, text.index(f"%{{{e.name}") + 2)
                    break
            if hint is None:
                hint = ("pattern names are those of Logstash (e.g. IP, NUMBER, COMBINEDAPACHELOG) or your "
                        "custom_patterns" if e.name else "custom_patterns values are regular expressions")
            cx.report.error("E302", f"grok pattern of '{node.id}': {msg}", span, hint)
            return None
        if self.target is not None:
            return self._target_columns(cx, node, cols, found, leaves)
        for name in out:
            cx.internal(node, name, self._capture_span(cx, node, name))
        for leaf in leaves:
            if leaf.mode == "replace":
                cx.report.warning("W304", f"grok '{node.id}': capture '{leaf.path[0]}' replaces the input's "
                                  f"{stay[leaf.path[0]]} column of that name (Logstash would keep the column and "
                                  f"drop the capture)", self._capture_span(cx, node, leaf.path[0]),
                                  "capture into another name, or list it in `overwrite` to say you mean it")
        if cols is None:
            return None
        if not self.keep_original and found is not None:
            cols.pop(found, None)
        for name in out:  # as etl.compile.transforms.grok: a captured name leaves its place in the
            cols.pop(name, None)  # input's columns and comes with the captures, in their order
        cols.update(out)
        return cols

    def _target_columns(self: Any, cx: Any, node: Any, cols: Cols | None, found: str | None,
                        leaves: tuple) -> Cols | None:
        """`target`: the captures are the fields of one new struct column (etl.grok.columns_of's types)."""
        cx.internal(node, self.target, cx.span(node, "target"))
        if cols is None:
            return None
        if cx.find(cols, self.target) is not None:
            cx.report.error("E102", f"grok '{node.id}': target '{self.target}' is a column of its input",
                            cx.span(node, "target"), "name a new column: the captures go into a new struct")
            return None
        if not self.keep_original and found is not None:
            cols.pop(found, None)
        from etl.grok import columns_of, under

        cols[self.target] = columns_of(under(leaves, self.target))[self.target]
        return cols

    def regex_source(self: Any) -> str:
        """The one grok pattern of the transform (its several patterns combined: etl.grok.combine)."""
        from etl.grok import combine

        return combine(self.pattern, self.break_on_match)

    def _pattern_texts(self: Any) -> list[tuple[tuple, str]]:
        if isinstance(self.pattern, str):
            return [(("pattern",), self.pattern)]
        return [(("pattern", k), p) for k, p in enumerate(self.pattern)]

    def _capture_span(self: Any, cx: Any, node: Any, name: str) -> Any:
        """Where grok capture `name` is written: in the pattern, else in the custom pattern defining it."""
        for keys, text in self._pattern_texts() + [(("custom_patterns", k), v)
                                                  for k, v in self.custom_patterns.items()]:
            for mark in (f":{name}}}", f":{name}:", f"<{name}>"):
                if mark in text:
                    return cx.inner(node, keys, text, text.index(mark) + 1)
        return cx.span(node, "pattern")

    def explain_lines(self: Any) -> list[str]:
        from etl.grok import library_version

        several = not isinstance(self.pattern, str)
        shown = " | ".join(self.pattern) if several else self.pattern
        return [f"{self.field} =~ {shown}" + ("" if self.keep_original else f" (drops {self.field})")
                + (f" (break_on_match: {str(self.break_on_match).lower()})" if several else ""),
                f"patterns: {self.patterns} ({library_version()})"
                + (f", overwrite: {', '.join(self.overwrite)}" if self.overwrite else "")
                + ("" if self.named_captures_only else ", named_captures_only: false")
                + (", keep_empty_captures: true" if self.keep_empty_captures else ""),
                *([f"target: {self.target} (NULL when the line does not match)"] if self.target else []),
                f"on error: {self.on_error}"]


class ParseHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cx.check_types(node, self.schema_)
        for name in self.schema_:
            cx.internal(node, name, cx.key_span(node, "schema", name))
        cols = cx.first(inputs)
        found = cx.need(cols, self.field, cx.span(node, "field"), cx.where(node, "field"))
        if cols is None:
            return None
        if not self.keep_original and found is not None:
            cols.pop(found, None)
        for name, typ in self.schema_.items():
            cols[cx.find(cols, name) or name] = typ
        return cols

    def explain_lines(self: Any) -> list[str]:
        return [f"{self.field} as {self.format}" + ("" if self.keep_original else f" (drops {self.field})"),
                f"on error: {self.on_error}"]


class UnionHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        if not inputs or any(c is None for _, c in inputs):
            return None
        out: Cols = {}
        for _, c in inputs:
            for k, v in c.items():
                if cx.find(out, k) is None:
                    out[k] = v
        for e, c in inputs:
            missing = [k for k in out if cx.find(c, k) is None]
            if missing:
                cx.report.warning("W312", f"input '{e.ref}' of union '{node.id}' lacks column"
                                  f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} (filled with null)",
                                  e.span or node.span, "give every input of a union the same columns")
        return out

    def explain_lines(self: Any) -> list[str]:
        return []


class RouteHooks:
    @classmethod
    def raw_refs(cls, item: dict) -> tuple[tuple[str, ...] | None, str | None]:
        routes = item.get("routes")
        if not isinstance(routes, dict) or not all(isinstance(k, str) for k in routes):
            return None, None
        default = item.get("default")
        return tuple(routes) + ((default,) if isinstance(default, str) else ()), None

    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        for label, cond in self.routes.items():
            cx.expr(node, ("routes", label), cond, cols, cx.where(node, f"routes.{label}"))
        return cols

    def explain_lines(self: Any) -> list[str]:
        out = [f"{label}: {cond}" for label, cond in self.routes.items()]
        if self.default:
            out.append(f"{self.default}: (no route matched)")
        if self.exclusive:
            out.append("exclusive: first matching route only")
        return out


class WindowHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        if self.event_time is not None:
            cx.event_time_field(node, ("event_time", "field"), self.event_time.field, cols)
        out: Cols | None = {}
        for i, g in enumerate(self.group_by):
            p = cx.expr(node, ("group_by", i), g, cols, cx.where(node, f"group_by[{i}]"))
            if p is None:
                out = None
            elif out is not None and p.bare:
                src = cx.find(cols, p.name) if cols is not None else None
                out[src or p.name] = cols[src] if src else "unknown"
            elif out is not None:
                out[p.name or g.strip()] = cx.guess_type(g, cols)
        if out is None:
            return None
        out["window_start"] = "timestamp"
        out["window_end"] = "timestamp"
        for _i, agg, in_type, udaf in checked_aggregates(cx, node, cols, self.aggregates, state_engine_why(self)):
            out[agg.as_] = udaf.returns if udaf is not None else output_type(agg.fn, in_type)
        if self.having is not None:
            cx.expr(node, ("having",), self.having, out, cx.where(node, "having"))
        out.update(dict.fromkeys(self.emit.flag_columns(), "boolean"))  # added after `having`, which cannot read them
        return out

    def explain_lines(self: Any) -> list[str]:
        shape = {"tumbling": f"size {self.size}", "sliding": f"size {self.size} slide {self.slide}",
                 "cumulating": f"size {self.size} step {self.step}", "session": f"gap {self.gap}"}[self.kind]
        if self.offset is not None:
            shape += f" offset {self.offset}"
        et = self.event_time
        tm = f"{self.time} time" + (f" {et.field} (watermark {et.watermark})" if et else "")
        out = [f"{self.kind} {shape}, {tm}"]
        if self.group_by:
            out.append("group by: " + ", ".join(self.group_by))
        out.append("aggregates: " + ", ".join(f"{a.as_} = {a.fn}({a.field or '*'}"
                                              + (f", {a.n}" if a.n else "") + ")" for a in self.aggregates))
        if self.having:
            out.append(f"having: {self.having}")
        emit = self.emit
        if emit.early is not None or emit.late != "drop":  # shown so SQL's EMIT and YAML's emit compare too
            late = "late events " + {"drop": "dropped", "dead_letter": "to dead letters"}.get(emit.late, "")
            if emit.late == "update":
                late += (f"update the window for {emit.allowed_lateness}"
                         + (f" (every {emit.every})" if emit.every is not None else "")
                         + f", later ones {'dropped' if emit.too_late == 'drop' else 'to dead letters'}")
            early = f"early every {emit.early}" + (" (processing-time timers)" if emit.timers == "processing" else "")
            out.append("emit: " + ", ".join(([early] if emit.early is not None else []) + [late]))
        return out


class JoinHooks:
    """What the three joins of two inputs share (join, temporal_join, regular_join): their columns, their state, and
    exactly two inputs, named by INPUT_NAMES in the error."""

    INPUT_NAMES: ClassVar[str] = "[left, right]"
    STATEFUL: ClassVar[bool] = True
    PASSES_UPDATES: ClassVar[bool] = False

    @model_validator(mode="after")
    def _two_inputs(self: Any) -> Any:
        if len(self.inputs) != 2:
            raise ValueError(f"a {self.type} needs exactly two inputs: {self.INPUT_NAMES}")
        return self

    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        if len(inputs) != 2:
            return None
        (le, left), (re_, right) = inputs
        for i, key in enumerate(self.on):
            cx.need(left, key, cx.span(node, "on", i), f"join '{node.id}' (on[{i}], left input '{le.ref}')")
            cx.need(right, key, cx.span(node, "on", i), f"join '{node.id}' (on[{i}], right input '{re_.ref}')")
        if self.left_time is not None:
            cx.event_time_field(node, ("left_time", "field"), self.left_time.field, left)
        if self.right_time is not None:
            cx.event_time_field(node, ("right_time", "field"), self.right_time.field, right)
        if left is None or right is None:
            cx.expr(node, ("condition",), self.condition, None, cx.where(node, "condition"))
            return None
        out = dict(left)  # as etl.compile.joining: left columns, then the right's non-key ones, a name the
        taken = {c.lower() for c in left}  # left already uses (case-insensitively) renamed <right input id>_<name>
        for k, v in right.items():
            if k not in self.on:
                out[f"{re_.src}_{k}" if k.lower() in taken else k] = v
        cx.expr(node, ("condition",), self.condition, out, cx.where(node, "condition"))
        return dict(left) if self.how in ("semi", "anti") else out  # a semi / anti join: the left rows

    def explain_lines(self: Any) -> list[str]:
        return [f"{self.how} join on {', '.join(self.on)} within {self.within}"
                + (f" where {self.condition}" if self.condition else "")]


class LookupHooks:
    @classmethod
    def raw_refs(cls, item: dict) -> tuple[tuple[str, ...] | None, str | None]:
        table = item.get("table")
        return None, table if isinstance(table, str) else None

    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        table_edge = next((e for e in node.inputs if e.role == "table"), None)
        table = cx.columns_of(table_edge.ref) if table_edge is not None else None
        for ev_col, tab_col in self.on.items():
            cx.need(cols, ev_col, cx.key_span(node, "on", ev_col), cx.where(node, "on"))
            cx.need(table, tab_col, cx.span(node, "on", ev_col), f"lookup table '{self.table}'")
        for i, f in enumerate(self.fields or []):
            cx.need(table, f, cx.span(node, "fields", i), f"lookup table '{self.table}'")
        if cols is None or table is None:
            return None
        keys = {v.lower() for v in self.on.values()}
        add = self.fields if self.fields is not None else [c for c in table if c.lower() not in keys]
        taken = {c.lower() for c in cols}  # as etl.compile.lookups: a table column whose name the events have
        for f in add:  # (case-insensitively) is renamed <table id>_<name>
            src = cx.find(table, f)
            if src is not None:
                cols[f"{self.table}_{src}" if src.lower() in taken else src] = table[src]
        return cols

    def explain_lines(self: Any) -> list[str]:
        on = ", ".join(f"{a} = {self.table}.{b}" for a, b in self.on.items())
        return [f"{self.how} lookup on {on}, store {self.store}"
                + (f", refresh {self.refresh}" if self.refresh is not None else "")]


class DedupeHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        for i, k in enumerate(self.keys):
            cx.need(cols, k, cx.span(node, "keys", i), cx.where(node, f"keys[{i}]"))
        if self.event_time is not None:
            cx.event_time_field(node, ("event_time", "field"), self.event_time.field, cols)
        return cols

    def explain_lines(self: Any) -> list[str]:
        et = self.event_time
        out = ["keys: " + ", ".join(self.keys) + (f", event time {et.field} (watermark {et.watermark})" if et else "")]
        if self.keep == "last":
            out.append("keep last: a key's newest event by event time, once per micro-batch that brought a newer one "
                       "(updates keyed by " + ", ".join(self.keys) + ")")
        return out


class EventTimeJoinHooks(JoinHooks):
    """The joins whose state the watermark closes (join, temporal_join): each input's event time (left_time,
    right_time, default its source's) is checked (E321)."""

    WATERMARK_STATE: ClassVar[bool] = True
    EVENT_TIME_USE: ClassVar[str] = "join"

    def input_times(self: Any) -> tuple[Any, ...] | None:
        return (self.left_time, self.right_time)
