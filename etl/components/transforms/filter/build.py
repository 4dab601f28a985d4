"""filter: a Spark SQL condition (`expr`) and/or a rule set (`rules`, `rule_files`).

Two independent halves meet in `build` (rules first, then `expr`):

* `expr_condition`: the condition runs in the JVM (`keep` keeps rows where it
  is true, `drop` drops them; NULL counts as false);
* `apply_rules`: the rule set runs through the filter optimizer (etl.optimize)
  in a scalar Arrow UDF over a struct of just the columns the rules read: each
  Arrow batch goes through a `Matcher`, which returns a boolean per row (keep,
  drop) or the list of matched rule ids (tag); the JVM keeps or drops the rows,
  so the other columns never travel to Python and back. The program comes
  from the plan (or is compiled on the driver) and is shipped in a broadcast
  variable, once per program version; each Python worker loads it once (see
  etl.compile.rule_programs, which also reloads changed rule files between
  micro-batches).

Filters whose rules can only match rows containing one of a few literals test
that in the JVM first (etl.compile.prefilter): keep filters drop the other rows
there, drop and tag filters send their fields as NULLs; only candidate rows'
text travels to Python. A rule set of patterns on one string field is decided
in the JVM instead, with no Python worker at all (etl.compile.rules_jvm).

Sibling filters: when two or more filters with rules read the same input,
their programs are merged (`etl.optimize.merge_programs`) and run in one
mapInArrow pass over that input, which adds one hidden column per filter
(boolean "this filter outputs the row", or the tag list); each filter then
selects its rows and drops the hidden columns (`split_results` gives each
filter its own result). Within a micro-batch the shared pass is cached when
several filters read it, so each row is matched once for all of them.

Undecided rows: Python `re` searches (Hyperscan reports to confirm, patterns it
rejects) have a time budget (etl.matching.regex_budget). A search past it
leaves the rules that depend on it undecided on that row: the verdict is NULL,
and `decide` sends such rows to dead letters (reason, the row as JSON) instead
of keeping or dropping them. Only programs with such patterns (`runs_python_re`)
get that split; the JVM path decides every row.

When etl.optimize is not importable, a filter with rules fails to compile with
a clear message; filters with `expr` only always work.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from etl import settings
from etl.compile.context import ERR, PAYLOAD, Built, CompileContext, as_built
from etl.compile.deadletter import fence, from_shared
from etl.compile.guard import Guards, active
from etl.compile.prefilter import prefilter_condition
from etl.compile.rules_jvm import verdict as jvm_verdict
from etl.compile.rules_jvm_multi import verdict as multi_verdict
from etl.components.transforms.filter import alerts as filter_alerts
from etl.compile.columns import sql_expr
from etl.components.transforms.filter.alerts import details_array
from etl.graph.model import Node
from etl.matching.merged import split_results
from etl.matching.regex_budget import budget_s
from etl.physical.planner import has_rules, merged as merge_programs, sibling_groups
from etl.workercache import WorkerCache

HIDDEN = "_etl_rules_"  # prefix of the shared pass's per-filter columns
_WORKER_KEEP = 8
# per Python worker: "single:"|"merged:" + digest -> state
_WORKER_CACHE: WorkerCache[str, Any] = WorkerCache("filter rule matchers", _WORKER_KEEP)


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    spec = node.spec
    df = inputs[0]
    if spec.expr is not None and active(df):  # the rules (sharing their pass with siblings), then `expr`: rows
        if not (spec.rules or spec.rule_files):  # on which it throws are dead letters
            return guarded_condition(ctx, node, df)
        ruled = as_built(apply_rules(ctx, node, df, None))
        built = guarded_condition(ctx, node, ruled.out)
        dead = built.dead if ruled.dead is None else ruled.dead.unionByName(built.dead)
        return Built(out=built.out, dead=dead)
    passes = None
    if spec.expr is not None:  # a Column: made once a run, used on every micro-batch (Spark resolves it there)
        key = (node.id, spec.expr, "drop" if spec.mode == "drop" else "keep")
        passes = ctx.caches.conditions.get(key)
        if passes is None:
            passes = ctx.caches.conditions[key] = expr_condition(node, *key[1:])
    if spec.has_rules:
        return apply_rules(ctx, node, df, passes)
    return df if passes is None else df.where(passes)


def expr_condition(node: Node, sql: str, mode: str) -> Any:
    """Rows that pass `expr`: keep keeps rows where it is true, drop drops them; NULL counts as false."""
    from pyspark.sql import functions as F

    cond = F.coalesce(sql_expr(node, sql, "expr"), F.lit(False))
    return ~cond if mode == "drop" else cond


def guarded_condition(ctx: CompileContext, node: Node, df: Any) -> Built:
    """`expr_condition` with its expression guarded: the rows that pass, and the rows on which it threw as dead
    letters."""
    from pyspark.sql import functions as F

    guards = Guards(ctx, node, df)
    frame, value = guards.wrap(df, sql_expr(node, node.spec.expr, "expr"), ("expr",), "expr")
    cond = F.coalesce(value, F.lit(False))
    passes = ~cond if node.spec.mode == "drop" else cond
    shared = guards.shared(frame.where(passes | guards.reason.isNotNull()), df.columns)
    return from_shared(shared, ctx.pipeline, node.id)


def undecided_reason() -> str:
    return (f"rules undecided: a Python re search of a rule pattern ran past its {budget_s():g} s budget on this "
            "record (catastrophic backtracking); the worker's log names the pattern")


def decide(ctx: CompileContext, node: Node, df: Any, verdict: Any, passes: Any, undecided: bool,
           hidden: str | None = None, detailed: bool = False) -> Any:
    """`df` after the filter. `verdict`: the rules' result per row, boolean "matches" (or, from a shared pass's
    `hidden` column of `df`, "this filter outputs the row") or the tag list; `passes`: the `expr` condition
    (or None). With `undecided` (FilterProgram.runs_python_re) a NULL verdict means "could not decide": the row goes to
    dead letters (its payload: the row as JSON) and a Built is returned. `detailed`: the tag list holds the rules'
    detail structs already (the JVM rule path made them)."""
    from pyspark.sql import functions as F

    spec = node.spec
    negate = hidden is None and spec.mode == "drop"  # drop mode outputs the rows that do not match
    tags = spec.mode in ("tag", "alerts")
    if not undecided:
        if tags:
            out = df.drop(spec.tag_field).withColumn(spec.tag_field, verdict)
        else:
            out = df.where(~verdict if negate else verdict)
        out = out if hidden is None else out.drop(hidden)
        out = out if passes is None else out.where(passes)
        return out if detailed else _metadata(ctx, node, out)
    col = hidden or "_etl_verdict"
    staged = df if hidden is not None else df.withColumn(col, fence(verdict))
    v = F.col(col)
    lost = v.isNull()
    keep = passes  # tag: every row is output (an undecided one as a dead letter)
    if not tags:
        keep = lost | (~v if negate else v)
        keep = keep if passes is None else passes & keep
    shared = staged if keep is None else staged.where(keep)
    row = F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns if c != col]))
    shared = shared.withColumns({ERR: F.when(lost, F.lit(undecided_reason())), PAYLOAD: F.when(lost, row)})
    shared = shared.drop(spec.tag_field).withColumnRenamed(col, spec.tag_field) if tags else shared.drop(col)
    built = from_shared(shared, ctx.pipeline, node.id)
    return replace(built, out=_metadata(ctx, node, built.out))


def _metadata(ctx: CompileContext, node: Node, out: Any) -> Any:
    """Tag details or alerts rows from the tag column of ids (etl.components.transforms.filter.alerts), less the
    rules only Sigma correlations with `generate: false` reference (`RuleSet.silent`)."""
    spec = node.spec
    if spec.mode not in ("tag", "alerts"):
        return out
    from etl.compile.rule_programs import rule_set

    rs = rule_set(ctx, node)
    if spec.mode == "tag" and rs.silent:
        out = filter_alerts.without(out, spec.tag_field, rs.silent)
    if spec.mode == "tag" and not spec.details:
        return out
    meta = rs.meta
    maps = ctx.caches.rule_meta_maps  # per filter and metadata version: built once
    key = (node.id, id(meta))
    if key not in maps:
        if len(maps) > 4 * _WORKER_KEEP:
            maps.clear()
        maps[key] = (meta, filter_alerts.meta_map(meta))  # keeps `meta` alive: its id stays its own
    m = maps[key][1]
    if spec.mode == "tag":
        return filter_alerts.with_details(out, spec.tag_field, m)
    every = filter_alerts.alerts(out, spec.tag_field, m)
    if every.isStreaming:  # what a sigma_correlation reading this filter counts (its streaming plan)
        ctx.caches.sigma_alerts[node.id] = every
    return filter_alerts.emitted(every, rs.silent) if rs.silent else every


# ----------------------------------------------------------------- workers


def _worker_state(key: str, bc: Any, make: Any) -> Any:
    """Per Python worker: the state built from a shipped program, once per key (kind + digest; a few kept)."""
    got = _WORKER_CACHE.get(key)
    if got is None:
        import gc

        # A loaded program is a large, long-lived object graph (every rule, predicate and table); the cyclic
        # garbage collector walked all of it on each full collection that the matcher's short-lived objects
        # set off -- measured: 60 % of a rule filter's Python CPU at 1,000 rules. Frozen objects are skipped by
        # the collector (reference counting still frees them); unfreezing first lets the collector reclaim
        # states dropped since (hot reloads).
        gc.unfreeze()
        got = _WORKER_CACHE[key] = make(bc.value)
        gc.collect()
        gc.freeze()
    return got


def _single_matcher(program: Any) -> Any:
    from etl.matching.matcher import Matcher

    return Matcher(program)


def _merged_matcher(merged: Any) -> Any:
    from etl.matching.matcher import Matcher

    return Matcher(merged.program), merged


# -------------------------------------------------------------------- rules


def siblings(ctx: CompileContext, node: Node) -> list[Node]:
    """Filters with rules that read the same input as `node` and share its pass (graph order; `node` alone when
    none): the physical plan's shared pass, regrouped by the planner when a reload or a step budget changed a
    member's engine. A filter whose rules run in the JVM (etl.compile.rules_jvm) shares no pass."""
    from etl.compile.rule_programs import rule_set

    if _input_key(node) is None:
        return [node]
    python = {n.id for n in ctx.graph.nodes.values()
              if has_rules(n) and ctx.engine(n, "rules", rule_set(ctx, n).program) == "rules-python"}
    group = next((g for g in sibling_groups(ctx.graph, python) if node in g), (node,))
    return list(group)


