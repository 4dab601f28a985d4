"""The types of Spark's calls over arrays, maps and structs, and of their lambdas, as Spark gives them: the
catalogue (etl.sql.catalog) cannot tell them (it probes one argument type at a time, a lambda not at all).

* aggregates: collect_list / collect_set / array_agg of T are array<T>,
* lambdas: a lambda's variables take the element (key, value, index) types, its body's type makes the result:
  transform(a, x -> f(x)) is array<type of f(x)>, filter and array_sort keep the array's type, aggregate / reduce
  have their start value's type (their finish's when given), transform_values / transform_keys / map_filter /
  zip_with / map_zip_with likewise,
* builders and accessors: map_from_arrays(a, b) is map<A, B>, map_keys / map_values / map_entries, flatten,
  element_at, and the functions that keep their array's type (array_distinct, slice, sort_array, ...).

`container_type(node, cols, type_of)` answers for a sqlglot node (None: not one of these, "unknown": one of these
whose argument types are not known); tests/spark/test_spark_operators.py asks Spark each answer of
tests/unit/test_spark_operators.py's table.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

from etl.sql.casts import split_type

TypeOf = Callable[[Any, dict[str, str]], str]
# sqlglot's classes of some of them (the others are its Anonymous calls)
_CLASSES = {"MapKeys": "map_keys", "Flatten": "flatten", "ArrayDistinct": "array_distinct", "ArraySlice": "slice",
            "ArrayIntersect": "array_intersect", "ArrayExcept": "array_except", "ArrayCompact": "array_compact",
            "ArrayRemove": "array_remove"}
# functions whose result is their first argument's type (an array or a map)
_SAME = frozenset({"array_distinct", "array_compact", "array_remove", "slice", "sort_array", "shuffle", "array_union",
                   "array_intersect", "array_except", "map_filter", "array_sort", "filter"})


def element(typ: str) -> str | None:
    """T of array<T> (None: not an array)."""
    t = typ.strip()
    return t[6:-1].strip() if t.lower().startswith("array<") and t.endswith(">") else None


def map_parts(typ: str) -> tuple[str, str] | None:
    """(K, V) of map<K, V> (None: not a map)."""
    t = typ.strip()
    if not (t.lower().startswith("map<") and t.endswith(">")):
        return None
    parts = split_type(t[4:-1])
    return (parts[0].strip(), parts[1].strip()) if len(parts) == 2 else None


def lambda_type(lam: Any, params: list[str], cols: dict[str, str], type_of: TypeOf) -> str:
    """The type of a lambda's body, its variables typed `params` in order (they hide columns of their names)."""
    from sqlglot import exp

    if not isinstance(lam, exp.Lambda):
        return "unknown"
    names = [v.name.lower() for v in lam.expressions]
    if len(names) > len(params) or "unknown" in params[:len(names)]:
        return "unknown"
    return type_of(lam.this, {**cols, **dict(zip(names, params, strict=False))})


def container_type(node: Any, cols: dict[str, str], type_of: TypeOf) -> str | None:
    from sqlglot import exp

    if isinstance(node, (exp.ArrayAgg, exp.ArrayUniqueAgg)):  # collect_list, array_agg, collect_set
        t = type_of(node.this, cols)
        return "unknown" if t == "unknown" else f"array<{t}>"
    if isinstance(node, (exp.Transform, exp.ArrayFilter, exp.ArraySort, exp.Reduce, exp.Map)):
        first = type_of(node.this if not isinstance(node, exp.Map) else node.args.get("keys"), cols)
        el = element(first) if first != "unknown" else None
        if el is None:
            return "unknown"
        if isinstance(node, exp.Transform):
            body = lambda_type(node.expression, [el, "int"], cols, type_of)
            return "unknown" if body == "unknown" else f"array<{body}>"
        if isinstance(node, (exp.ArrayFilter, exp.ArraySort)):
            return first
        if isinstance(node, exp.Map):  # map_from_arrays(keys, values)
            values = element(type_of(node.args.get("values"), cols))
            return f"map<{el},{values}>" if values is not None else "unknown"
        return _aggregate(node, el, cols, type_of)
    if isinstance(node, exp.Anonymous):
        return _by_name(str(node.this).lower(), list(node.expressions), cols, type_of)
    name = _CLASSES.get(type(node).__name__)
    if name is None:
        return None
    args = list(node.expressions) if name == "array_intersect" else \
        [a for a in (node.this, node.args.get("expression")) if a is not None]
    return _by_name(name, args, cols, type_of)


def merge_type(node: Any, cols: dict[str, str], type_of: TypeOf) -> tuple[str, str] | None:
    """(start's type, merge's type) of aggregate(a, start, (acc, x) -> merge): Spark refuses them unequal
    (DATATYPE_MISMATCH: `aggregate(nums, 0, (acc, x) -> acc + x)` over bigints is int then bigint); None when
    either is unknown."""
    el = element(type_of(node.this, cols))
    start = type_of(node.args.get("initial"), cols)
    if el is None or start == "unknown":
        return None
    merge = lambda_type(node.args.get("merge"), [start, el], cols, type_of)
    return None if merge == "unknown" else (start, merge)


def _aggregate(node: Any, el: str, cols: dict[str, str], type_of: TypeOf) -> str:
    """aggregate(a, start, (acc, x) -> merge[, acc -> finish]): the start's type, which merge must keep (Spark
    refuses another: "unknown" here), or finish's."""
    start = type_of(node.args.get("initial"), cols)
    if start == "unknown" or lambda_type(node.args.get("merge"), [start, el], cols, type_of) != start:
        return "unknown"
    finish = node.args.get("finish")
    return start if finish is None else lambda_type(finish, [start], cols, type_of)


def _by_name(name: str, args: list, cols: dict[str, str], type_of: TypeOf) -> str | None:
    if name not in _SAME and name not in ("transform_values", "transform_keys", "zip_with", "map_zip_with",
                                          "map_keys", "map_values", "map_entries", "flatten"):
        return None
    if not args:
        return "unknown"
    first = type_of(args[0], cols)
    if first == "unknown":
        return "unknown"
    if name in _SAME:
        same = len(args) < 2 or name not in ("array_union", "array_intersect", "array_except") \
            or type_of(args[1], cols) == first
        return first if same and (element(first) or map_parts(first)) else "unknown"
    if name == "flatten":
        inner = element(first)
        return inner if inner is not None and element(inner) is not None else "unknown"
    if name == "zip_with" and len(args) == 3:
        a, b = element(first), element(type_of(args[1], cols))
        body = lambda_type(args[2], [a or "unknown", b or "unknown"], cols, type_of)
        return "unknown" if body == "unknown" else f"array<{body}>"
    kv = map_parts(first)
    if kv is None:
        return "unknown"
    k, v = kv
    if name in ("map_keys", "map_values"):
        return f"array<{k if name == 'map_keys' else v}>"
    if name == "map_entries":
        return f"array<struct<key:{k},value:{v}>>"
    if name == "map_zip_with" and len(args) == 3:
        other = map_parts(type_of(args[1], cols))
        body = lambda_type(args[2], [k, v, other[1] if other else "unknown"], cols, type_of)
        return "unknown" if body == "unknown" else f"map<{k},{body}>"
    if name in ("transform_values", "transform_keys") and len(args) == 2:
        body = lambda_type(args[1], [k, v], cols, type_of)
        if body == "unknown":
            return "unknown"
        return f"map<{k},{body}>" if name == "transform_values" else f"map<{body},{v}>"
    return "unknown"
