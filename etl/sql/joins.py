"""JOIN -> `lookup` (a dimension table, `FOR SYSTEM_TIME AS OF` PROCTIME()), `temporal_join` (`FOR SYSTEM_TIME AS OF`
the probe's event time: etl.sql.temporal_join) or a stream-stream `join`.

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
from typing import Any, cast

from sqlglot import exp

from etl.diagnostics import did_you_mean
from etl.spec.timebound import signed_text
from etl.sql.intervals import duration_text, flink_duration, seconds
from etl.sql.lateral import lateral
from etl.sql.relation import Rel, Scope, pos, sql_text
from etl.sql.script import SqlSyntax
from etl.sql.temporal_join import temporal
from etl.sql.where import conjuncts
from etl.sql.window_join import window_alias, window_bound, window_side


class Joins:
    def __init__(self, builder: Any):
        self.b = builder
        self.sizes: dict[str, float] = {}  # node id -> its window join side's window size (etl.sql.window_join)
        self.windows: dict[str, tuple] = {}  # node id -> its window join side's window (kind, size, slide ...)

    def join(self, j: exp.Join, left: Rel, scope: Scope, base: str) -> Rel:
        if isinstance(j.this, exp.Lateral):
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
            if self._processing_time(target.args["version"], scope):
                return self._lookup(j, target, left, scope, base, how, on)
            return temporal(self, j, target, left, scope, base, how, on)
        qc = self.b.queries
        windowed = window_side(qc, target, None, base) if left.id in self.sizes else None
        if windowed is not None:
            return self._stream(j, left, windowed, window_alias(target) or windowed.id, scope, base, how, on)
        if isinstance(target, exp.Subquery):
            right = qc.compile(target.this, base)
            alias = target.alias or right.id
        elif isinstance(target, exp.Table):
            right = qc.table_rel(target)
            alias = target.alias or target.name
        else:
            raise SqlSyntax("unsupported JOIN target", pos(self.b, target), code="E011")
        return self._stream(j, left, right, alias, scope, base, how, on)

    def comma(self, j: exp.Join, where: exp.Expression | None) -> exp.Expression | None:
        """`FROM a, b WHERE a.k = b.k AND ...` (Flink's interval join example) is `a JOIN b ON` the WHERE
        conditions that read b; the others stay in WHERE (the same rows: an inner join)."""
        if (j.kind or "").upper() != "CROSS" or j.args.get("on") is not None or isinstance(j.this, exp.Lateral) \
                or where is None:
            return where
        alias = (j.this.alias or (j.this.name if isinstance(j.this, exp.Table) else "")).lower()
        on: list[exp.Expression] = []
        rest: list[exp.Expression] = []
        for c in conjuncts(where):
            (on if any((col.table or "").lower() == alias for col in c.find_all(exp.Column)) else rest).append(c)
        if not on:
            return where
        j.set("kind", None)
        j.set("on", exp.and_(*on, copy=False))
        if not rest:
            return None
        return cast(exp.Expression, exp.and_(*rest, copy=False))

    def _processing_time(self, version: exp.Expression, scope: Scope) -> bool:
        """Is `FOR SYSTEM_TIME AS OF` PROCTIME() or the probe side's PROCTIME() column (a lookup of the table's current
        rows)? Otherwise it is an event-time temporal join (etl.sql.temporal_join)."""
        at = version.expression
        if isinstance(at, exp.Anonymous) and at.name.upper() == "PROCTIME" and not at.expressions:
            return True
        if isinstance(at, exp.Column):
            entry = scope.entries.get((at.table or "").lower()) if at.table else \
                next(iter(scope.entries.values()), None) if len(scope.entries) == 1 else None
            if entry is not None and entry[0].proctime is not None and entry[0].proctime.lower() == at.name.lower():
                return True
        return False

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

    def _lookup_pairs(self, on: exp.Expression, scope: Scope, alias: str) -> dict[str, str]:
        """A dimension join's ON: event column -> the table's column it equals."""
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
        return pairs

    def _lookup(self, j: exp.Join, t: exp.Table, left: Rel, scope: Scope, base: str, how: str,
                on: exp.Expression) -> Rel:
        dim = self.b.queries.table_rel(t)
        if not dim.static:
            raise SqlSyntax(f"table '{t.name}' is not a dimension table (a db/mysql or file table)", pos(self.b, t),
                            code="E203")
        alias = t.alias or t.name
        pairs = self._lookup_pairs(on, scope, alias)
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
        for event_col, key in pairs.items():  # d.k reads the event's column it equals (`*` too, as Flink lists it)
            rename.setdefault(key, event_col)
            if how == "left":  # in a row no table row matched, Flink's d.k is NULL
                scope.lookup_keys[(alias.lower(), key)] = event_col
        scope.add(alias, dim, rename)
        cols = None if left.cols is None or ("fields" not in spec and dim.cols is None) else \
            left.cols + [rename[c] for c in added]
        return replace(left, id=lid, cols=cols, table=None, static=False)

    # C901: one branch per Flink interval-join rule, each with its error position
    def _stream(self, j: exp.Join, left: Rel, right: Rel, alias: str, scope: Scope, base: str, how: str,  # noqa: C901
                on: exp.Expression) -> Rel:
        lefts = set(scope.entries)
        scope.joined.append((frozenset(left.cols or ()), alias.lower(), frozenset(right.cols or ())))
        keys: list[str] = []
        key_conds: list[exp.Expression] = []
        bound = _Bound()
        extra: list[exp.Expression] = []  # conditions besides the keys and the closed bound: the join's `condition`
        renamed: dict[str, str] = {}  # right key -> the left key's name (t.perform_id = p.id)
        times = (left.event_time, right.event_time)
        for c in conjuncts(on):
            if self._bound(c, scope, lefts, alias, times, bound):
                if isinstance(c, (exp.GT, exp.LT)):
                    extra.append(c)  # a strict end: the closed bound keeps the state, the condition the rows
                continue
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
                key_conds.append(c)
                continue
            extra.append(c)
        if not keys:
            raise SqlSyntax("a stream join needs at least one key equality (a.k = b.k)", pos(self.b, on), code="E104")
        size = window_bound(self.b, keys, (left.id, right.id), on,
                            bound.lo is not None or bound.hi is not None)
        if size is not None:  # two rows of one tumbling window are less than its size apart
            bound.lo, bound.hi = -size, size
        lo, hi = bound.lo, bound.hi
        regular = lo is None or hi is None
        ttl = None
        if lo is None or hi is None:  # no time bound: Flink's regular join; the conditions besides the keys filter
            ttl = self._regular(j, how, on, (left, right))
            extra = [c for c in conjuncts(on) if not any(c is k for k in key_conds)]
        elif lo > hi or (lo == hi and (bound.lo_open or bound.hi_open)):
            raise SqlSyntax("the join's time bound is empty: its lower end is after its upper end", pos(self.b, on),
                            code="E104")
        if extra and (left.cols is None or right.cols is None):
            raise SqlSyntax("a join condition besides the keys and the time bound needs both sides' columns "
                            "known", pos(self.b, extra[0]), "join views whose columns are declared", "E011")
        if renamed:  # the right side's keys take the left's names first
            sid = self.b.new_id(f"{base}_keys")
            rc = right.cols or []  # known: a key is renamed only then
            fields = [f"{c} AS {renamed[c]}" if c in renamed else c for c in rc]
            self.b.add_transform({"id": sid, "type": "select", "inputs": [right.id], "fields": fields}, pos(self.b, on))
            right = replace(right, id=sid, cols=[renamed.get(c, c) for c in rc],
                            event_time=renamed.get(right.event_time or "", right.event_time), table=None, static=False)
        jid = self.b.new_id(f"{base}_join")
        spec: dict[str, Any] = {"id": jid, "type": "join", "inputs": [left.id, right.id], "on": keys, "how": how}
        if lo is None or hi is None:  # etl.components.transforms.regular_join.spec
            spec["type"] = "regular_join"
            if ttl is not None:
                spec["ttl"] = duration_text(ttl)
        else:
            spec["within"] = duration_text(hi) if lo == -hi else [signed_text(lo), signed_text(hi)]
            for side, rel in (("left_time", left), ("right_time", right)):
                if rel.wm:
                    spec[side] = rel.wm
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
        self._padded(scope, how, lefts, alias, left, right, rename, keys)
        conds = [self.b.queries.resolve(c.copy(), scope) for c in extra]
        if conds:
            spec["condition"] = " AND ".join(sql_text(c, paren=True) for c in conds)
        i = self.b.add_transform(spec, pos(self.b, j))
        if conds:
            self.b.note_expr(("transforms", i, "condition"), conds)
        if regular:  # Flink's regular join drops the time attribute: no window or interval join after it
            return replace(left, id=jid, cols=cols, table=None, static=False, event_time=None, wm=None)
        return replace(left, id=jid, cols=cols, table=None, static=False)

    def _regular(self, j: exp.Join, how: str, on: exp.Expression, sides: tuple[Rel, Rel]) -> float | None:
        """A join without a time bound is Flink's regular join: INNER only (an outer one updates its padded rows),
        of tables without a PRIMARY KEY (Flink keeps one row per key value of such a side), its state kept for SET
        'table.exec.state.ttl' (its seconds; None: for good, W015 at the JOIN)."""
        every = "INTERVAL '1' MINUTE"
        for rel in sides:
            if rel.table is not None and rel.table.primary_key:
                pk = ", ".join(rel.table.primary_key)
                raise SqlSyntax(f"a regular join (no time bound) of '{rel.id}', a table with a PRIMARY KEY ({pk}), is "
                                f"not supported: Flink keeps one row per {pk} of it in the join's state (a new row "
                                "replaces the kept one), etl's regular join keeps every row", pos(self.b, on),
                                "declare the table without PRIMARY KEY (every row kept and joined, as etl does), or "
                                "bound the join by event time (an interval join)", "E011")
        if how != "inner":
            raise SqlSyntax(f"a {how.upper()} JOIN without a time bound is not supported: Flink writes an unmatched "
                            "row padded with NULLs at once and retracts it when its match arrives (an update "
                            "stream); etl's sinks append, so a padded row could not be withdrawn", pos(self.b, on),
                            f"bound it by event time, an interval join (AND b.ts BETWEEN a.ts - {every} AND a.ts + "
                            f"{every}: a padded row goes out once the watermark passes the bound), or write an "
                            "INNER JOIN (a regular join)", "E321")
        ttl = self.b.settings.get("state-ttl")
        if ttl is not None:
            return flink_duration(str(ttl[0])) or None  # an invalid one is E102 at the SET
        self.b.report.warning("W015", "a regular join (no time bound) keeps every row of both sides in its state for "
                              "good: the state grows without bound (Flink's too, without a state TTL)", pos(self.b, j),
                              "SET 'table.exec.state.ttl' = '1 h' (a row leaves the state 1 h after it was stored, "
                              f"processing time), or bound the join by event time: AND b.ts BETWEEN a.ts - {every} "
                              f"AND a.ts + {every}")
        return None

    def _padded(self, scope: Scope, how: str, lefts: set[str], alias: str, left: Rel, right: Rel,
                rename: dict[str, str], keys: list[str]) -> None:
        """The keys of a side the join pads read NULL in its padded rows (Flink), not the other side's key."""
        pads = ([(a, left, {k: k for k in keys}) for a in lefts] if how in ("right", "full") else []) + \
            ([(alias.lower(), right, rename)] if how in ("left", "full") else [])
        for a, rel, names in pads:
            time = names.get(rel.event_time or "", rel.event_time)
            for col, out in names.items():
                if out in keys:
                    scope.padded[(a, col)] = time or ""  # "": unknown, E011 where the query reads the key

    def _bound(self, c: exp.Expression, scope: Scope, lefts: set, alias: str, times: tuple, bound: _Bound) -> bool:
        """Is `c` a bound of the event times (Flink's interval join: `l.t = r.t`, `l.t >= r.t AND l.t < r.t +
        INTERVAL '10' MINUTE`, `l.t BETWEEN r.t - INTERVAL '10' SECOND AND r.t + INTERVAL '5' SECOND`, either
        side first)? Then `bound` takes it, as ends of `right time - left time`."""
        def side_time(e: exp.Expression) -> tuple[str, float, bool] | None:
            """('left' | 'right', offset seconds, whether the side's event time is known) of an event-time column
            plus or minus an interval."""
            off = 0.0
            if isinstance(e, (exp.Sub, exp.Add)) and isinstance(e.this, exp.Column) \
                    and isinstance(e.expression, exp.Interval):
                s = seconds(self.b, e.expression)
                e, off = e.this, (-s if isinstance(e, exp.Sub) else s)
            if not isinstance(e, exp.Column) or isinstance(e.this, exp.Star) or not e.table:
                return None
            side = self._sides(scope, e, lefts, alias)
            time = times[0] if side == "left" else times[1]
            if time is not None and time.lower() != e.name.lower():
                return None  # not the side's event time: a condition, as in Flink
            return side, off, time is not None

        def compare(a: exp.Expression, op: str, b_: exp.Expression) -> tuple | None:
            x, y = side_time(a), side_time(b_)
            if x is None or y is None or {x[0], y[0]} != {"left", "right"}:
                return None
            if op == "=" and not (x[2] and y[2]):
                return None  # a.x = b.y of columns not known as event times: a key
            if x[0] == "left":  # l + p op r + q  <=>  r - l flip(op) p - q
                return FLIP[op], x[1] - y[1]
            return op, y[1] - x[1]  # r + q op l + p  <=>  r - l op p - q

        if isinstance(c, exp.Between):
            lo, hi = compare(c.this, ">=", c.args["low"]), compare(c.this, "<=", c.args["high"])
            if lo is None or hi is None:
                return False
            parts = [lo, hi]
        elif isinstance(c, tuple(OPS)):
            one = compare(c.this, OPS[type(c)], c.expression)
            if one is None:
                return False
            parts = [one]
        else:
            return False
        for op, value in parts:
            bound.add(op, value)
        return True


