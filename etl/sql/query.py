"""A query (SELECT / UNION ALL) -> transforms on the graph, each a spec mapping like YAML's.

FROM a table or view, a subquery, or Flink's window table function; at most one
JOIN: `FOR SYSTEM_TIME AS OF` -> lookup, otherwise a stream-stream join with a
time bound; WHERE -> filter (rules + expr, etl.sql.where); GROUP BY with a
window -> window (etl.sql.window), without one -> aggregate (etl.sql.aggregate);
ROW_NUMBER() -> dedupe or top_n (etl.sql.dedup, etl.sql.topn); the SELECT list
-> a select, only when it changes the columns. Node ids: `<base>_<step>`; a view's last node takes the
view's name.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from etl.diagnostics import Span, did_you_mean
from etl.sql.aggregate import emit_every, no_updates
from etl.sql.dedup import compile_dedupe, row_number_item
from etl.sql.division import flink_type
from etl.sql.grok import grok_calls
from etl.sql.relation import Rel, Scope, Skip, has_agg, is_star, pos, quote_name, sql_text, tvf_of_table
from etl.sql.script import SqlSyntax
import etl.sql.where as W
from etl.sql.window import compile_window, emit_spec
from etl.sql.window_join import semi_anti, semi_anti_conjunct, window_side
from etl.sql.window_rows import tvf_of


class QueryCompiler:
    def __init__(self, builder: Any):
        self.b = builder
        self.depth = 0  # of compile calls: a statement's query is depth 1
        self.ambiguous: list[SqlSyntax] = []  # the statement's ambiguous references (E310), each reported

    # ------------------------------------------------------------------ entry
    def compile(self, q: exp.Expression, base: str, out_names: list[str] | None = None,
                emit: dict | None = None) -> Rel:
        """The relation of a query; a statement's ambiguous references are all reported (E310), the first stops
        it once its whole query has been read."""
        if self.depth == 0:
            self.ambiguous = []
        self.depth += 1
        try:
            rel = self._compile(q, base, out_names, emit)
        except SqlSyntax as e:
            if self.depth == 1 and self.ambiguous:
                e.more = [a for a in self.ambiguous if a.span != e.span]
            raise
        finally:
            self.depth -= 1
        if self.depth == 0 and self.ambiguous:
            first, *rest = self.ambiguous
            first.more = rest
            raise first
        return rel

    def _compile(self, q: exp.Expression, base: str, out_names: list[str] | None = None,
                 emit: dict | None = None) -> Rel:
        if isinstance(q, exp.Subquery):
            return self.compile(q.this, base, out_names, emit)
        if isinstance(q, exp.Union):
            if q.args.get("distinct"):
                raise SqlSyntax("UNION (distinct) is not supported on streams", pos(self.b, q),
                                "write UNION ALL", "E011")
            rels = [self.compile(s, base) for s in _union_branches(q)]
            names = rels[0].cols
            uid = self.b.new_id(f"{base}_union")
            self.b.add_transform({"id": uid, "type": "union", "inputs": [r.id for r in rels]}, pos(self.b, q))
            rel = replace(rels[0], id=uid, cols=names, table=None, static=False)
            if emit:
                self._emit_upstream(rel, emit)  # E011: a union has no single window upstream
            return self._rename(rel, out_names, base) if out_names else rel
        if not isinstance(q, exp.Select):
            raise SqlSyntax(f"unsupported query: {type(q).__name__}", pos(self.b, q), code="E011")
        return self._select(q, base, out_names, emit)

    # ------------------------------------------------------------------ select
    # C901: refactored after issue 39's move
    def _select(self, q: exp.Select, base: str, out_names: list[str] | None, emit: dict | None) -> Rel:  # noqa: C901
        for key, what in (("order", "ORDER BY"), ("limit", "LIMIT"), ("distinct", "SELECT DISTINCT"),
                          ("with", "WITH"), ("offset", "OFFSET"), ("qualify", "QUALIFY")):
            if q.args.get(key):
                raise SqlSyntax(f"{what} is not supported in a streaming query", pos(self.b, q.args[key]),
                                code="E011")
        frm = q.args.get("from_") or q.args.get("from")
        rn_item = row_number_item(frm.this) if frm is not None else None
        for w in q.find_all(exp.Window):
            if rn_item is None or w is not rn_item.this:
                raise SqlSyntax("OVER (...) is supported as ROW_NUMBER() deduplication in a subquery only",
                                pos(self.b, w), "SELECT ... FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k "
                                "ORDER BY ts) AS rn FROM t) WHERE rn = 1", "E011")
        if q.args.get("laterals"):
            raise SqlSyntax("LATERAL TABLE is not supported yet", pos(self.b, q.args["laterals"][0]), code="E011")
        if frm is None:
            raise SqlSyntax("a query needs FROM", pos(self.b, q), code="E010")
        scope = Scope()
        where = q.args.get("where")
        where = where.this if where is not None else None
        semi = semi_anti_conjunct(where) if not q.args.get("joins") and rn_item is None else None
        windowed = window_side(self, frm.this, scope, base) if q.args.get("joins") or semi is not None else None
        if windowed is None:
            _no_window_join(self.b, frm.this, q.args.get("joins") or [])
        if rn_item is not None:
            (rel, where), tvf = compile_dedupe(self, q, frm.this, rn_item, scope, base), None
        elif windowed is not None:
            rel, tvf = windowed, None
            if semi is not None:
                rel, where = semi_anti(self, semi, rel, scope, where, base)
        else:
            rel, tvf = self._from(frm.this, scope, base)
        joins = q.args.get("joins") or []
        if len(joins) > 1:
            raise SqlSyntax("one JOIN per query: join the result of a view to the next table",
                            pos(self.b, joins[1]), code="E011")
        if joins:
            no_updates(self.b, rel, joins[0], "a JOIN")
            where = self.b.joins.comma(joins[0], where)
            rel = self.b.joins.join(joins[0], rel, scope, base)
        rel = grok_calls(self, q, rel, scope, base)
        if where is not None:
            rel = self._where(where, rel, scope, base)
        group = q.args.get("group")
        if group is not None or tvf is not None or has_agg(q):
            return compile_window(self, q, rel, scope, base, out_names, tvf, emit)
        if q.args.get("having"):
            raise SqlSyntax("HAVING needs GROUP BY", pos(self.b, q.args["having"]), code="E010")
        exprs = _join_stars(self.b, q.expressions, scope) if len(scope.entries) > 1 else q.expressions
        items = [self.item(e, scope) for e in exprs]
        out = self.project(rel, items, base, out_names, pos(self.b, q))
        if emit:
            self._emit_upstream(out, emit)
        return out

    def _emit_upstream(self, rel: Rel, emit: dict) -> None:
        """EMIT on a query over a windowed view (rsqldb writes it so): the window it reads emits early (a continuous
        aggregate's view: its `every`)."""
        by_id = {t["id"]: (i, t) for i, t in enumerate(self.b.transforms)}
        nid = rel.id
        while nid in by_id:
            i, t = by_id[nid]
            if t["type"] == "window":
                t["emit"] = emit_spec(self.b, emit)
                self.b.smap.put(("transforms", i, "emit"), emit["span"])
                return
            if t["type"] == "aggregate":  # a GROUP BY without a window: how often a key's updated row goes out
                t["every"] = emit_every(emit)
                self.b.smap.put(("transforms", i, "every"), emit["span"])
                return
            if len(t.get("inputs", ())) != 1:
                break
            nid = t["inputs"][0]
        raise SqlSyntax("EMIT applies to a GROUP BY (in this query or the view it reads)", emit["span"],
                        code="E011")

    def _from(self, src: exp.Expression, scope: Scope, base: str) -> tuple[Rel, Any]:
        if isinstance(src, exp.Subquery):
            rel = self.compile(src.this, base)
            scope.add(src.alias or rel.id, rel)
            return rel, None
        if isinstance(src, exp.Table) and isinstance(src.this, exp.Anonymous) and src.this.name.upper() == "TABLE":
            inner = src.this.expressions[0] if src.this.expressions else None
            if not (isinstance(inner, exp.Anonymous) and inner.name.upper() in ("TUMBLE", "HOP", "CUMULATE")):
                raise SqlSyntax("expected TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL ...)) or HOP",
                                pos(self.b, src), code="E011")
            args = inner.expressions
            if not args or not isinstance(args[0], exp.Table):
                raise SqlSyntax("a window table function reads `TABLE name` first", pos(self.b, inner))
            rel = self.table_rel(args[0])
            scope.add(src.alias or args[0].name, rel)
            return rel, inner
        if isinstance(src, exp.Table):
            rel = self.table_rel(src)
            scope.add(src.alias or src.name, rel)
            return rel, None
        raise SqlSyntax(f"unsupported FROM item: {type(src).__name__}", pos(self.b, src), code="E011")

    def table_rel(self, t: exp.Table) -> Rel:
        name = t.name
        rel = self.b.rels.get(name.lower())
        if name.lower() in self.b.sink_names:
            raise SqlSyntax(f"table '{name}' is a sink (INSERT INTO it): it cannot be read", pos(self.b, t),
                            code="E203")
        if name.lower() in self.b.broken:
            raise Skip
        if rel is None:
            raise SqlSyntax(f"unknown table or view '{name}'", pos(self.b, t),
                            did_you_mean(name, self.b.visible_names()) or "declare it with CREATE TABLE or CREATE VIEW",
                            "E201")
        return rel

    # ------------------------------------------------------------------ where
    def _where(self, cond: exp.Expression, rel: Rel, scope: Scope, base: str) -> Rel:
        cond = self.resolve(cond, scope)
        rules, ruled, rest = W.split(cond)
        fid = self.b.new_id(f"{base}_where")
        spec: dict[str, Any] = {"id": fid, "type": "filter", "inputs": [rel.id]}
        at = pos(self.b, cond)
        expr_path = None
        if rest:
            spec["expr"] = " AND ".join(sql_text(c, paren=len(rest) > 1) for c in rest)
            expr_path = rest
        if rules:
            spec["rules"] = rules
        i = self.b.add_transform(spec, at)
        self.b.set_types(fid, self.b.types.get(rel.id.lower(), {}))  # a filter keeps its input's columns
        if expr_path is not None:
            self.b.note_expr(("transforms", i, "expr"), rest)
        for j, source in enumerate(ruled if len(rules) > 1 else [None]):
            self._rule_spans(("transforms", i, "rules", j, "when"), source if source is not None else cond,
                             rules[j]["when"] if rules else None)
        return replace(rel, id=fid, table=None, static=False)

    def _rule_spans(self, path: tuple, node: exp.Expression, when: Any) -> None:
        """Positions of each rule predicate (and its pattern literal) in the WHERE clause."""
        if when is None:
            return
        self.b.smap.put(path, pos(self.b, node))
        if "all" in when or "any" in when:
            key = "all" if "all" in when else "any"
            parts = W.conjuncts(node) if key == "all" else W.disjuncts(node)
            if len(parts) != len(when[key]):  # several conjuncts folded into one `all`
                return
            for k, (part, sub) in enumerate(zip(parts, when[key], strict=True)):
                self._rule_spans(path + (key, k), part, sub)
            return
        for op in ("regex", "like"):
            if op in when:
                lit = W.unparen(node).expression
                self.b.smap.literals[path + (op,)] = pos(self.b, lit)
                self.b.smap.put(path + (op,), pos(self.b, lit))
        self.b.smap.put(path + ("field",), pos(self.b, node))

    # ------------------------------------------------------------------ columns
    def resolve(self, node: exp.Expression, scope: Scope) -> exp.Expression:
        """Qualified columns (a.x) -> the output column names of the query's input."""
        def fix(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Column) and n.table:
                q = n.table.lower()
                field = _struct_field(n, scope)
                if field is not None:
                    return field
                if q not in scope.entries:
                    raise SqlSyntax(f"unknown table or alias '{n.table}'", pos(self.b, n),
                                    did_you_mean(n.table, list(scope.entries)) or None, "E201")
                if isinstance(n.this, exp.Star):
                    return n
                rel, rename = scope.entries[q]
                if (q, n.name) in scope.lookup_keys:
                    self.b.report.warning(
                        "W015", f"{n.table}.{n.name} of a LEFT lookup join reads the event's "
                        f"{scope.lookup_keys[(q, n.name)]}: in a row no table row matched it is the event's key, "
                        "Flink's is NULL", pos(self.b, n), f"read {n.table}.<another column> IS NULL to tell an "
                        "unmatched row")
                new = exp.column(rename.get(n.name, n.name), quoted=n.this.args.get("quoted"))
                new.this.meta.update(n.this.meta)
                return _padded(self.b, new, scope.padded.get((q, n.name)))
            if isinstance(n, exp.Column) and scope.joined and not isinstance(n.this, exp.Star):
                found = _ambiguous(self.b, n, scope)
                if found is not None and all(a.span != found.span for a in self.ambiguous):
                    self.ambiguous.append(found)
                owners = [t for (a, c), t in scope.padded.items() if c == n.name and not n.table
                          and n.name in (scope.entries[a][0].cols or ())]
                if len(owners) == 1 and isinstance(n.parent, exp.Expression):
                    return _padded(self.b, n, owners[0])
            return n

        return self.b.functions.translate(node.transform(fix, copy=False), self.b.scope_types(scope))

    def item(self, e: exp.Expression, scope: Scope) -> tuple[str | None, exp.Expression]:
        """(output name or None for `*`, resolved expression) of one SELECT item."""
        if isinstance(e, exp.Star):
            return None, e
        if isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
            return None, e
        alias = e.alias if isinstance(e, exp.Alias) else None
        body = e.this if isinstance(e, exp.Alias) else e
        body = self.resolve(body, scope)
        if alias is None:
            alias = body.name if isinstance(body, exp.Column) else None
        return alias, body

    # ------------------------------------------------------------------ projection
    def project(self, rel: Rel, items: list, base: str, out_names: list[str] | None, at: Span) -> Rel:
        fields: list[str] = []
        names: list[str] = []
        exprs: list = []
        window: list[int] = []  # indices of the window start/end columns among `names`
        types = self.b.types.get(rel.id.lower(), {})
        typed: list[str | None] = []  # the known type of each of `names` (etl.sql.division)
        for k, (name, body) in enumerate(items):
            if isinstance(body, exp.Column) and body.name in rel.window:
                window.append(len(names))
            if is_star(body):
                window += [len(names) + i for i, c in enumerate(rel.cols or []) if c in rel.window]
                if rel.cols is None:
                    if len(items) == 1 and out_names is None:
                        return rel  # nothing to change: no node
                    raise SqlSyntax("`*` over a relation whose columns are unknown here", at, code="E011")
                for c in rel.cols:
                    fields.append(c)
                    names.append(c)
                    typed.append(types.get(c.lower()))
                continue
            if not name:
                name = f"EXPR${k}"
            text = sql_text(body)
            fields.append(text if isinstance(body, exp.Column) and body.name == name else f"{text} AS {quote_name(name)}")
            names.append(name)
            exprs.append(body)
            typed.append(flink_type(body, types))
        if out_names is not None:
            if len(out_names) != len(names):
                raise SqlSyntax(f"the query gives {len(names)} columns, the target takes {len(out_names)}", at,
                                code="E104")
            fields = [f if n == o else f"{_strip_alias(f)} AS {quote_name(o)}" for f, n, o in zip(fields, names, out_names, strict=True)]
            names = list(out_names)
        keep = self.b.keep_flags or out_names is None  # an INSERT into a sink upserting by key drops them
        if rel.cols is not None and names == rel.cols and all(f == n for f, n in zip(fields, names, strict=True)) \
                and (keep or not rel.flags) and not rel.hidden:
            return rel  # nothing to change: no node
        if keep:
            fields += rel.flags
        sid = self.b.new_id(f"{base}_select")
        i = self.b.add_transform({"id": sid, "type": "select", "inputs": [rel.id], "fields": fields}, at)
        self.b.set_types(sid, {n: t for n, t in zip(names, typed, strict=True) if t is not None})
        self.b.note_expr(("transforms", i, "fields"), exprs)
        for k in range(len(fields)):
            self.b.note_expr(("transforms", i, "fields", k), exprs)
        et = rel.event_time if rel.event_time in names else None
        return replace(rel, id=sid, cols=names, event_time=et, table=None, static=False,
                       flags=rel.flags if keep else (), window=tuple(names[i] for i in window), hidden=())

    def _rename(self, rel: Rel, out_names: list[str], base: str) -> Rel:
        return self.project(rel, [(c, exp.column(c)) for c in rel.cols or []], base, out_names,
                            self.b.stmt_span)



def _join_stars(b: Any, exprs: list, scope: Scope) -> list:
    """Flink's `*` over a join: every column of each side in FROM order (the right side's keys too), `t.*` the
    columns of t; a name an earlier column has gets Calcite's suffix (k, k0, k1 ...)."""
    out: list = []
    taken: set[str] = set()
    for e in exprs:
        if not is_star(e):
            out.append(e)
            name = e.alias_or_name.lower() if isinstance(e, (exp.Alias, exp.Column)) else ""
            taken.add(name)
            continue
        aliases = list(scope.entries) if isinstance(e, exp.Star) else [e.table.lower()]
        for a in aliases:
            if a not in scope.entries:
                raise SqlSyntax(f"unknown table or alias '{e.table}'", pos(b, e),
                                did_you_mean(e.table, list(scope.entries)) or None, "E201")
            rel, _ = scope.entries[a]
            if rel.cols is None:
                raise SqlSyntax("`*` over a relation whose columns are unknown here", pos(b, e), code="E011")
            for c in rel.cols:
                name, k = c, 0
                while name.lower() in taken:
                    name, k = f"{c}{k}", k + 1
                taken.add(name.lower())
                col = exp.column(c, table=a)
                col.this.meta.update((e.this if isinstance(e, exp.Column) else e).meta)
                out.append(exp.alias_(col, name))
    return out


def _no_window_join(b: Any, left: exp.Expression, joins: list) -> None:
    """Flink's window join (both sides a window table function's rows, joined on window_start and window_end):
    E011 at the JOIN, naming what to write instead."""
    for j in joins:
        sides = [left, j.this]
        if any(isinstance(s, exp.Subquery) and tvf_of(s.this) is not None or tvf_of_table(s) for s in sides):
            raise SqlSyntax("a window join (the rows of window table functions joined on window_start and "
                            "window_end) is not supported", pos(b, j), "join the tables with a time bound first "
                            "(ON a.k = b.k AND b.ts BETWEEN a.ts - INTERVAL '5' MINUTE AND a.ts + INTERVAL '5' MINUTE)"
                            ", then window the joined rows in the next query", "E011")


def _struct_field(n: exp.Column, scope: Scope) -> exp.Expression | None:
    """`g.client` (or `v.g.client`) where g is no alias but a column of the query's input: the struct's field
    (a GROK(...) of a view, a ROW column), as Flink reads it."""
    db = n.args.get("db")
    if isinstance(n.this, exp.Star) or n.args.get("catalog") or (
            n.table.lower() in scope.entries and db is None):
        return None
    entries = [scope.entries[db.name.lower()]] if db is not None and db.name.lower() in scope.entries else \
        [] if db is not None else list(scope.entries.values())
    for rel, rename in entries:
        name = next((c for c in rel.cols or [] if c.lower() == n.table.lower()), None)
        if name is not None:
            col = exp.column(rename.get(name, name))
            col.this.meta.update(n.args["table"].meta)
            return exp.Dot(this=col, expression=n.this)
    return None


def _padded(b: Any, col: exp.Column, time: str | None) -> exp.Expression:
    """A join key read through the side an outer join pads: NULL in a padded row, as in Flink (the join's key
    column holds the other side's key there); a padded row is the one whose event time is NULL."""
    if time is None:
        return col
    if not time:
        raise SqlSyntax(f"the outer join pads this side, whose event time is unknown here: its key '{col.name}' "
                        "cannot be told NULL in a padded row", pos(b, col), "read the key of the other side, or "
                        "join a table or a view that keeps its WATERMARK column", "E011")
    return exp.Case(ifs=[exp.If(this=exp.column(time).is_(exp.null()), true=exp.null())], default=col)


def _ambiguous(b: Any, n: exp.Column, scope: Scope) -> SqlSyntax | None:
    """E310 for an unqualified column both sides of a stream join have (Flink: "Column 'x' is ambiguous"; etl
    would read the left one's), a join key too; a lambda's variable is none."""
    up = n.parent
    while up is not None:
        if isinstance(up, exp.Lambda) and any(v.name == n.name for v in up.expressions):
            return None
        up = up.parent
    for lefts, right, rights in scope.joined:
        if n.name in lefts and n.name in rights:
            left = next((a for a, (rel, _) in scope.entries.items() if a != right and n.name in (rel.cols or ())),
                        "the left side")
            return SqlSyntax(f"column '{n.name}' is ambiguous: {left} and {right} both have it", pos(b, n),
                             f"qualify it: {left}.{n.name} or {right}.{n.name}", "E310")
    return None


def _union_branches(q: exp.Expression) -> list[exp.Expression]:
    if isinstance(q, exp.Union) and not q.args.get("distinct"):
        return _union_branches(q.this) + _union_branches(q.expression)
    if isinstance(q, exp.Subquery):
        return _union_branches(q.this)
    return [q]


def _strip_alias(field_: str) -> str:
    import re

    return re.sub(r"\s+AS\s+`?[A-Za-z0-9_$]+`?$", "", field_)
