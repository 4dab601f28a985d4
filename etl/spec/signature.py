"""A Python function's signature, read from its module's source without importing it.

`locate(module, base_dir)` finds the module's file: `<base_dir>/<a>/<b>.py` (or a package's
`__init__.py`) beside the pipeline, else an installed module through importlib's finders, which
read the file system only (a dotted name is walked part by part, so no package `__init__` runs).
`read_signature(spec, base_dir, read)` parses the file with `ast` and takes, in order:

1. what the pipeline declares (`kind`, `returns`, `args` of the `functions:` entry);
2. a decorator `@udf(returns=..., args=[...])`, `@udtf(returns=...)`, `@udaf(returns=...)`
   (etl.udf, any spelling: `@etl.udf`, `@udf`), which also gives the kind;
3. the callable's annotations: `def f(s: str) -> int` is a scalar function string -> bigint; a
   generator (`yield`, or `-> Iterator[Row]` with `Row` a NamedTuple of the module) a table
   function; parameters annotated `pd.Series` an aggregate (pandas Series -> scalar).

`Signature.source` says which of them gave the kind and the result type.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Callable

from etl.diagnostics import did_you_mean

DECORATORS = {"udf": "scalar", "udtf": "table", "udaf": "aggregate"}
_PY_TYPES = {"str": "string", "int": "bigint", "float": "double", "bool": "boolean", "bytes": "binary",
             "datetime": "timestamp", "date": "date", "Decimal": "decimal(38,18)"}
_SEQ = ("list", "List", "Sequence", "tuple_of")
_ITER = ("Iterator", "Iterable", "Generator")
_SERIES = ("Series",)


class SignatureError(Exception):
    """The function cannot be found (E350) or its signature cannot be told (E351)."""

    def __init__(self, code: str, message: str, hint: str):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


@dataclass(frozen=True)
class Signature:
    name: str
    ref: str  # module:callable
    kind: str  # scalar | table | aggregate
    returns: str  # Spark SQL type; a table function: "a string, b bigint"
    args: tuple[str | None, ...]  # argument types (None: not known)
    min_args: int
    max_args: int | None  # None: *args
    source: str  # where kind and result type came from
    file: str  # the module's file
    line: int  # the callable's line in it

    @property
    def columns(self) -> list[tuple[str, str]]:
        """A table function's columns (name, type)."""
        return split_columns(self.returns)

    def arity(self) -> str:
        if self.max_args is None:
            return f"at least {self.min_args}"
        return str(self.min_args) if self.min_args == self.max_args else f"{self.min_args} to {self.max_args}"

    def describe(self) -> str:
        unknown = "series" if self.kind == "aggregate" else "?"  # an aggregate's pandas Series of values
        args = ", ".join(a or unknown for a in self.args) + (", ..." if self.max_args is None else "")
        ret = f"table({self.returns})" if self.kind == "table" else self.returns
        return f"{self.name}({args}) -> {ret}"


def split_columns(text: str) -> list[tuple[str, str]]:
    """'a string, b map<string, int>' -> [(a, string), (b, map<string, int>)] (commas inside <> and () kept)."""
    out, depth, cur = [], 0, ""
    for ch in text + ",":
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            part = cur.strip()
            if part:
                name, _, typ = part.partition(" ")
                out.append((name.strip().strip("`"), typ.strip().lstrip(":").strip()))
            cur = ""
        else:
            cur += ch
    return out


def locate(module: str, base_dir: str) -> Path | None:
    """The source file of `module`, beside the pipeline or installed; nothing is imported or run."""
    parts = module.split(".")
    local = Path(base_dir, *parts)
    for cand in (local.with_suffix(".py"), local / "__init__.py"):
        if os.path.lexists(cand):  # whatever it is (a pipe, a symlink elsewhere): the reader's guard decides
            return cand
    try:
        spec = importlib.machinery.PathFinder.find_spec(parts[0])
        for i in range(1, len(parts)):
            if spec is None or not spec.submodule_search_locations:
                return None
            spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:i + 1]),
                                                            list(spec.submodule_search_locations))
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py") or not os.path.isfile(spec.origin):
        return None
    return Path(spec.origin)