def _input_key(node: Node) -> tuple | None:
    ins = [e for e in node.inputs if e.role == "input"]
    return (ins[0].src, ins[0].label) if len(ins) == 1 else None


def apply_rules(ctx: CompileContext, node: Node, df: Any, passes: Any = None) -> Any:
    from etl.compile.rule_programs import optimizer

    optimizer(node)
    group = siblings(ctx, node)
    if len(group) == 1:
        return _single(ctx, node, df, passes)
    return _member(ctx, group, node, df, passes)


def _single(ctx: CompileContext, node: Node, df: Any, passes: Any) -> Any:
    from etl.compile.rule_programs import rule_set, ship

    spec = node.spec
    rs = rule_set(ctx, node)
    if not df.isStreaming:
        rs.refresh()  # between micro-batches: pick up changed rule files
    program = rs.program
    engines = ctx.choices(node, program)  # rules-jvm | rules-jvm-multi | rules-python, the prefilter (etl.physical)
    # the columns are the same in every micro-batch of a query (same program, same session): built once
    columns = ctx.caches.rule_columns
    # tag details made by the JVM rule path (the structs picked by rule index): the metadata is part of the column
    direct = engines["rules"] == "rules-jvm-multi" and spec.mode == "tag" and spec.details and not rs.silent
    meta_key = hash(tuple(rs.meta.items())) if direct else None
    key = (node.id, program.digest, df.sparkSession._jsparkSession.hashCode(), engines["rules"], engines["prefilter"],
           meta_key)
    got = columns.get(key)
    if got is None:
        candidate = prefilter_condition(program, df, engines["prefilter"])
        first = candidate if spec.mode == "keep" else None  # keep: rows that cannot match are dropped in the JVM
        tags = spec.mode in ("tag", "alerts")
        # drop, tag: every row stays; only candidates need their fields matched
        rest = None if spec.mode == "keep" else candidate
        built, detailed = None, False
        if engines["rules"] == "rules-jvm":
            built = jvm_verdict(program, df, tags, rest, ctx.demotions)  # None: the field is not a string column here
        elif engines["rules"] == "rules-jvm-multi":  # several fields (etl.compile.rules_jvm_multi)
            details = details_array(rs.meta, [r.rule_id for r in program.rules]) if direct else None
            built = multi_verdict(program, df, tags, rest, details, ctx.demotions)  # None: a field is not a string column
            detailed = built is not None and details is not None
        ran = (engines["rules"] if built is not None else "rules-python",
               engines["prefilter"] if candidate is not None else "no-prefilter")
        undecided = False  # the JVM decides every row (a rule set past its step budget moves to Hyperscan)
        if built is None:  # the Python path: Hyperscan in an Arrow UDF, the program in a broadcast variable
            bc = ship(ctx, node.id, program.digest, program)
            built = _verdict(df, program, bc, "single:" + program.digest, tags, rest)
            undecided = program.runs_python_re
        got = columns[key] = (first, built, undecided, ran, detailed)
        while len(columns) > 4 * _WORKER_KEEP:
            columns.pop(next(iter(columns)))
    first, verdict, undecided, ran, detailed = got
    ctx.record(node.id, "rules", ran[0])
    ctx.record(node.id, "prefilter", ran[1])
    if first is not None:
        df = df.where(first)
    return decide(ctx, node, df, verdict, passes, undecided, detailed=detailed)


