"""Deterministic text of a FilterProgram (what ``etl explain`` shows for a filter with rules).

Sections appear once the pass that fills them has run: rules and predicates
(normalize), native predicates with their Spark SQL (native_split), pattern
databases per field with pattern count and serialized size (merge_by_field,
fallback), the patterns that fall back to Python ``re`` and the rules using
them (fallback), the fingerprint fields (fingerprint). ``show_sizes=False``
leaves out what depends on the machine (database bytes, digest), for golden
tests.

A program of more than ``FULL_LIMIT`` rules is summarized (``full=None``
decides by size; ``full=True`` forces every line): counts instead of one line
per rule, predicate and pattern; per database its pattern count, how its
patterns run and (``show_sizes``) its serialized size; every native
predicate and every fallback up to ``LIST_LIMIT`` lines each (then counts per
field or reason); the fingerprint fields.
"""

from __future__ import annotations

import json

import hyperscan

from etl.matching.ir import Const, FilterProgram, HsPattern, leaves, render_expr
from etl.optimize.normalize import shared_subexpressions

_FLAG_NAMES = (
    (hyperscan.HS_FLAG_CASELESS, "caseless"),
    (hyperscan.HS_FLAG_DOTALL, "dotall"),
    (hyperscan.HS_FLAG_MULTILINE, "multiline"),
    (hyperscan.HS_FLAG_SINGLEMATCH, "singlematch"),
    (hyperscan.HS_FLAG_UTF8, "utf8"),
    (hyperscan.HS_FLAG_UCP, "ucp"),
)


def flag_names(flags: int) -> str:
    return ",".join(name for bit, name in _FLAG_NAMES if flags & bit)


def _mode(p: HsPattern) -> str:
    if p.exact:
        return ""
    if p.ascii_rows == "confirm":
        return f"  [prefilter, confirmed by re: {p.note}]"
    how = "re decides" if p.other_rows == "python" else "reports confirmed by re"
    return f"  [non-ASCII values: {how}: {p.note}]"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


FULL_LIMIT = 200
LIST_LIMIT = 50


def explain(program: FilterProgram, show_sizes: bool = True, full: bool | None = None) -> str:
    if full is None:
        full = len(program.rules) <= FULL_LIMIT
    if not full:
        return summary(program, show_sizes)
    done = set(program.passes)
    preds = program.predicates
    lines = _head_lines(program, show_sizes)
    where = _evaluated_by(program)
    lines.append("rules:")
    for r in program.rules:
        lines.append(f"  {r.rule_id}: {render_expr(r.expr)}")
    if preds:
        lines.append("predicates:")
        for pr in preds:
            tag = f"  [{where[pr.index]}]" if pr.index in where else ""
            lines.append(f"  p{pr.index} {pr.key.describe()}{tag}")
    if "native_split" in done:
        lines.append(f"native predicates (evaluated first): {len(program.natives)}")
        for n in program.natives:
            how = n.sql if n.sql is not None else "(matcher only, per distinct value)"
            lines.append(f"  p{n.leaf} {how}")
    if "merge_by_field" in done:
        lines.extend(_database_lines(program, show_sizes))
        pre = [(db, p) for db in program.databases for p in db.patterns if p.ascii_rows != "exact"]
        lines.append(f"fallbacks: {len(program.fallbacks)} python re, {len(pre)} prefilter")
        for f in program.fallbacks:
            rx = json.dumps(f.python_regex, ensure_ascii=True)
            lines.append(f"  p{f.leaf} python re {rx}: {f.reason}; rules {', '.join(f.rules)}")
        lines.extend(_prefiltered_lines(program, pre))
    return "\n".join(lines) + "\n"


def _head_lines(program: FilterProgram, show_sizes: bool, note: str = "") -> list[str]:
    """The first lines of both texts: counts, digest, passes, fingerprint fields, the JVM's prefilter and rules."""
    head = f"filter program: {_n(len(program.rules), 'rule')}, {_n(len(program.predicates), 'predicate')}"
    if "normalize" in program.passes:
        head += f", shared sub-expressions: {shared_subexpressions(program)}"
    lines = [head + note]
    if show_sizes and program.digest:
        lines.append(f"digest: {program.digest[:16]}")
    lines.append("passes: " + ", ".join(p for p in program.passes if p != "lift"))
    if program.fingerprint_fields:
        lines.append("fingerprint fields: " + ", ".join(program.fingerprint_fields))
    lines.extend(_prefilter_lines(program))
    lines.extend(_jvm_lines(program))
    return lines


def _evaluated_by(program: FilterProgram) -> dict[int, str]:
    """predicate index -> what evaluates it (native, a Hyperscan database's pattern, python re)."""
    where: dict[int, str] = {}
    for n in program.natives:
        where[n.leaf] = "native"
    for db in program.databases:
        for p in db.patterns:
            for leaf in p.leaves:
                where[leaf] = f"hyperscan {db.subject} #{p.pattern_id}"
    for f in program.fallbacks:
        where[f.leaf] = "python re"
    return where


def _database_lines(program: FilterProgram, show_sizes: bool) -> list[str]:
    lines = [f"pattern databases: {len(program.databases)}"]
    for db in program.databases:
        size = ""
        if show_sizes and db.serialized is not None:
            size = f", {len(db.serialized)} bytes"
        lines.append(f"  {db.subject}: {_n(len(db.patterns), 'pattern')}{size}")
        for p in db.patterns:
            expr = json.dumps(p.expression.decode("utf-8"), ensure_ascii=True)
            served = ", ".join(f"p{x}" for x in p.leaves)
            lines.append(f"    #{p.pattern_id} {expr} ({flag_names(p.flags)}) -> {served}{_mode(p)}")
    return lines