def _interval_text(secs: float) -> str:
    """Flink's interval literal of a number of seconds: INTERVAL '1' HOUR, INTERVAL '90' SECOND."""
    for unit, size in (("DAY", 86400), ("HOUR", 3600), ("MINUTE", 60), ("SECOND", 1)):
        if secs >= size and secs % size == 0:
            return f"INTERVAL '{int(secs // size)}' {unit}"
    return f"INTERVAL '{secs:g}' SECOND"


OPS: dict[type, str] = {exp.EQ: "=", exp.GTE: ">=", exp.GT: ">", exp.LTE: "<=", exp.LT: "<"}
FLIP = {"=": "=", ">=": "<=", ">": "<", "<=": ">=", "<": ">"}


class _Bound:
    """The ends of `right time - left time` the ON conditions give (their intersection), each closed or open."""

    def __init__(self) -> None:
        self.lo: float | None = None
        self.hi: float | None = None
        self.lo_open = self.hi_open = False

    def add(self, op: str, value: float) -> None:
        if op in ("=", ">=", ">"):
            if self.lo is None or value > self.lo:
                self.lo, self.lo_open = value, op == ">"
            elif value == self.lo:
                self.lo_open = self.lo_open or op == ">"
        if op in ("=", "<=", "<"):
            if self.hi is None or value < self.hi:
                self.hi, self.hi_open = value, op == "<"
            elif value == self.hi:
                self.hi_open = self.hi_open or op == "<"