def _read_columns(df: Any, program: Any) -> list[str]:
    """The input's top-level columns holding the fields the program reads (``meta.host``: ``meta``)."""
    names = set(df.columns)
    out: dict[str, None] = {}
    for f in [p.key.field for p in program.predicates] + list(program.fingerprint_fields):
        top = f if f in names else f.split(".")[0]
        if top in names:
            out.setdefault(top)
    return list(out)


def _verdict(df: Any, program: Any, bc: Any, key: str, tag: bool, candidate: Any = None) -> Any:
    """The program's result per row as a column: a scalar Arrow UDF over a struct of only the columns the
    rules read (the other columns never leave the JVM): boolean "matches", or the matched rule ids (tag).

    ``candidate``: the JVM prefilter's condition; a row failing it cannot match any rule, so its fields are
    sent as NULL (every rule is false when all its pattern predicates are, and a pattern on NULL is false)."""
    from pyspark.sql import functions as F

    cols = _read_columns(df, program)
    def value(c: str) -> Any:
        col = F.col(f"`{c}`")
        return col if candidate is None else F.when(candidate, col).alias(c)

    arg = F.struct(*[value(c) for c in cols]) if cols else F.struct(F.lit(None).alias("_etl_none"))
    return _verdict_udf(bc, key, tag)(arg)


