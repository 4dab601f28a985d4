"""No hidden coupling between etl's modules (issue 39): no import cycle, no private name imported from another
module, and an import of an etl module inside a function only where a module-level one would cost something:

- it pulls a heavy package (pyspark, pyarrow, numpy, hyperscan ...) the importing module does not already pull;
- it would close a cycle at module level (the target's module-level imports reach the importing module);
- it is an optional import (inside try: ... except ImportError);
- the module is one a plugin imports (tests/fixtures/plugin: etl.physical.engines ...) and the import loads etl.spec's
  unions, which load the plugins (etl.registry's entry points): at module level a plugin would get it half-loaded;
- in a module `etl validate` may import (every layer but compile, runtime, connectors): it keeps a module that
  `etl validate` of a plain YAML pipeline does not load off that path (etl.grok's pattern library, the SQL
  front-end's compiler, the runtime's modules ...).

Static: the source's ASTs are read, nothing of etl is imported here but by one `etl validate` run.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ETL = ROOT / "etl"
# packages that cost a noticeable import (or a JVM): imported at module level only by the modules that need them
HEAVY = ("pyspark", "py4j", "pandas", "pyarrow", "numpy", "hyperscan", "rocksdict", "pygrok", "regex", "re2",
         "confluent_kafka", "pymysql", "prometheus_client", "sigma", "typer", "rich", "click", "yaml",
         "jinja2", "ruamel")  # these two: YAML and templating stay out of the graph, plan and SQL layers
EXECUTION = ("etl/compile/", "etl/runtime/", "etl/connectors/")  # not on validate's path: pyspark is theirs
PLUGIN = ROOT / "tests" / "fixtures" / "plugin"  # the test plugin: the etl modules it imports are the plugins' API
LOADS_PLUGINS = "etl.spec.pipeline"  # its component unions ask the registry, which loads the plugins
MAX_IN_FUNCTION = 150  # in-function imports of etl modules: 478 before issue 39, 182 after its first round


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(ETL.rglob("*.py"))}


def _own(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").split(".")[0] == "etl"
    return all(a.name.split(".")[0] == "etl" for a in node.names)


def _targets(mod: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement loads (a from-import's names may be submodules)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = mod.split(".") if MODULES[mod].name == "__init__.py" else mod.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [target] + [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]


def _with_parents(mod: str) -> list[str]:
    parts = mod.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


@cache
def _tree(mod: str) -> ast.Module:
    return ast.parse(MODULES[mod].read_text(), str(MODULES[mod]))


@cache
def _top_imports(mod: str) -> frozenset[str]:
    """What importing `mod` loads directly: its module-level imports (not under TYPE_CHECKING) and its packages."""
    out: set[str] = set(_with_parents(mod)[:-1])

    def visit(body: list[ast.stmt]) -> None:
        for st in body:
            if isinstance(st, (ast.Import, ast.ImportFrom)) and not (
                    isinstance(st, ast.ImportFrom) and st.module == "__future__"):
                for t in (_targets(mod, st) if _own(st) else
                          [a.name for a in st.names] if isinstance(st, ast.Import) else [st.module or ""]):
                    out.update(_with_parents(t))
            elif isinstance(st, ast.If) and "TYPE_CHECKING" not in ast.unparse(st.test):
                visit(st.body)
                visit(st.orelse)
            elif isinstance(st, ast.Try):
                visit(st.body)
                for h in st.handlers:
                    visit(h.body)
                visit(st.orelse)
                visit(st.finalbody)

    visit(_tree(mod).body)
    out.discard(mod)
    return frozenset(out)


@cache
def _closure(mod: str) -> frozenset[str]:
    seen: set[str] = set()
    todo = [mod]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(_top_imports(m) if m in MODULES else ())
    return frozenset(seen)


def _pulls(mods: frozenset[str] | set[str], package: str) -> bool:
    return any(m == package or m.startswith(package + ".") for m in mods)


def _heavy(mods: frozenset[str] | set[str]) -> set[str]:
    return {h for h in HEAVY if _pulls(mods, h)}


def _in_function_imports() -> list[tuple[str, str, int, ast.Import | ast.ImportFrom, bool]]:
    """(file, module, line, node, inside a try) of every import of an etl module inside a function."""
    out = []
    for mod, path in MODULES.items():
        def walk(node: ast.AST, in_fn: bool, in_try: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)) and in_fn and _own(child):
                    out.append((str(path.relative_to(ROOT)), mod, child.lineno, child, in_try))  # noqa: B023 (called at once)
                walk(child, in_fn or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
                     in_try or isinstance(child, ast.Try))

        walk(_tree(mod), False, False)
    return out


@cache
def _plugin_api() -> frozenset[str]:
    """The etl modules the test plugin imports at module level."""
    out: set[str] = set()
    for path in PLUGIN.rglob("*.py"):
        for st in ast.parse(path.read_text(), str(path)).body:
            if isinstance(st, ast.ImportFrom) and not st.level and (st.module or "").split(".")[0] == "etl":
                out.add(st.module or "")
    return frozenset(out)


@cache
def _validate_loads() -> frozenset[str]:
    """The modules `etl validate` of a plain YAML pipeline (a source, a dedupe, a sink: no expression) loads."""
    code = "import sys, json; from etl.check import check_file; check_file(sys.argv[1], environ={}); " \
           "print(json.dumps(sorted(sys.modules)))"
    res = subprocess.run([sys.executable, "-c", code, "pipelines/example_dedupe.yaml"], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=120)
    return frozenset(json.loads(res.stdout.splitlines()[-1]))


def _why_in_function(file: str, mod: str, node: ast.Import | ast.ImportFrom, in_try: bool) -> str | None:
    """The reason an in-function import stays in its function, None when it should be at module level."""
    if in_try:
        return "optional"
    target: set[str] = set()
    for t in _targets(mod, node):
        target |= _closure(t) if t in MODULES else set(_with_parents(t))
    if _heavy(target) - _heavy(_closure(mod)):
        return "heavy: " + ", ".join(sorted(_heavy(target) - _heavy(_closure(mod))))
    if file.startswith("etl/commands/") and _pulls(target, "pydantic") and not _pulls(_closure(mod), "pydantic"):
        return "the pipeline models: `etl --help`, `etl top`, `etl tap` start without them"
    if mod in target:
        return "cycle"
    if mod in _plugin_api() and LOADS_PLUGINS in target:
        return "the plugins' API: etl.spec loads the plugins, which import this module"
    if not file.startswith(EXECUTION) and target - _closure(mod) - _validate_loads():
        return "off validate's path"
    return None


def test_every_in_function_import_of_an_etl_module_has_a_reason():
    found = _in_function_imports()
    hoistable = [f"{file}:{line} {ast.unparse(node)}" for file, mod, line, node, in_try in found
                 if _why_in_function(file, mod, node, in_try) is None]
    assert hoistable == [], "import these at module level (nothing heavy, no cycle, already on validate's path)"
    assert len(found) <= MAX_IN_FUNCTION, f"{len(found)} in-function imports of etl modules (at most {MAX_IN_FUNCTION})"


def test_the_reasons_are_real_ones():
    """The analysis itself: a lazy pyspark-pulling import is heavy, a circular one is a cycle, a light one is not."""
    assert "pyspark" in _heavy(_closure("etl.components.sources.generator.build"))
    assert _heavy(_closure("etl.spec")) == set()
    assert "etl.sql.query" in _closure("etl.sql.build")
    assert "etl.grok" not in _validate_loads() or "etl.grok" in _closure("etl.spec")
    assert "pyspark.sql" not in _validate_loads()
    assert {"etl.physical.engines", "etl.registry", "etl.spec.base"} <= _plugin_api()
    # the spec package no longer imports the pipeline model (the registry finds the components by name)
    assert LOADS_PLUGINS in _closure("etl.check") and LOADS_PLUGINS not in _closure("etl.spec.aggregates")


def test_no_import_cycle():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    top: dict[str, set[str]] = {m: set() for m in MODULES}
    for mod in MODULES:
        for node in ast.walk(_tree(mod)):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and _own(node):
                graph[mod].update(t for t in _targets(mod, node) if t in MODULES and t != mod)
        top[mod].update(t for t in _top_imports(mod) if t in MODULES and t not in _with_parents(mod))
    assert _cycles(top) == [], "module-level import cycles"
    assert _cycles(graph) == [], "import cycles (in-function imports too)"


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, recursive: etl's graph is shallow)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_aliases(mod: str) -> set[str]:
    """The names under which `mod` binds another etl module (`import etl.x as y`, `from etl import x`)."""
    out: set[str] = set()
    for node in ast.walk(_tree(mod)):
        if isinstance(node, ast.Import) and _own(node):
            out.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and _own(node):
            base = _targets(mod, node)[0]
            out.update(a.asname or a.name for a in node.names if f"{base}.{a.name}" in MODULES)
    return out


def test_no_private_name_is_imported_from_another_etl_module():
    """Neither `from etl.x import _y` nor `x._y` on an imported etl module."""
    private = []
    for mod, path in MODULES.items():
        file = str(path.relative_to(ROOT))
        aliases = _module_aliases(mod)
        for node in ast.walk(_tree(mod)):
            if isinstance(node, ast.ImportFrom) and _own(node):
                private += [f"{file}:{node.lineno} {a.name}" for a in node.names if _private(a.name)]
            elif isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name) \
                    and node.value.id in aliases:
                private.append(f"{file}:{node.lineno} {node.value.id}.{node.attr}")
    assert private == []
