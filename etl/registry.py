"""The one component registry: spec model and builder registered together.

A component module declares its spec with `@component(kind, type, builder=...)`.
The builder is named as "module:function" and imported only when a pipeline
runs, so validation never imports pyspark. Built-ins are imported by
`etl.spec`; third-party components come from the `etl.components`
entry-point group.
"""

from __future__ import annotations

import builtins
import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Callable, TypeVar

from etl.diagnostics import choices_hint

KINDS = ("source", "transform", "sink")
T = TypeVar("T", bound=type)


@dataclass(frozen=True)
class Entry:
    kind: str
    type: str
    spec: builtins.type  # `type` in this class is the field above
    builder: str | None  # "package.module:function"

    def load_builder(self) -> Callable[..., Any]:
        if not self.builder:
            raise LookupError(f"{self.kind} type {self.type!r} has no runtime builder yet")
        module, _, name = self.builder.partition(":")
        return getattr(importlib.import_module(module), name)


_REGISTRY: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
_plugins_loaded = False


def component(kind: str, type_: str, builder: str | None = None) -> Callable[[T], T]:
    """Class decorator: register `cls` as the spec of component `kind`/`type_`."""
    if kind not in KINDS:
        raise ValueError(f"unknown component kind {kind!r}")

    def deco(cls: T) -> T:
        existing = _REGISTRY[kind].get(type_)
        if existing is not None and existing.spec is not cls:
            raise ValueError(f"{kind} type {type_!r} registered twice ({existing.spec.__name__}, {cls.__name__})")
        _REGISTRY[kind][type_] = Entry(kind, type_, cls, builder)
        return cls

    return deco


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in entry_points(group="etl.components"):
        ep.load()


def entries(kind: str) -> dict[str, Entry]:
    import etl.spec  # noqa: F401  (registers built-ins)

    _load_plugins()
    return dict(sorted(_REGISTRY[kind].items()))


def types(kind: str) -> list[str]:
    return list(entries(kind))


def lookup(kind: str, type_: str) -> Entry:
    found = entries(kind).get(type_)
    if found is None:
        raise LookupError(f"unknown {kind} type {type_!r}; " + choices_hint(type_, types(kind)))
    return found


def builder_for(spec: Any) -> Callable[..., Any]:
    return lookup(spec.KIND, spec.type).load_builder()