def _verdict_udf(bc: Any, key: str, tag: bool) -> Any:
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BooleanType, StringType

    snap = settings.current()  # the driver's: the worker's regex budget (etl.matching.regex_budget)

    def verdict(arr: Any) -> Any:
        settings.use(snap)
        m = _worker_state(key, bc, _single_matcher)
        result = m.match(pa.RecordBatch.from_struct_array(arr))
        return result.to_arrow() if tag else result.verdict()

    import warnings

    from pyspark.sql.pandas.functions import ArrowUDFType

    with warnings.catch_warnings():  # "prefer type hints": they are strings here (postponed annotations)
        warnings.simplefilter("ignore", UserWarning)
        return F.arrow_udf(verdict, ArrayType(StringType()) if tag else BooleanType(), ArrowUDFType.SCALAR)


@dataclass
class SharedPass:
    """The merged pass of a sibling group over one input frame (per micro-batch, or per streaming plan)."""

    input_node: str
    source: Any  # the input frame (kept so that its id stays unique while this entry lives)
    frame: Any  # the input plus one hidden column per member
    hidden: dict[str, str]  # member id -> hidden column
    undecided: bool = False  # a hidden column may be NULL: that member could not decide the row
    prefilter: str = "no-prefilter"  # the engine of the pass's prefilter (etl.physical)
    users: set[str] = field(default_factory=set)  # members built over it


