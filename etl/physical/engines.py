"""Engines: each one says whether it can run a node here (or why not) and names its build function.

An engine's `can_run(subject, target)` returns None when it can run the node
with these settings, else the reason it cannot; `build` is "module:function",
imported by etl.compile only (the planner never imports pyspark). Engines of
one aspect are listed in order of preference: the planner takes the first that
can run. Checks that need the data's actual Spark types (a column the graph
does not type) are repeated by the builder, which then records the engine it
really used (etl.compile.context.CompileContext.record).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from collections.abc import Callable

from etl.graph.model import Graph, Node
from etl.physical.target import Target
from etl.spec.aggregates import AGGREGATES
from etl.workercache import WorkerCache


@dataclass(frozen=True)
class Subject:
    """What an engine looks at: the node, its graph and its optimized program (filters with rules)."""

    node: Node
    graph: Graph
    program: Any = None
    store: str | None = None  # a lookup's store once known (`auto` on a table counted at start)

    def input_type(self, column: str) -> str | None:
        """The declared type of an input column (None: not known before the data is read)."""
        ins = [e for e in self.node.inputs if e.role == "input"]
        cols = self.graph.columns_of(ins[0].ref) if len(ins) == 1 else None
        return dict(cols or ()).get(column)


Check = Callable[[Subject, Target], "str | None"]


@dataclass(frozen=True)
class Engine:
    name: str
    aspect: str
    build: str  # "module:function"
    can_run: Check
    does: str  # one line: what it does (the reason shown when it is picked)
    python: bool = False  # runs in Python workers (a Python UDF, mapInArrow): not in Spark's real-time mode


def _always(s: Subject, t: Target) -> None:
    return None


def _jar(t: Target) -> str | None:
    return None if t.jvm else f"etl's jar is not on the class path: {t.jvm_why or 'no JDK'}"


# ------------------------------------------------------------------- rules
# (what, program digest) -> (the program, a value derived from it): pure functions of the program, 64 kept
_BY_DIGEST: WorkerCache[tuple[str, str], Any] = WorkerCache("values derived from a program digest", 64)


def _of_program(what: str, program: Any, make: Callable[[Any], Any]) -> Any:
    """`make(program)`, once per program digest (programs are large: hashing them per call would cost)."""
    key = (what, getattr(program, "digest", "") or f"id:{id(program)}")
    got = _BY_DIGEST.get(key)
    if got is None or got[0] is not program and not getattr(program, "digest", ""):
        got = _BY_DIGEST[key] = (program, make(program))
    return got[1]


def jvm_rule_plan(program: Any) -> Any:
    """The program's etl.optimize.jvmprogram.JvmPlan (its body is None when it cannot run in the JVM)."""
    from etl.optimize.jvmprogram import jvm_plan

    return _of_program("jvm", program, jvm_plan)


def _not_strings(s: Subject, fields: Any) -> str | None:
    """Why not, when one of `fields` is declared with another type than string (unknown types pass)."""
    for f in fields:
        typ = s.input_type(f)
        if typ is not None and typ != "string":
            return f"field {f} is {typ}, not a string"
    return None


def _jvm_rules(s: Subject, t: Target, plan: Any, fields: list[str]) -> str | None:
    """What both JVM rule engines need: the switch, the jar, no step-budget demotion, a program file (`plan`),
    string columns for `fields`."""
    if not t.rules_jvm:
        return "ETL_RULES_JVM is off"
    if (why := _jar(t)) is not None:
        return why
    if getattr(s.program, "digest", "") in t.demoted:
        return "a pattern ran past its java.util.regex step budget in this run (moved to Hyperscan)"
    if plan.body is None:
        return plan.reason or "not eligible"
    return _not_strings(s, fields)


def _rules_jvm(s: Subject, t: Target) -> str | None:
    plan = jvm_rule_plan(s.program)
    return _jvm_rules(s, t, plan, [plan.field] if plan.field is not None else [])


def jvm_multi_plan(program: Any) -> Any:
    """The program's etl.optimize.jvmmulti.MultiPlan (rules over several string fields; body None: not here)."""
    from etl.optimize.jvmmulti import multi_plan

    return _of_program("jvm-multi", program, multi_plan)


def _rules_jvm_multi(s: Subject, t: Target) -> str | None:
    plan = jvm_multi_plan(s.program)
    return _jvm_rules(s, t, plan, list(plan.fields or ()))


# --------------------------------------------------------------- prefilter
# three needs per pattern: bench/filter.py --rules 1000 lets 2.7 % of the rows through instead of 10.5 % (the other
# needs are checked only when the first one is found: the pass costs the same)
PREFILTER_NEEDS = 3
def literal_groups(program: Any) -> Any:
    """Per field, the literal groups a row must satisfy to match (etl.optimize.literals), or None."""
    from etl.optimize.literals import program_literal_groups

    return _of_program("literals", program, lambda p: program_literal_groups(p, max_needs=PREFILTER_NEEDS))


