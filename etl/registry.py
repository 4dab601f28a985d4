"""The one component registry: spec model and builder registered together.

A component module declares its spec with `@component(kind, type, builder=...)`.
The builder is named as "module:function" and imported only when a pipeline
runs, so validation never imports pyspark; a static table (a source a lookup
reads whole) also names its `reader` the same way. Built-ins are the modules
found under the packages named in BUILTINS (each component's folder,
etl/components/<kind>s/<type>/, holds a `spec` module that registers it); third-party components come from the
`etl.components` entry-point group. Both are loaded the same way, by name: the registry sits
below every layer and imports none of them.

The registry is closed: what the rest of etl asks of a component is declared
by its spec class. `REQUIRED` names the hooks each kind must define itself
(a base class's default marked `@required` does not count); registering a
class without them is an error when its module is imported:

* every transform: `output_columns(cx, node, inputs)` (column propagation, see
  etl.graph.columns) and `explain_lines()` (what `etl explain` shows);
* sources and sinks have working defaults (declared schema, passthrough).
"""

from __future__ import annotations

import builtins
import importlib
import pkgutil
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, TypeVar
from collections.abc import Callable

from etl.diagnostics import choices_hint

KINDS = ("source", "transform", "sink")
BUILTINS = ("etl.components.sources", "etl.components.transforms", "etl.components.sinks")  # <type>/spec.py each
REQUIRED: dict[str, tuple[str, ...]] = {"source": (), "transform": ("output_columns", "explain_lines"), "sink": ()}
T = TypeVar("T", bound=type)
F = TypeVar("F", bound=Callable[..., Any])


def required(fn: F) -> F:
    """Mark a base class's hook as a placeholder a registered component must override (see REQUIRED)."""
    fn.__etl_required__ = True  # type: ignore[attr-defined]
    return fn


def load(ref: str) -> Any:
    """The object a "package.module:name" reference names (a builder, a reader, a SQL option mapper)."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Entry:
    kind: str
    type: str
    spec: builtins.type  # `type` in this class is the field above
    builder: str | None  # "package.module:function"
    reader: str | None = None  # static tables: "package.module:function" (spec, base_dir=...) -> pyarrow Table

    def load_builder(self) -> Callable[..., Any]:
        if not self.builder:
            raise LookupError(f"{self.kind} type {self.type!r} has no runtime builder yet")
        return load(self.builder)

    def load_reader(self) -> Callable[..., Any] | None:
        return load(self.reader) if self.reader else None


def missing_hooks(kind: str, cls: type) -> list[str]:
    """The hooks of REQUIRED[kind] that `cls` does not define (only a base placeholder, or nothing)."""
    return [h for h in REQUIRED[kind]
            if not callable(getattr(cls, h, None)) or getattr(getattr(cls, h), "__etl_required__", False)]


_REGISTRY: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
_plugins_loaded = False
_builtins_loaded = False


def component(kind: str, type_: str, builder: str | None = None, reader: str | None = None) -> Callable[[T], T]:
    """Class decorator: register `cls` as the spec of component `kind`/`type_`."""
    if kind not in KINDS:
        raise ValueError(f"unknown component kind {kind!r}")

    def deco(cls: T) -> T:
        existing = _REGISTRY[kind].get(type_)
        if existing is not None and existing.spec is not cls:
            raise ValueError(f"{kind} type {type_!r} registered twice ({existing.spec.__name__}, {cls.__name__})")
        missing = missing_hooks(kind, cls)
        if missing:
            raise TypeError(f"{kind} type {type_!r} ({cls.__name__}) does not define {', '.join(missing)}: "
                            f"every {kind} declares them (see etl.registry.REQUIRED)")
        _REGISTRY[kind][type_] = Entry(kind, type_, cls, builder, reader)
        return cls

    return deco


def _load_builtins() -> None:
    """Import the `spec` module of every component folder under BUILTINS (by name, as plugins: the registry imports
    no layer above it)."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    for package in BUILTINS:
        for found in pkgutil.iter_modules(importlib.import_module(package).__path__):
            if found.ispkg:
                importlib.import_module(f"{package}.{found.name}.spec")
    _builtins_loaded = True


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in entry_points(group="etl.components"):
        ep.load()


def entries(kind: str) -> dict[str, Entry]:
    _load_builtins()
    _load_plugins()
    return dict(sorted(_REGISTRY[kind].items()))


def types(kind: str) -> list[str]:
    return list(entries(kind))


def lookup(kind: str, type_: str) -> Entry:
    found = entries(kind).get(type_)
    if found is None:
        raise LookupError(f"unknown {kind} type {type_!r}; " + choices_hint(type_, types(kind)))
    return found


def traits_of(spec: Any) -> Any:
    """What answers for a component's class-level traits (STATEFUL, PASSES_UPDATES, ...): its spec, or, for a spec
    that did not validate (etl.graph.model.Placeholder, no model fields), its registered class (None: unknown type)."""
    if hasattr(type(spec), "model_fields"):
        return spec
    kind = getattr(spec, "KIND", "")
    entry = entries(kind).get(spec.type) if kind in KINDS else None
    return entry.spec if entry is not None else None


def builder_for(spec: Any) -> Callable[..., Any]:
    return lookup(spec.KIND, spec.type).load_builder()