def _member(ctx: CompileContext, group: list[Node], node: Node, df: Any, passes: Any) -> Any:
    from pyspark.sql import functions as F

    registry = ctx.caches.stream_shared if df.isStreaming else ctx.caches.batch_shared
    key = (tuple(n.id for n in group), id(df))
    entry = registry.get(key)
    if entry is None:
        if len(registry) > 64:  # frames built outside a micro-batch evaluation: keep the registry small
            registry.clear()
        entry = registry[key] = _shared_pass(ctx, group, df)
    entry.users.add(node.id)
    ctx.record(node.id, "rules", "rules-python")
    ctx.record(node.id, "prefilter", entry.prefilter)
    mine = entry.hidden[node.id]
    others = [c for c in entry.hidden.values() if c != mine]
    out = entry.frame.drop(*others)
    return decide(ctx, node, out, F.col(mine), passes, entry.undecided, hidden=mine)


def _shared_pass(ctx: CompileContext, group: list[Node], df: Any) -> SharedPass:
    from pyspark.sql.types import ArrayType, BooleanType, StringType, StructField, StructType

    from etl.compile.rule_programs import rule_set, ship

    sets = [rule_set(ctx, n) for n in group]
    if not df.isStreaming:
        for rs in sets:
            rs.refresh()
    merged = _merged(ctx, sets)
    gid = "+".join(n.id for n in group)
    prefilter = ctx.shared_prefilter(group, tuple(rs.program for rs in sets))
    if prefilter != "no-prefilter":  # every member keeps: rows that cannot match are dropped in the JVM first
        cond = prefilter_condition(merged.program, df, prefilter)
        df = df if cond is None else df.where(cond)
        prefilter = prefilter if cond is not None else "no-prefilter"
    bc = ship(ctx, gid, merged.program.digest, merged)
    hidden = {n.id: f"{HIDDEN}{k}" for k, n in enumerate(group)}
    names = set(df.columns)
    for col in hidden.values():
        if col in names:  # a second group downstream of a first one: its columns were dropped, but be safe
            df = df.drop(col)
    modes = [("tag" if n.spec.mode == "alerts" else n.spec.mode, n.spec.tag_field) for n in group]
    schema = StructType(list(df.schema.fields) + [
        StructField(hidden[n.id], ArrayType(StringType()) if n.spec.mode in ("tag", "alerts") else BooleanType(),
                    True)
        for n in group])
    cols = [hidden[n.id] for n in group]
    key = "merged:" + merged.program.digest
    snap = settings.current()  # the driver's: the worker's regex budget (etl.matching.regex_budget)

    def run(batches: Any) -> Any:
        import numpy as np
        import pyarrow as pa

        settings.use(snap)
        m, shipped = _worker_state(key, bc, _merged_matcher)
        for rb in batches:
            parts = split_results(shipped, m.match(rb))
            keep = np.zeros(rb.num_rows, dtype=bool)
            arrays = []
            for (mode, _tag), part in zip(modes, parts, strict=True):
                if mode == "tag":
                    arrays.append(part.to_arrow())
                    keep[:] = True
                    continue
                verdict = part.verdict(negate=mode == "drop")
                keep |= verdict.fill_null(True).to_numpy(zero_copy_only=False)  # undecided: kept for dead letters
                arrays.append(verdict)
            out = rb
            for name, arr in zip(cols, arrays, strict=True):
                out = out.append_column(name, arr)
            yield out if keep.all() else out.filter(pa.array(keep))

    return SharedPass(group[0].inputs[0].src, df, df.mapInArrow(run, schema), hidden,
                      merged.program.runs_python_re, prefilter)


def _merged(ctx: CompileContext, sets: list[Any]) -> Any:
    """The merged program of a group (re-planned only when a member's program changed), slimmed for shipping."""
    cache = ctx.caches.merged_programs
    key = tuple(rs.node.id for rs in sets)
    digests = tuple(rs.program.digest for rs in sets)
    got = cache.get(key)
    if got is None or got[0] != digests:
        merged = merge_programs(tuple(rs.program for rs in sets))  # the planner's, when it planned this pass
        # the workers need the members' rule ids only (split_results), not their databases
        slim = replace(merged, members=tuple(
            replace(p, predicates=(), natives=(), databases=(), fallbacks=()) for p in merged.members))
        got = cache[key] = (digests, slim)
    return got[1]