def _prefilter_common(s: Subject, t: Target) -> str | None:
    if not t.prefilter:
        return "ETL_PREFILTER is off"
    lits = literal_groups(s.program)
    if not lits:
        return "some rule can match a row without a known literal"
    return _not_strings(s, lits)


def _prefilter_jvm(s: Subject, t: Target) -> str | None:
    return _prefilter_common(s, t) or _jar(t)


def _prefilter_udf(s: Subject, t: Target) -> str | None:
    if (why := _prefilter_common(s, t)) is not None:
        return why
    if t.jvm:
        return "the static call is cheaper where the jar is on the class path"
    return None if t.jdk else "no etl jar for ADD JAR (no packaged jar of these sources, no JDK to build one)"


# -------------------------------------------------------------------- grok
@lru_cache(maxsize=64)
def _grok(pattern: str, custom: tuple, library: str, named_only: bool) -> Any:
    from etl.grok import expand

    return expand(pattern, dict(custom) or None, library, named_only)


def grok_of(node: Node) -> Any:
    """The expanded pattern, or the error text when it does not expand (compile reports it, E302)."""
    from etl.grok import GrokError

    try:
        return _grok(node.spec.regex_source(), tuple(sorted(dict(node.spec.custom_patterns).items())), node.spec.patterns,
                     node.spec.named_captures_only)
    except GrokError as e:
        return str(e)


def _grok_program(s: Subject, t: Target) -> str | None:
    if not t.grok_program:
        return "ETL_GROK_PROGRAM is off"
    if (why := _jar(t)) is not None:
        return why
    g = grok_of(s.node)
    if isinstance(g, str):
        return f"the pattern does not expand: {g}"
    from etl.grokvm.cache import program_bytes

    prog, why = program_bytes(g.python_regex)
    return None if prog is not None else f"no matcher program: {why}"


def _java_regex(s: Subject, t: Target) -> str | None:  # and dissect-jvm
    return _jar(t)


# ------------------------------------------------------------------ lookup
AUTO_MAX_BYTES = 16 * 1000**2  # etl.compile.lookups.dimension: `auto` broadcasts files up to this size
KEY_TYPES = frozenset({"string", "int", "integer", "bigint", "long", "smallint", "short", "tinyint", "byte", "boolean",
                       "date"})


def lookup_store(s: Subject, t: Target | None = None) -> tuple[str, str]:
    """(store, why): the store `spec.store` asks for, or `auto`'s pick (a forced store engine, else by the table
    file's size)."""
    spec = s.node.spec
    if s.store is not None:
        return s.store, f"auto: {s.store} by the table's rows at start"
    if spec.store != "auto":
        return spec.store, f"store: {spec.store}"
    forced = sorted(e.split("-")[0] for e in (t.force if t is not None else ()) if e in _STORE_ENGINES)
    if forced:
        return forced[0], f"auto: {forced[0]} forced"
    table = s.graph.node(spec.table).spec
    if not table.PATH_FIELD:  # not a table in files
        return "auto", f"a {table.type} table: broadcast up to 1,000,000 rows, else rocksdb (counted at start)"
    path = table.path if os.path.isabs(table.path) else os.path.join(s.graph.base_dir or ".", table.path)
    try:
        if os.path.isdir(path):
            size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
        else:
            size = os.path.getsize(path)
    except OSError:
        return "auto", f"table file {table.path} not found: decided at start"
    store = "broadcast" if size <= AUTO_MAX_BYTES else "rocksdb"
    return store, f"auto: table file {'<=' if store == 'broadcast' else '>'} {AUTO_MAX_BYTES // 1000**2} MB"


_STORE_ENGINES = ("broadcast", "rocksdb-jvm", "rocksdb-python")


def _broadcast(s: Subject, t: Target) -> str | None:
    store, why = lookup_store(s, t)
    return None if store in ("broadcast", "auto") else why


def _rocksdb(s: Subject, t: Target) -> str | None:
    store, why = lookup_store(s, t)
    return None if store == "rocksdb" else why


def rocksdb_jvm_why(t: Target) -> str | None:
    """Why the JVM cannot hold a rocksdb lookup's table with these settings (None: it can)."""
    if not t.lookup_jvm:
        return "ETL_LOOKUP_JVM is off"
    if not t.local:
        return f"master {t.master} is not local: each executor's Python workers hold the store"
    return _jar(t)