def _tree(file: Path, module: str, read: Callable[[Path], str]) -> ast.Module:
    text = read(file)
    try:
        return ast.parse(text, str(file))
    except SyntaxError as e:
        raise SignatureError("E350", f"module '{module}' does not parse ({file.name}:{e.lineno}): {e.msg}",
                             "fix the module's syntax") from None


def _name(node: ast.expr | None) -> str:
    """The last part of a dotted name (`pd.Series` -> Series, `typing.Iterator` -> Iterator)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _name(node.value)
    return ""


def _spark_type(node: ast.expr | None, rows: dict[str, str]) -> str | None:
    """The Spark type of an annotation (None when it cannot tell)."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        try:
            return _spark_type(ast.parse(node.value, mode="eval").body, rows)
        except SyntaxError:
            return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | None
        sides = [s for s in (node.left, node.right) if not (isinstance(s, ast.Constant) and s.value is None)]
        return _spark_type(sides[0], rows) if len(sides) == 1 else None
    base = _name(node)
    if isinstance(node, ast.Subscript):
        inner = node.slice
        items = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
        if base == "Optional" and len(items) == 1:
            return _spark_type(items[0], rows)
        if base in _SEQ and len(items) == 1:
            t = _spark_type(items[0], rows)
            return f"array<{t}>" if t else None
        if base in ("dict", "Dict", "Mapping") and len(items) == 2:
            k, v = (_spark_type(x, rows) for x in items)
            return f"map<{k}, {v}>" if k and v else None
        return None
    return _PY_TYPES.get(base) or rows.get(base)


def _rows(tree: ast.Module) -> dict[str, str]:
    """NamedTuple / TypedDict classes of the module as struct column lists ('a string, b bigint')."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(_name(b) in ("NamedTuple", "TypedDict") for b in node.bases):
            cols = []
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    t = _spark_type(item.annotation, out)
                    if t is None:
                        break
                    cols.append(f"{item.target.id} {t}")
            else:
                out[node.name] = ", ".join(cols)
    return out


def _yields(fn: ast.FunctionDef) -> bool:
    def walk(n: ast.AST) -> bool:
        for c in ast.iter_child_nodes(n):
            if isinstance(c, (ast.Yield, ast.YieldFrom)):
                return True
            if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and walk(c):
                return True
        return False

    return walk(fn)


def _decorator(fn: ast.FunctionDef) -> tuple[str, dict[str, Any]] | None:
    for d in fn.decorator_list:
        call = d if isinstance(d, ast.Call) else None
        name = _name(call.func if call is not None else d)
        if name not in DECORATORS:
            continue
        kw: dict[str, Any] = {}
        for k in call.keywords if call is not None else []:
            try:
                kw[k.arg or ""] = ast.literal_eval(k.value)
            except ValueError:
                raise SignatureError("E351", f"@{name}({k.arg}=...) is not a literal", "write the type as a string, "
                                     "e.g. returns=\"bigint\"") from None
        return DECORATORS[name], kw
    return None


def _function_def(spec: Any, tree: ast.Module, file: Path) -> ast.FunctionDef:
    """The module's top-level def of the entry's function; SignatureError when there is none."""
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    fn = defs.get(spec.attr)
    if fn is None:
        known = [n for n in defs if not n.startswith("_")]
        raise SignatureError("E350", f"function '{spec.name}': module '{spec.module}' ({file.name}) has no function "
                             f"'{spec.attr}'", did_you_mean(spec.attr, known) or
                             ("functions there: " + ", ".join(known[:10]) if known else "define it there"))
    if not isinstance(fn, ast.FunctionDef):
        raise SignatureError("E351", f"function '{spec.name}': '{spec.attr}' in {file.name} is not a plain function",
                             "write a def (a table function yields its rows)")
    return fn


def _table_returns(ret: ast.Subscript, rows: dict[str, str]) -> str | None:
    """A table function's columns from its `-> Iterator[tuple[...]]` or `-> Iterator[Row]` annotation."""
    item = ret.slice.elts[0] if isinstance(ret.slice, ast.Tuple) else ret.slice
    if isinstance(item, ast.Subscript) and _name(item) in ("tuple", "Tuple"):
        elts = item.slice.elts if isinstance(item.slice, ast.Tuple) else [item.slice]
        types = [_spark_type(e, rows) for e in elts]
        return ", ".join(f"c{i} {t}" for i, t in enumerate(types, 1)) if all(types) else None
    return rows.get(_name(item))