def _prefiltered_lines(program: FilterProgram, pre: list) -> list[str]:
    """One line per pattern that only prefilters (its rows confirmed by python re), with the rules it serves."""
    lines = []
    for db, p in pre:
        rules: dict[str, None] = {}
        for leaf in p.leaves:
            for rid in program.predicates[leaf].rules:
                rules.setdefault(rid)
        served = ", ".join(f"p{x}" for x in p.leaves)
        lines.append(f"  {served} prefilter {db.subject} #{p.pattern_id}: {p.note}; rules {', '.join(rules)}")
    return lines


def _prefilter_lines(program: FilterProgram) -> list[str]:
    """The JVM literal prefilter a filter runs first (etl.compile.prefilter), when it has one."""
    from etl.optimize.literals import program_literals

    lits = program_literals(program)
    if not lits:
        return []
    per_field = "; ".join(f"{f} contains one of {_n(len(v), 'literal')}" for f, v in sorted(lits.items()))
    return [f"jvm literal prefilter: {per_field}"]


def _jvm_lines(program: FilterProgram) -> list[str]:
    """Whether the rules are decided in the JVM (etl.compile.rules_jvm) where etl's jar is loaded, or why not."""
    from etl.optimize.jvmprogram import jvm_plan

    if "fallback" not in program.passes:
        return []
    plan = jvm_plan(program)
    if plan.body is None:
        from etl.optimize.jvmmulti import multi_plan

        multi = multi_plan(program)
        if multi.body is not None:
            return [f"jvm rules: {_n(len(multi.fields), 'string field')} ({', '.join(multi.fields)}), "
                    f"{_n(multi.needles, 'needle')}, {_n(len(multi.regexes), 'java.util.regex pattern')}"]
        return [f"jvm rules: no, python workers ({multi.reason})"]
    return [f"jvm rules: java.util.regex, {_n(plan.patterns, 'pattern')}" + (f" on {plan.field}" if plan.field else "")]


def _counts(items: list[str]) -> str:
    seen: dict[str, int] = {}
    for x in items:
        seen[x] = seen.get(x, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(seen.items(), key=lambda kv: (-kv[1], kv[0])))


def _listed(lines: list[str], out: list[str], rest: str) -> None:
    out.extend(lines[:LIST_LIMIT])
    if len(lines) > LIST_LIMIT:
        out.append(f"  ... and {len(lines) - LIST_LIMIT} more ({rest})")


def summary(program: FilterProgram, show_sizes: bool = True) -> str:
    """The text of a large program: counts and per-field facts rather than one line per rule."""
    done = set(program.passes)
    preds = program.predicates
    lines = _head_lines(program, show_sizes, f" (summary: more than {FULL_LIMIT} rules)")
    native = {n.leaf for n in program.natives}
    kinds = []
    for r in program.rules:
        if isinstance(r.expr, Const):
            kinds.append("constant")
            continue
        ls = leaves(r.expr)
        nat = sum(1 for x in ls if x in native)
        kinds.append("native only" if nat == len(ls) else "with natives" if nat else "patterns only")
    lines.append(f"rules: {len(program.rules)} ({_counts(kinds)})")
    lines.append(f"predicates: {len(preds)} ({_counts([p.key.op for p in preds])})")
    if "native_split" in done:
        lines.append(f"native predicates (evaluated first): {len(program.natives)}")
        nat_lines = [f"  p{n.leaf} {n.sql if n.sql is not None else '(matcher only) ' + n.key.describe()}"
                     for n in program.natives]
        _listed(nat_lines, lines, "per field: " + _counts([n.key.field for n in program.natives]))
    if "merge_by_field" in done:
        lines.append(f"pattern databases: {len(program.databases)}")
        for db in program.databases:
            size = f", {len(db.serialized)} bytes" if show_sizes and db.serialized is not None else ""
            modes = []
            for p in db.patterns:
                if p.exact:
                    modes.append("exact")
                elif p.ascii_rows == "confirm":
                    modes.append("prefilter confirmed by re")
                else:
                    modes.append("non-ASCII values refined by re")
            caseless = sum(1 for p in db.patterns if p.flags & hyperscan.HS_FLAG_CASELESS)
            lines.append(f"  {db.subject}: {_n(len(db.patterns), 'pattern')}{size} ({_counts(modes)}"
                         + (f"; {caseless} caseless" if caseless else "") + ")")
        pre = [(db, p) for db in program.databases for p in db.patterns if p.ascii_rows != "exact"]
        lines.append(f"fallbacks: {len(program.fallbacks)} python re, {len(pre)} prefilter")
        fb_lines = []
        for f in program.fallbacks:
            rx = json.dumps(f.python_regex, ensure_ascii=True)
            subject = f.field
            for d in f.derivations:
                subject = f"{d}({subject})"
            fb_lines.append(f"  p{f.leaf} python re on {subject} {rx}: {f.reason}; rules {', '.join(f.rules)}")
        fb_lines.extend(_prefiltered_lines(program, pre))
        _listed(fb_lines, lines, "by reason: " + _counts(
            [f.reason.split(" (")[0] for f in program.fallbacks] + [str(p.note).split(" (")[0] for _, p in pre]))
    return "\n".join(lines) + "\n"