def _rocksdb_jvm(s: Subject, t: Target) -> str | None:
    if (why := _rocksdb(s, t) or rocksdb_jvm_why(t)) is not None:
        return why
    for k in s.node.spec.on:
        typ = s.input_type(k)
        if typ is not None and typ.lower() not in KEY_TYPES:
            return f"key {k} is {typ}"
    return None


# ------------------------------------------------------------------ window
def _native_window(s: Subject, t: Target) -> str | None:
    emit = s.node.spec.emit
    if emit.early is not None:
        return "early emission needs the state engine"
    if emit.late == "dead_letter":
        return "late events to dead letters need the state engine"
    if emit.late == "update":
        return "late updates of closed windows need the state engine"
    python = [a.fn for a in s.node.spec.aggregates if a.fn not in AGGREGATES]
    if python:
        return (f"Python aggregate function {python[0]}: Spark's streaming aggregation cannot run pandas "
                "aggregate UDFs")
    return None


# -------------------------------------------------------------- sink writes
def _executors(s: Subject, t: Target) -> str | None:
    return getattr(s.node.spec, "DRIVER_ONLY", None)


def _spark_writer(s: Subject, t: Target) -> str | None:
    if getattr(s.node.spec, "SPARK_WRITER", None) is None:
        return "only file sinks write with Spark's file writers"
    return None


# --------------------------------------------------------------- json lines
def _writable(typ: str) -> bool:
    t = typ.lower().replace(" ", "")
    if t.startswith("array<"):
        return _writable(t[6:-1])
    if t.startswith("struct<"):
        return all(_writable(part.split(":", 1)[1]) for part in _split_top(t[7:-1]))
    return t in ("string", "boolean", "tinyint", "smallint", "int", "integer", "bigint", "long", "float",
                 "double", "date", "timestamp") or t.startswith("decimal")