def read_signature(spec: Any, base_dir: str, read: Callable[[Path], str]) -> Signature:
    """The signature of a `functions:` entry (etl.spec.functions.FunctionSpec); SignatureError when unknown.
    `read(file)` is the module's text, through the guard of the files a pipeline reads
    (etl.load.paths.module_reader: SignatureError when it refuses the file)."""
    file = locate(spec.module, base_dir)
    if file is None:
        raise SignatureError("E350", f"function '{spec.name}': module '{spec.module}' not found beside the pipeline "
                             f"({'/'.join(spec.module.split('.'))}.py) nor installed",
                             "put the module next to the pipeline file, or install its package")
    tree = _tree(file, spec.module, read)
    fn = _function_def(spec, tree, file)
    rows = _rows(tree)
    a = fn.args
    params = [p for p in a.posonlyargs + a.args]
    n_defaults = len(a.defaults)
    deco = _decorator(fn)
    sources = []
    kind, returns, args = spec.kind, spec.returns, list(spec.args) if spec.args is not None else None
    if kind is not None or returns is not None or args is not None:
        sources.append("declared in the pipeline")
    if deco is not None:
        dkind, kw = deco
        took = kind is None or returns is None or (args is None and "args" in kw)
        kind = kind or dkind
        returns = returns or kw.get("returns")
        if args is None and isinstance(kw.get("args"), list):
            args = [str(x) for x in kw["args"]]
        if took:
            sources.append(f"@{[k for k, v in DECORATORS.items() if v == dkind][0]} decorator ({file.name}:{fn.lineno})")
    if kind is None or returns is None or args is None:
        series = any(_name(p.annotation) in _SERIES for p in params)
        iters = _name(fn.returns) in _ITER
        akind = "aggregate" if series else "table" if (_yields(fn) or iters) else "scalar"
        if kind is None or returns is None:
            sources.append(f"annotations ({file.name}:{fn.lineno})")
        kind = kind or akind
        if returns is None:
            ret = fn.returns
            if kind == "table" and isinstance(ret, ast.Subscript) and iters:
                returns = _table_returns(ret, rows)
            elif kind != "table":
                returns = _spark_type(ret, rows)
        if args is None:
            args = [None if _name(p.annotation) in _SERIES else _spark_type(p.annotation, rows) for p in params]
    if returns is None:
        what = ("`-> Iterator[Row]` with `class Row(NamedTuple)` fields" if kind == "table"
                else "a return annotation (`-> int`)")
        raise SignatureError("E351", f"function '{spec.name}' ({spec.callable}): cannot tell its result type: not "
                             f"declared in the pipeline, no @{[k for k, v in DECORATORS.items() if v == kind][0]}"
                             f"(returns=...) decorator, no usable return annotation ({file.name}:{fn.lineno})",
                             f"add `returns:` to the function's entry, {what}, or @etl.udf(returns=\"bigint\")")
    max_args = None if a.vararg is not None else len(params)
    if args is not None and len(args) != len(params) and a.vararg is None and spec.args is not None:
        raise SignatureError("E351", f"function '{spec.name}': `args` declares {len(args)} argument types, "
                             f"'{spec.attr}' ({file.name}:{fn.lineno}) takes {len(params)}", "declare one type per "
                             "parameter")
    return Signature(spec.name, spec.callable, kind, returns, tuple(args or ()), len(params) - n_defaults, max_args,
                     " + ".join(dict.fromkeys(sources)), str(file), fn.lineno)
