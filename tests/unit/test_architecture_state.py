"""Module-level state of etl (issue 39): a name bound at module level to a dict, list or set (scripts/arch_counts.py
counts them) is either a constant table that nothing writes to, or state listed below with why it lives in the
module and not in an object the session or the run owns. A new one fails here until it is one or the other.

"Nothing writes to it" is proven from etl's source: every use of the name, in its module and wherever it is
imported, reads it (an item, a lookup, `in`, a loop, a copy, an unpacking); a frozenset, tuple or MappingProxyType
is not counted at all.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ETL = ROOT / "etl"

# module:name -> why it is module-level state (a process-wide fact, or the one table of what etl learned about a
# Spark session); a cache of pure results is a WorkerCache (below), not listed here
ALLOWED = {
    # the registry: components register themselves when their module is imported (entry points too)
    "etl.registry:_REGISTRY": "the component registry, filled by @component at import (built-ins and entry points)",
    # per process (no session or run object lives on an executor's Python worker)
    "etl.compile.bounds:_STATE": "a Python worker's memory limit and timer handler, installed once per process",
    "etl.connectors.rocketmq_client:_cache": "a Python worker's RocketMQ clients (one per endpoint and group)",
    "etl.grokvm.props:_CACHES": "the grok VM's per-process property caches (clear_caches empties them)",
    # per Spark session, owned by it
    "etl.workercache:_OWNED": "what etl learned about a SparkSession or SparkContext (owned_by: the jar loads in "
                              "its JVM, the files added to it, the prefilter's sessions, the data sources registered, "
                              "BatchRows, the guard's warning said), weakly keyed: it goes with its owner",
    # per process: etl's jar (a file, built once) and the JVM prefilter's failure
    "etl.compile.jvm:_JAR": "etl's jar, built or found once per process",
    "etl.compile.jvm:_WHY": "why etl's jar could not be had, logged once per process",
    "etl.compile.prefilter:_BROKEN": "why the prefilter is unavailable in this process, logged once",
    # per process: the cache folder decided, and the Java regex texts numbered (append-only)
    "etl.diskcache:_PRIVATE": "the cache folder used for a folder asked for, decided once per process",
    "etl.regexes.javaregex:_SHARED": "long class texts of translated patterns, append-only, numbered",
    "etl.regexes.javaregex:_SHARED_TEXT": "the texts _SHARED numbers, in order",
    # process-wide settings and secrets
    "etl.load.paths:_ALLOWED": "the folders --allow-path allows besides the pipeline's, for this process",
    "etl.secrets:_values": "the secret values to redact from every message of the process (etl.secrets.redact)",
    # constant tables read through a function that takes any mapping (not provable from the call alone)
    "etl.runtime.session:LAUNCH_DEFAULTS": "a constant table, completed once at import (Unix sockets where there are)",
    "etl.commands.schema:TEMPLATE": "a constant schema fragment, copied into the generated JSON Schema",
    "etl.load.sigma_presets:_WINLOG": "a constant field map, read by _winlog's lookup function",
    "etl.load.sigma_presets:_ECS": "a constant field map, read by _winlog's lookup function",
    "etl.sql.functions:RULES": "a constant table of the SQL function rules, read by its checks",
}

# module:name -> what each per-process cache (etl.workercache.WorkerCache: bounded, emptied by clear_all) holds
WORKER_CACHES = {
    # on an executor's Python worker (no session or run object lives there)
    "etl.compile.functions:_LOADED": "a worker's loaded pipeline functions, by file and name (the pipeline's own)",
    "etl.compile.lookups.dimension:_TABLES": "a worker's dimension tables, re-read when their files change",
    "etl.compile.lookups.store:_BAD": "a worker's table versions that did not read, warned once (1,024 kept)",
    "etl.compile.lookups.store:_CACHE": "a worker's open rocksdict stores, closed when dropped",
    "etl.components.transforms.filter.build:_WORKER_CACHE": "a worker's rule matchers, the last _WORKER_KEEP kept",
    "etl.matching.matcher:_RUNTIMES": "a worker's loaded Hyperscan programs, the last _RUNTIMES_KEEP kept",
    "etl.runtime.partitions:LIVE": "a worker's sink instances kept for their partition's next batch, LIVE_KEEP kept",
    # pure functions of their key (a program's digest, a file's content, a pattern), on the driver too
    "etl.compile.rules_jvm_multi:_PLANS": "a program digest's MultiPlan, the last 16 kept",
    "etl.physical.engines:_BY_DIGEST": "values derived from a program digest, the last 64 kept",
    "etl.physical.planner:_MERGED": "the MergedProgram of member digests, the last 16 kept",
    "etl.diskcache:_MEMOS": "diskcache.memo's functions by name (a fixed set), each reading its file once",
    "etl.graph.names:_INDEXES": "a column set's did-you-mean index, checked against its names, 256 kept",
    "etl.load.rules:_CACHE": "rule files read, by path and content (_CACHE_MAX kept)",
    "etl.load.sigma_parse:_MEMORY": "Sigma files parsed, by path and stamp (a hot reload keeps a file's last good)",
    "etl.regexes.hsregex:_SLOW_VERDICTS": "a slow pattern's compile verdict, by pattern and flags (65,536 kept)",
    "etl.compile.prefilter:_BODIES": "the text of a prefilter's literal file, by its groups object (64 kept)",
}

# uses that read a table: a call of one of these on it, or it passed to one of these
READ_METHODS = {"get", "items", "keys", "values", "copy", "union", "intersection", "difference", "issubset",
                "issuperset", "isdisjoint"}
READ_FUNCTIONS = {"dict", "sorted", "len", "list", "set", "frozenset", "tuple", "any", "all", "min", "max",
                  "enumerate", "iter", "next", "zip", "map", "filter", "get_close_matches", "did_you_mean"}
READ_ARGUMENT_OF = {"update", "join", "union", "issubset", "isdisjoint"}  # x.update(TABLE), "".join(TABLE)


def _arch_counts():
    spec = importlib.util.spec_from_file_location("arch_counts", ROOT / "scripts" / "arch_counts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Uses:
    """Every name and attribute use in etl's source, and what each file imports (parsed once)."""

    def __init__(self) -> None:
        scan_of = _arch_counts().Scan
        self.mutable: list[tuple[str, str, int]] = []  # (module, name, line): arch_counts' module-level mutable names
        self.worker_caches: list[str] = []  # module:name of arch_counts' module-level WorkerCache objects
        self.names: dict[str, list[tuple[str, ast.Name]]] = {}
        self.attributes: dict[str, list[tuple[str, ast.Attribute]]] = {}
        self.imported: set[tuple[str, str, str]] = set()  # (file's module, module, name) imported unaliased
        self.aliases: set[tuple[str, str, str]] = set()  # (file's module, a module, the name it is bound to)
        for path in sorted(ETL.rglob("*.py")):
            mod = module_name(path)
            tree = ast.parse(path.read_text(), str(path))
            scan = scan_of(path)
            scan.visit(tree)
            self.mutable += [(scan.mod, name, line) for line, name in scan.mutable]
            self.worker_caches += [f"{scan.mod}:{name}" for _, name in scan.worker_caches]
            for node in ast.walk(tree):
                for child in ast.iter_child_nodes(node):
                    child.parent = node  # type: ignore[attr-defined]
                if isinstance(node, ast.Name):
                    self.names.setdefault(node.id, []).append((mod, node))
                elif isinstance(node, ast.Attribute):
                    self.attributes.setdefault(node.attr, []).append((mod, node))
                elif isinstance(node, ast.ImportFrom) and node.module:
                    for a in node.names:
                        if a.asname is None:
                            self.imported.add((mod, node.module, a.name))
                        self.aliases.add((mod, f"{node.module}.{a.name}", a.asname or a.name))
                elif isinstance(node, ast.Import):
                    self.aliases.update((mod, a.name, a.asname) for a in node.names if a.asname)

    def written(self, module: str, name: str) -> list[str]:
        """Every use of module.name in etl that does not only read it (module:line)."""
        out = []
        for mod, n in self.names.get(name, ()):
            if mod != module and (mod, module, name) not in self.imported:
                continue
            p = getattr(n, "parent", None)
            if isinstance(n.ctx, ast.Store) and isinstance(p, (ast.Assign, ast.AnnAssign)) \
                    and isinstance(getattr(p, "parent", None), ast.Module) and mod == module:
                continue  # its binding
            if not _reads(n):
                out.append(f"{mod}:{n.lineno}")
        for mod, a in self.attributes.get(name, ()):
            if isinstance(a.value, ast.Name) and (mod, module, a.value.id) in self.aliases and not _reads(a):
                out.append(f"{mod}:{a.lineno}")
        return out


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _reads(node: ast.expr) -> bool:
    """Does this use of a table only read it?"""
    p = getattr(node, "parent", None)
    if isinstance(p, ast.Subscript) and p.value is node:
        return isinstance(p.ctx, ast.Load)
    if isinstance(p, ast.Attribute) and p.value is node:
        call = getattr(p, "parent", None)
        return isinstance(call, ast.Call) and call.func is p and p.attr in READ_METHODS
    if isinstance(p, ast.Compare):
        return node in p.comparators and all(isinstance(o, (ast.In, ast.NotIn)) for o in p.ops)
    if isinstance(p, (ast.For, ast.comprehension)):
        return p.iter is node
    if isinstance(p, ast.Starred) or (isinstance(p, ast.Dict) and any(k is None and v is node
                                                                       for k, v in zip(p.keys, p.values, strict=True))):
        return True  # *TABLE, **TABLE
    if isinstance(p, ast.BinOp):
        return isinstance(p.op, (ast.BitOr, ast.BitAnd, ast.Sub))  # a new set or mapping
    if isinstance(p, ast.Call) and node in p.args:
        f = p.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        return name in READ_FUNCTIONS or (isinstance(f, ast.Attribute) and name in READ_ARGUMENT_OF)
    return False