def _split_top(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "<(" and 1 or ch in ">)" and -1 or 0
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + ([cur] if cur else [])


def _spark_json(s: Subject, t: Target) -> str | None:
    if getattr(s.node.spec, "SPARK_WRITER", None) is None:
        return "the sink does not write with Spark's file writers"
    return None


def _json_jvm(s: Subject, t: Target) -> str | None:
    if (why := _jar(t)) is not None:
        return why
    cols = s.graph.input_columns(s.node.id)
    known = [c for cs in cols if cs is not None for c in cs]
    bad = [f"{n}:{typ}" for n, typ in known if not _writable(typ)]
    return f"JsonLines.java does not write {', '.join(bad)}" if bad else None


def _jsonl_jvm(s: Subject, t: Target) -> str | None:
    return _jar(t)


def _json_parse_jvm(s: Subject, t: Target) -> str | None:
    return _jar(t)


# ------------------------------------------------------------ write counts
def _batchrows_jvm(s: Subject, t: Target) -> str | None:
    return _spark_writer(s, t) or _jar(t)


ENGINES: tuple[Engine, ...] = (
    Engine("rules-jvm", "rules", "etl.compile.rules_jvm:verdict", _rules_jvm,
           "patterns on one string field, decided by RuleMatch in generated code (no Python worker)"),
    Engine("rules-jvm-multi", "rules", "etl.compile.rules_jvm_multi:verdict", _rules_jvm_multi,
           "rules over several string fields (needles, literals, patterns, cidr) decided by RuleMatch.anyRow/idsRow "
           "in generated code (no Python worker)"),
    Engine("rules-python", "rules", "etl.components.transforms.filter.build:_verdict", _always,
           "Hyperscan matcher in an Arrow UDF over the columns the rules read", python=True),
    Engine("prefilter-jvm", "prefilter", "etl.compile.prefilter:literal_test", _prefilter_jvm,
           "LiteralPrefilter.test on the rules' literals in generated code before the matcher"),
    Engine("prefilter-udf", "prefilter", "etl.compile.prefilter:literal_test", _prefilter_udf,
           "the etl_literal_prefilter UDF (ADD JAR) on the rules' literals before the matcher"),
    Engine("no-prefilter", "prefilter", "", _always, "every row goes to the matcher"),
    Engine("grok-program", "captures", "etl.components.transforms.grok.build:with_captures", _grok_program,
           "Grok.java with the compiled matcher program (etl/grokvm), java.util.regex for the captures"),
    Engine("java-regex", "captures", "etl.components.transforms.grok.build:with_captures", _java_regex,
           "Grok.java: one java.util.regex search per line"),
    Engine("spark-regexp", "captures", "etl.components.transforms.grok.build:with_captures_sql", _always,
           "regexp_replace + split in Spark SQL"),
    Engine("dissect-jvm", "dissect", "etl.components.transforms.dissect.build:values", _java_regex,
           "Dissect.java: each line scanned for the pattern's delimiters in generated code"),
    Engine("dissect-python", "dissect", "etl.components.transforms.dissect.build:values", _always,
           "etl.dissect's reference scan in a Python UDF (Arrow)", python=True),
    Engine("broadcast", "store", "etl.compile.lookups.dimension:_broadcast", _broadcast,
           "broadcast hash join against the table"),
    Engine("rocksdb-jvm", "store", "etl.compile.lookups.jvm:jvm_lookup", _rocksdb_jvm,
           "rocksdict store held by the JVM (LookupTables), looked up in generated code"),
    Engine("rocksdb-python", "store", "etl.compile.lookups.dimension:_rocksdb", _rocksdb,
           "rocksdict store looked up by mapInArrow in Python workers of the table's own", python=True),
    Engine("native", "window", "etl.compile.windows.aggregate:window_aggregate", _native_window,
           "Spark's window aggregation with watermark"),
    Engine("state", "window", "etl.compile.windows.aggregate:state_aggregate", _always,
           "transformWithState over RocksDB (early results, late dead letters, Python aggregates)"),
    Engine("spark-writer", "write", "etl.components.sinks.file.hadoop:spark_write", _spark_writer,
           "Spark's own file writer on the executors into the batch's staging folder (Hadoop FileSystem API, any "
           "Hadoop URI); the driver publishes the batch (manifest, renames)"),
    Engine("executors", "write", "etl.runtime.partitions:run_partitions", _executors,
           "each partition of a micro-batch written by its own sink instance on its executor; the driver commits"),
    Engine("driver", "write", "etl.runtime.sink:AbstractSink.write_arrow", _always,
           "rows streamed over Arrow to the sink on the driver, committed per batch id"),
    Engine("spark-json", "json", "etl.components.sinks.file.hadoop:spark_write", _spark_json,
           "Spark's json writer renders each row as it writes it (the text of to_json), no column of lines"),
    Engine("json-jvm", "json", "etl.components.sinks.file.jsonlines:json_lines", _json_jvm,
           "JsonLines.java renders each row with its newline"),
    Engine("to_json", "json", "etl.components.sinks.file.jsonlines:json_lines", _always, "Spark's to_json"),
    Engine("jsonl-jvm", "reader", "etl.components.sources.file.build:build", _jsonl_jvm,
           "JsonLinesFormat.java: Spark's line reader and JSON parser with its PERMISSIVE rules, without the copy "
           "of every row Spark's reader makes for the malformed-line check; ISO-8601 timestamps with their zone "
           "converted without Spark's per-value zone lookup"),
    Engine("spark-json-reader", "reader", "etl.components.sources.file.build:build", _always,
           "Spark's json reader (PERMISSIVE, a corrupt-record column for malformed lines)"),
    Engine("text-jvm", "lines", "etl.components.sources.file.build:build", _jsonl_jvm,
           "TextLinesFormat.java: Spark's text source with each line checked (ETL_MAX_RECORD_MB, valid UTF-8) before "
           "it is kept: a longer or invalid line is a dead letter"),
    Engine("spark-text-reader", "lines", "etl.components.sources.file.build:build", _always,
           "Spark's text source (no maximum line size, lines not checked)"),
    Engine("index-jvm", "offsets", "etl.components.sources.generator.build:build", lambda s, t: _jar(t),
           "GeneratorIndex.java: the event indices and their offsets in the JVM; their events made by numpy in the "
           "shared Python workers (mapInArrow)", python=True),
    Engine("python-source", "offsets", "etl.components.sources.generator.build:build", _always,
           "the Python data source etl_generator: Spark keeps a Python process per query for its offsets", python=True),
    Engine("json-parse-jvm", "parser", "etl.compile.json_parse:json_struct", _json_parse_jvm,
           "JsonParse.java: from_json's parser and PERMISSIVE rules in the generated code, without the copy of every "
           "row from_json makes for the corrupt-record column; ISO-8601 timestamps with their zone converted "
           "without Spark's per-value zone lookup"),
    Engine("from_json", "parser", "etl.compile.json_parse:json_struct", _always,
           "Spark's from_json (PERMISSIVE, a corrupt-record column for malformed values)"),
    Engine("batchrows-jvm", "count", "etl.components.sinks.file.hadoop:batchrows_count", _batchrows_jvm,
           "BatchRows.java: a filter of the write counts the rows written and sets a stage's failed rows aside in "
           "generated code (accumulators of successful tasks)"),
    Engine("observe", "count", "etl.components.sinks.file.hadoop:observed_count", _spark_writer,
           "DataFrame.observe: count(1) and collect_list of the failed rows, aggregated beside the write"),
)


def engines(aspect: str) -> tuple[Engine, ...]:
    return tuple(e for e in ENGINES if e.aspect == aspect)


def engine(name: str) -> Engine:
    return next(e for e in ENGINES if e.name == name)
