"""The coupling figures issue 39 asks for, counted from etl's source (no import of etl, no JVM).

    python scripts/arch_counts.py [--list]

- type tests: comparisons of a `type` against a registered component type's name, a collection holding one or
  a named set (`x.type == "dedupe"`, `spec["type"] in ("kafka", "file")`, `node.type not in STATEFUL`) outside
  etl/components;
- in-function imports of etl's own modules (relative or `etl.`), and of every module;
- import cycles among etl's modules: strongly connected components of the graph of every import (module level
  and in functions), and of module-level imports only (the ones Python would trip on);
- module-level mutable state: names bound at module level to a dict/list/set display or constructor, or a
  functools cache;
- per-process caches: module-level etl.workercache.WorkerCache objects (bounded, emptied by its clear_all()).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "etl"
COMPONENTS = ROOT / "components"
TYPE_NAMES = {"type"}
MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque", "WeakValueDictionary",
                 "WeakKeyDictionary"}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> list[str]:
    """The etl modules an ImportFrom names (a name may be a submodule; both are returned, unknown ones dropped)."""
    if node.level:
        base = mod.split(".") if is_pkg else mod.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [target] + [f"{target}.{a.name}" for a in node.names]


def is_type_ref(e: ast.expr) -> bool:
    if isinstance(e, ast.Attribute):
        return e.attr in TYPE_NAMES
    if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant):
        return e.slice.value in TYPE_NAMES
    return isinstance(e, ast.Name) and e.id in TYPE_NAMES


def component_types() -> set[str]:
    sys.path.insert(0, str(ROOT.parent))
    from etl import registry

    return {t for kind in registry.KINDS for t in registry.types(kind)}


COMPONENT_TYPES: set[str] = set()


def names_component(e: ast.expr) -> bool:
    if isinstance(e, ast.Constant):
        return e.value in COMPONENT_TYPES
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        return any(names_component(x) for x in e.elts)
    return isinstance(e, ast.Name) and e.id.isupper()  # a named set of types (STATEFUL, ...)


def is_type_test(c: ast.Compare) -> bool:
    ops = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
    if not all(isinstance(o, ops) for o in c.ops):
        return False
    sides = [c.left, *c.comparators]
    if not any(is_type_ref(s) for s in sides):
        return False
    # against a component's type name, a collection holding one or a named set (STATEFUL, ...)
    return any(names_component(s) for s in sides)


class Scan(ast.NodeVisitor):
    def __init__(self, path: Path) -> None:
        self.path, self.mod, self.is_pkg = path, module_name(path), path.name == "__init__.py"
        self.depth = 0
        self.type_tests: list[int] = []
        self.fn_imports: list[tuple[int, str, bool]] = []  # line, module, etl's own
        self.edges: set[tuple[str, bool]] = set()  # (target, at module level)
        self.mutable: list[tuple[int, str]] = []
        self.worker_caches: list[tuple[int, str]] = []

    def _fn(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _fn

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._imported(node, [a.name], a.name.startswith("etl.") or a.name == "etl")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        targets = resolve(self.mod, self.is_pkg, node)
        own = bool(node.level) or (node.module or "").split(".")[0] == "etl"
        if node.module == "__future__":
            return
        self._imported(node, targets if own else [node.module or ""], own)

    def _imported(self, node: ast.stmt, targets: list[str], own: bool) -> None:
        if self.depth:
            self.fn_imports.append((node.lineno, targets[0], own))
        if own:
            self.edges.update((t, self.depth == 0) for t in targets)

    def visit_Compare(self, node: ast.Compare) -> None:
        if is_type_test(node):
            self.type_tests.append(node.lineno)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.depth == 0 and self._mutable(node.value):
            self.mutable += [(node.lineno, t.id) for t in node.targets if isinstance(t, ast.Name)
                             and t.id != "__all__"]
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if self.depth == 0 and node.value is not None and self._mutable(node.value) \
                and isinstance(node.target, ast.Name):
            self.mutable.append((node.lineno, node.target.id))
        if self.depth == 0 and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) \
                and node.value.func.id == "WorkerCache" and isinstance(node.target, ast.Name):
            self.worker_caches.append((node.lineno, node.target.id))
        self.generic_visit(node)

    @staticmethod
    def _mutable(v: ast.expr) -> bool:
        if isinstance(v, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
            return True
        if isinstance(v, ast.Call):
            f = v.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            return name in MUTABLE_CALLS
        return False

    def visit_ClassDef(self, node: ast.ClassDef) -> None:  # class bodies are not module-level state
        self._fn(node)


def type_tests() -> dict[str, list[int]]:
    """The lines of every type test outside etl/components, by path relative to the repository (etl/...)."""
    COMPONENT_TYPES.update(component_types())
    found: dict[str, list[int]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        if COMPONENTS in path.parents:
            continue
        scan = Scan(path)
        scan.visit(ast.parse(path.read_text(), str(path)))
        if scan.type_tests:
            found[str(path.relative_to(ROOT.parent))] = scan.type_tests
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print each finding's file:line")
    args = ap.parse_args(argv)
    COMPONENT_TYPES.update(component_types())
    scans = [Scan(p) for p in sorted(ROOT.rglob("*.py"))]
    for s in scans:
        s.visit(ast.parse(s.path.read_text(), str(s.path)))
    modules = {s.mod for s in scans}
    every: dict[str, set[str]] = defaultdict(set)
    top: dict[str, set[str]] = defaultdict(set)
    for s in scans:
        every.setdefault(s.mod, set())
        top.setdefault(s.mod, set())
        for t, at_top in s.edges:
            if t in modules and t != s.mod:
                every[s.mod].add(t)
                if at_top:
                    top[s.mod].add(t)
    outside = [s for s in scans if COMPONENTS not in s.path.parents]
    figures = {
        "type tests outside etl/components": sum(len(s.type_tests) for s in outside),
        "in-function imports": sum(len(s.fn_imports) for s in scans),
        "in-function imports of etl modules": sum(1 for s in scans for _, _, own in s.fn_imports if own),
        "import cycles (every import)": len(cycles(every)),
        "import cycles (module-level imports)": len(cycles(top)),
        "module-level mutable names": sum(len(s.mutable) for s in scans),
        "per-process caches (WorkerCache)": sum(len(s.worker_caches) for s in scans),
    }
    for k, v in figures.items():
        print(f"{k}: {v}")
    if args.list:
        print_findings(scans, outside, every)
    return 0


def print_findings(scans: list[Scan], outside: list[Scan], every: dict[str, set[str]]) -> None:
    rel = lambda s: s.path.relative_to(ROOT.parent)  # noqa: E731
    for s in outside:
        for line in s.type_tests:
            print(f"type test: {rel(s)}:{line}")
    for s in scans:
        for line, mod, own in s.fn_imports:
            if own:
                print(f"in-function import: {rel(s)}:{line} {mod}")
        for line, name in s.mutable:
            print(f"module-level mutable: {rel(s)}:{line} {name}")
        for line, name in s.worker_caches:
            print(f"per-process cache: {rel(s)}:{line} {name}")
    for c in cycles(every):
        print("cycle:", " ".join(c))


if __name__ == "__main__":
    sys.exit(main())