@pytest.fixture(scope="module")
def uses() -> Uses:
    return Uses()


def test_module_level_mutable_names_are_read_only_tables_or_listed_state(uses):
    unexplained = []
    for module, name, line in uses.mutable:
        key = f"{module}:{name}"
        if key in ALLOWED:
            continue
        written = uses.written(module, name)
        if written:
            unexplained.append(f"{key} (line {line}) is written to at {', '.join(written[:3])}")
    assert not unexplained, ("module-level state: make it an object the session or the run owns, a frozenset, "
                             "tuple or MappingProxyType, or list it in ALLOWED with why:\n" + "\n".join(unexplained))


def test_the_allowed_list_names_only_what_is_there(uses):
    there = {f"{m}:{n}" for m, n, _ in uses.mutable}
    assert sorted(set(ALLOWED) - there) == []


def test_the_per_process_caches_are_the_listed_ones(uses):
    assert sorted(uses.worker_caches) == sorted(WORKER_CACHES)


def test_a_written_table_is_found():
    # the proof's own check: a table a function writes to is not read-only, one it only reads is
    tree = ast.parse("T = {}\nU = {}\ndef f(k):\n    T[k] = 1\n    return U.get(k), k in U, [*U]\n")
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child.parent = node  # type: ignore[attr-defined]
    uses = {n.id: [] for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in ("T", "U")}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id in uses and not isinstance(n.parent, ast.Assign):
            uses[n.id].append(_reads(n))
    assert uses == {"T": [False], "U": [True, True, True]}
