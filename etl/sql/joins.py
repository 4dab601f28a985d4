"""JOIN -> `lookup` (a dimension table, `FOR SYSTEM_TIME AS OF`) or a stream-stream `join`.

Lookup: `JOIN dim FOR SYSTEM_TIME AS OF s.pt AS d ON s.k = d.k` (LEFT JOIN keeps
events without a match); the dimension columns the query reads become `fields`.
Stream join: `ON a.k = b.k [AND ...] AND b.ts BETWEEN a.ts - INTERVAL 'n' U AND
a.ts + INTERVAL 'n' U` (or the same bound as `>=` and `<=`): key equalities (a right
key named differently is renamed to the left's name by a select first), a time bound
(`within`: one duration when symmetric, else [lower, upper]); JOIN, LEFT, RIGHT or FULL. Output columns: the left columns, then the right's non-key
ones (renamed `<right id>_<name>` where the left uses the name), as etl.compile.joining.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from etl.diagnostics import did_you_mean
from etl.sql.query import Rel, Scope, pos
from etl.sql.script import SqlSyntax
from etl.sql.where import conjuncts


class Joins:
    def __init__(self, builder: Any):
        self.b = builder

    def join(self, j: exp.Join, left: Rel, scope: Scope, base: str) -> Rel:
        if isinstance(j.this, exp.Lateral):
            from etl.sql.lateral import lateral

            return lateral(self.b, j, left, scope, base)
        side = (j.side or "").upper()
        if side not in ("", "LEFT", "RIGHT", "FULL") or (j.kind or "").upper() not in ("", "INNER", "OUTER"):
            raise SqlSyntax(f"{side or j.kind} JOIN is not supported: use JOIN, LEFT, RIGHT or FULL JOIN",
                            pos(self.b, j), code="E011")
        how = side.lower() or "inner"
        on = j.args.get("on")
        if on is None:
            raise SqlSyntax("a JOIN needs ON", pos(self.b, j), code="E010")
        target = j.this
        if isinstance(target, exp.Table) and target.args.get("version") is not None:
            if how not in ("inner", "left"):
                raise SqlSyntax(f"a dimension table join is JOIN or LEFT JOIN, not {side} JOIN", pos(self.b, j),
                                code="E011")
            self._processing_time(target.args["version"], scope)
            return self._lookup(j, target, left, scope, base, how, on)
        qc = self.b.queries
        if isinstance(target, exp.Subquery):
            right = qc.compile(target.this, base)
            alias = target.alias or right.id
        elif isinstance(target, exp.Table):
            right = qc.table_rel(target)
            alias = target.alias or target.name
        else:
            raise SqlSyntax("unsupported JOIN target", pos(self.b, target), code="E011")
        return self._stream(j, left, right, alias, scope, base, how, on)

    def _processing_time(self, version: exp.Expression, scope: Scope) -> None:
        """`FOR SYSTEM_TIME AS OF` PROCTIME() or the probe side's PROCTIME() column: a lookup of the table's current
        rows. An event-time AS OF (Flink: the version of the PRIMARY KEY table valid at the probe row's time) is
        refused: a lookup would join every version of the row."""
        at = version.expression
        if isinstance(at, exp.Anonymous) and at.name.upper() == "PROCTIME" and not at.expressions:
            return
        if isinstance(at, exp.Column):
            entry = scope.entries.get((at.table or "").lower()) if at.table else \
                next(iter(scope.entries.values()), None) if len(scope.entries) == 1 else None
            if entry is not None and entry[0].proctime is not None and entry[0].proctime.lower() == at.name.lower():
                return
        raise SqlSyntax(f"FOR SYSTEM_TIME AS OF {at.sql(dialect='spark')}: an event-time temporal join (the version "
                        "valid at the row's time) is not supported", pos(self.b, at),
                        "join the table's current rows: FOR SYSTEM_TIME AS OF PROCTIME() (or the stream's "
                        "`pt AS PROCTIME()` column)", "E011")

    def _sides(self, scope: Scope, col: exp.Column, left: set[str], right_alias: str) -> str:
        q = (col.table or "").lower()
        if q == right_alias.lower():
            return "right"
        if q in left:
            return "left"
        if not q:
            raise SqlSyntax(f"qualify column '{col.name}' in a JOIN condition (a.{col.name})", pos(self.b, col),
                            code="E010")
        raise SqlSyntax(f"unknown table or alias '{col.table}'", pos(self.b, col),
                        did_you_mean(col.table, [*left, right_alias]), "E201")

    def _lookup(self, j: exp.Join, t: exp.Table, left: Rel, scope: Scope, base: str, how: str,
                on: exp.Expression) -> Rel:
        dim = self.b.queries.table_rel(t)
        if not dim.static:
            raise SqlSyntax(f"table '{t.name}' is not a dimension table (a db/mysql or file table)", pos(self.b, t),
                            code="E203")
        alias = t.alias or t.name
        lefts = set(scope.entries)
        pairs: dict[str, str] = {}
        for c in conjuncts(on):
            if not (isinstance(c, exp.EQ) and isinstance(c.this, exp.Column) and isinstance(c.expression, exp.Column)):
                raise SqlSyntax("a dimension join is ON equalities of columns (s.k = d.k)", pos(self.b, c),
                                code="E011")
            a, b_ = c.this, c.expression
            if self._sides(scope, a, lefts, alias) == "right":
                a, b_ = b_, a
            if self._sides(scope, b_, lefts, alias) != "right":
                raise SqlSyntax("each ON equality compares an event column with a dimension column", pos(self.b, c),
                                code="E011")
            pairs[a.name] = b_.name
        select = j.parent_select
        fields: list[str] = []
        star = False
        for col in (select.find_all(exp.Column) if select is not None else []):
            mine = (col.table or "").lower() == alias.lower() or not col.table and \
                col.name in (dim.cols or ()) and col.name not in (left.cols or ())  # `region`: only the table has it
            if mine:
                if isinstance(col.this, exp.Star):
                    star = True
                elif col.name not in fields and col.find_ancestor(exp.Join) is None:
                    fields.append(col.name)
        if dim.cols is not None:
            for col in select.find_all(exp.Column) if select is not None else []:
                if (col.table or "").lower() == alias.lower() and not isinstance(col.this, exp.Star) \
                        and col.name not in dim.cols:
                    raise SqlSyntax(f"unknown column '{col.name}' in dimension table '{t.name}'", pos(self.b, col),
                                    did_you_mean(col.name, dim.cols) or f"columns: {', '.join(dim.cols)}", "E310")
        lid = self.b.new_id(f"{base}_lookup")
        spec: dict[str, Any] = {"id": lid, "type": "lookup", "inputs": [left.id], "table": dim.id, "on": pairs}
        if fields and not star:
            spec["fields"] = fields
        spec["how"] = how
        self.b.add_transform(spec, pos(self.b, j))
        # as etl.compile.lookups: the table's columns read (all but its keys without `fields`), a name the events
        # have (case-insensitively) renamed <table id>_<name>; an unqualified name both have is ambiguous (Flink)
        scope.joined.append((frozenset(left.cols or ()), alias.lower(), frozenset(dim.cols or ())))
        added = fields if "fields" in spec else [c for c in dim.cols or () if c not in pairs.values()]
        taken = {c.lower() for c in left.cols or ()}
        rename = {c: (f"{dim.id}_{c}" if c.lower() in taken else c) for c in added}
        scope.add(alias, dim, rename)
        cols = None if left.cols is None or ("fields" not in spec and dim.cols is None) else \
            left.cols + [rename[c] for c in added]
        return replace(left, id=lid, cols=cols, table=None, static=False)

    def _stream(self, j: exp.Join, left: Rel, right: Rel, alias: str, scope: Scope, base: str, how: str,
                on: exp.Expression) -> Rel:
        lefts = set(scope.entries)
        scope.joined.append((frozenset(left.cols or ()), alias.lower(), frozenset(right.cols or ())))
        keys: list[str] = []
        bound: dict[str, float] = {}
        renamed: dict[str, str] = {}  # right key -> the left key's name (t.perform_id = p.id)
        for c in conjuncts(on):
            if isinstance(c, exp.EQ) and isinstance(c.this, exp.Column) and isinstance(c.expression, exp.Column):
                a, b_ = c.this, c.expression
                sides = (self._sides(scope, a, lefts, alias), self._sides(scope, b_, lefts, alias))
                if set(sides) != {"left", "right"}:
                    raise SqlSyntax("a join key compares a left column with a right column", pos(self.b, c),
                                    code="E011")
                if sides[0] == "right":
                    a, b_ = b_, a
                if a.name != b_.name:
                    if right.cols is None or a.name in right.cols:
                        why = (f"the right side has a column '{a.name}' already" if right.cols is not None
                               else "the right side's columns are unknown")
                        raise SqlSyntax(f"cannot rename the right key '{b_.name}' to '{a.name}': {why}",
                                        pos(self.b, c), "rename one side in a view", "E011")
                    renamed[b_.name] = a.name
                keys.append(a.name)
                continue
            self._bound(c, scope, lefts, alias, bound)
        if not keys:
            raise SqlSyntax("a stream join needs at least one key equality (a.k = b.k)", pos(self.b, on), code="E104")
        if "lo" not in bound or "hi" not in bound:
            raise SqlSyntax("a stream join needs a time bound: AND b.ts BETWEEN a.ts - INTERVAL '1' MINUTE "
                            "AND a.ts + INTERVAL '1' MINUTE", pos(self.b, on), code="E321")
        if -bound["lo"] > bound["hi"]:
            raise SqlSyntax("the join's time bound is empty: its lower end is after its upper end", pos(self.b, on),
                            code="E104")
        from etl.spec.timebound import signed_text
        from etl.sql.window import _dur

        if renamed:  # the right side's keys take the left's names first
            sid = self.b.new_id(f"{base}_keys")
            rc = right.cols or []  # known: a key is renamed only then
            fields = [f"{c} AS {renamed[c]}" if c in renamed else c for c in rc]
            self.b.add_transform({"id": sid, "type": "select", "inputs": [right.id], "fields": fields}, pos(self.b, on))
            right = replace(right, id=sid, cols=[renamed.get(c, c) for c in rc],
                            event_time=renamed.get(right.event_time or "", right.event_time), table=None, static=False)
        jid = self.b.new_id(f"{base}_join")
        spec = {"id": jid, "type": "join", "inputs": [left.id, right.id], "on": keys, "how": how,
                "within": _dur(bound["hi"]) if bound["lo"] == bound["hi"] else
                [signed_text(-bound["lo"]), signed_text(bound["hi"])]}
        for side, rel in (("left_time", left), ("right_time", right)):
            if rel.wm:
                spec[side] = rel.wm
        self.b.add_transform(spec, pos(self.b, j))
        lcols, rcols = left.cols, right.cols
        rename = {}
        cols = None
        if lcols is not None and rcols is not None:
            taken = {c.lower() for c in lcols}  # as etl.compile.joining renames
            rename = {c: (f"{right.id}_{c}" if c.lower() in taken else c) for c in rcols if c not in keys}
            cols = lcols + [rename[c] for c in rcols if c not in keys]
        for k in keys:
            rename[k] = k
        for old, new in renamed.items():
            rename[old] = new
        scope.add(alias, right, rename)
        return replace(left, id=jid, cols=cols, table=None, static=False)

    def _bound(self, c: exp.Expression, scope: Scope, lefts: set, alias: str, bound: dict) -> None:
        from etl.sql.window import seconds

        def side_time(e: exp.Expression) -> tuple[str, float] | None:
            if isinstance(e, exp.Column):
                return self._sides(scope, e, lefts, alias), 0.0
            if isinstance(e, (exp.Sub, exp.Add)) and isinstance(e.this, exp.Column):
                s = seconds(self.b, e.expression)
                return self._sides(scope, e.this, lefts, alias), (-s if isinstance(e, exp.Sub) else s)
            return None

        if isinstance(c, exp.Between):
            r, lo, hi = side_time(c.this), side_time(c.args["low"]), side_time(c.args["high"])
            if r and lo and hi and r[0] == "right" and lo[0] == hi[0] == "left":
                bound["lo"], bound["hi"] = -lo[1], hi[1]
                return
        elif isinstance(c, (exp.GTE, exp.LTE, exp.GT, exp.LT)):
            a, b_ = side_time(c.this), side_time(c.expression)
            if a and b_ and {a[0], b_[0]} == {"left", "right"}:
                r, lft = (a, b_) if a[0] == "right" else (b_, a)
                ge = isinstance(c, (exp.GTE, exp.GT)) == (a[0] == "right")  # right >= left + x
                off = lft[1] - r[1]
                if ge:
                    bound["lo"] = -off
                else:
                    bound["hi"] = off
                return
        raise SqlSyntax("a stream join's ON holds key equalities and one time bound", pos(self.b, c),
                        "write b.ts BETWEEN a.ts - INTERVAL '1' MINUTE AND a.ts + INTERVAL '1' MINUTE", "E011")
