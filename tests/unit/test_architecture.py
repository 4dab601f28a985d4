"""The core asks components for traits (etl/spec/base.py), never their types: a comparison of a `type` against a
registered component type's name (scripts/arch_counts.py's finder) may appear only in etl/components/, in the
modules that define components, and in the few places listed below with their reason."""

from __future__ import annotations

from etl import registry
from scripts.arch_counts import type_tests

# modules outside etl/components that define parts of several components (a component may ask about the components
# it reads)
COMPONENT_MODULES = {
    "etl/spec/sources.py": "defines MessageSource, the base of the kafka and rocketmq sources",
    "etl/spec/transform_hooks.py": "defines JoinHooks and EventTimeJoinHooks (join, regular_join, temporal_join)",
    "etl/spec/sigma.py": "defines sigma_correlation's hooks",
}

# type tests elsewhere: path -> (how many, why)
ALLOWED = {
    "etl/graph/functions.py": (1, "E353's wording names a window's aggregate as such"),
    "etl/sql/build.py": (1, "W015: rsqldb's own rocketmq connector reads a number in a TIMESTAMP column as epoch "
                            "milliseconds, a fact of the peer's connector, not of etl's component"),
    "etl/sql/query.py": (2, "EMIT on a query maps onto the window or continuous aggregate spec the SQL front end "
                            "builds itself (their `emit` and `every` fields)"),
}


def test_component_modules_define_components():
    defining = {c.__module__.replace(".", "/") + ".py" for kind in registry.KINDS
                for e in registry.entries(kind).values() for c in e.spec.__mro__ if c.__module__.startswith("etl.")}
    assert set(COMPONENT_MODULES) <= defining, set(COMPONENT_MODULES) - defining


def test_each_builtin_component_is_one_folder():
    """A built-in component's spec, hooks and builder live in its folder, etl/components/<kind>s/<type>/."""
    for kind in registry.KINDS:
        for type_, e in registry.entries(kind).items():
            if not e.spec.__module__.startswith("etl."):
                continue  # a plugin (tests/fixtures/plugin)
            home = f"etl.components.{kind}s.{type_}."
            assert e.spec.__module__ == home + "spec", (kind, type_, e.spec.__module__)
            assert e.builder is not None and e.builder.startswith(home), (kind, type_, e.builder)
            assert e.reader is None or e.reader.startswith(home), (kind, type_, e.reader)
            assert callable(e.load_builder())


def test_no_type_test_outside_the_components():
    found = type_tests()
    outside = {path: lines for path, lines in found.items() if path not in COMPONENT_MODULES}
    unexpected = {path: lines for path, lines in outside.items() if path not in ALLOWED}
    assert unexpected == {}, ("the core asks a component's traits (etl/spec/base.py), not its type: "
                              f"{unexpected}")
    assert {path: len(lines) for path, lines in outside.items()} == {p: n for p, (n, _) in ALLOWED.items()}
    assert sum(len(lines) for lines in outside.values()) == 4
