"""Validate plain data against a spec model; map pydantic errors to positioned diagnostics."""

from __future__ import annotations

import re
import types
import typing
from typing import TYPE_CHECKING, Any, TypeVar
from collections.abc import Iterable

from pydantic import BaseModel, RootModel, ValidationError

from etl import registry
from etl.diagnostics import Report, choices_hint, did_you_mean
from etl.spec.base import Duration, Instant, Size
from etl.spec.endpoints import JDBC_URL
from etl.spec.rules import ALL_OPS, All, AnyOf, Not, Predicate, Rule

if TYPE_CHECKING:  # only a type: the loader (a layer above) hands the source map in
    from etl.load.yamlmap import SourceMap

M = TypeVar("M", bound=BaseModel)

_KIND_OF_LIST = {"sources": "source", "transforms": "transform", "sinks": "sink", "dead_letter": "sink"}


def _strip(tp: Any) -> Any:
    """Unwrap Annotated and Optional."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) == 1:
                tp = args[0]
                continue
        return tp


def _members(tp: Any) -> list[Any]:
    tp = _strip(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        out = []
        for a in typing.get_args(tp):
            out.extend(_members(a))
        return out
    return [tp]


def _field_for(model: type[BaseModel], key: str) -> Any:
    for name, f in model.model_fields.items():
        if key in (name, f.alias):
            return f.annotation
    return None


def _tag_match(model: Any, tag: str) -> bool:
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return False
    t = model.model_fields.get("type")
    if t is not None and typing.get_args(t.annotation) == (tag,):
        return True
    lowered = {"all": "all", "any": "any", "not": "not_"}
    return (tag in lowered and lowered[tag] in model.model_fields) or (tag == "predicate" and "field" in model.model_fields)


def model_at(root: type[BaseModel], loc: Iterable[Any]) -> type[BaseModel] | None:
    """The model class whose instance sits at `loc` (pydantic loc, tags included)."""
    current: Any = root
    for part in loc:
        if isinstance(current, type) and issubclass(current, RootModel):
            current = current.model_fields["root"].annotation
        members = _members(current)
        nxt = None
        if len(members) > 1 and isinstance(part, str):
            tagged = [m for m in members if _tag_match(m, part)]
            if len(tagged) == 1:
                current = tagged[0]
                continue
        for m in members:
            origin = typing.get_origin(m)
            if isinstance(m, type) and issubclass(m, BaseModel) and isinstance(part, str):
                nxt = _field_for(m, part)
                if nxt is not None:
                    break
            elif origin in (list, tuple) and isinstance(part, int):
                nxt = typing.get_args(m)[0]
                break
            elif origin is dict and isinstance(part, str):
                nxt = typing.get_args(m)[1]
                break
        if nxt is None and isinstance(part, str):
            tagged = [m for m in members if _tag_match(m, part)]
            if tagged:
                nxt = tagged[0]
        if nxt is None:
            return None
        current = nxt
    members = [m for m in _members(current) if isinstance(m, type) and issubclass(m, BaseModel)]
    return members[0] if len(members) == 1 else None


def _yaml_path(loc: tuple, data: Any) -> tuple:
    """Drop loc parts that are discriminator tags (not present in the data)."""
    path: list[Any] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            path.append(part)
            node = node[part]
        elif isinstance(node, dict) and part == "inputs" and "input" in node:
            path.append("input")
            node = node["input"]
            if not isinstance(node, list):
                break
        elif isinstance(node, dict) and isinstance(part, str) and part.endswith("_") and part[:-1] in node:
            path.append(part[:-1])
            node = node[part[:-1]]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
        elif isinstance(node, (dict, list)):
            continue  # a union tag such as 'file' or 'predicate'
        else:
            break
    return tuple(path)


def _where(path: tuple, data: Any = None) -> str:
    """Human name of a location: "source 'a'", "transform 'f' (rules.0.when)", "rule 'r1' (when)"."""
    rules, rest = None, ()
    if len(path) >= 2 and path[0] == "rules" and isinstance(path[1], int) and isinstance(data, dict) \
            and "sources" not in data and isinstance(data.get("rules"), list) and path[1] < len(data["rules"]):
        rules, rest = data["rules"][path[1]], path[2:]  # a rule file written as {rules: [...]}
    elif path and isinstance(path[0], int) and isinstance(data, list) and path[0] < len(data):
        rules, rest = data[path[0]], path[1:]  # a rule file written as a bare list
    if rules is not None:
        name = f"rule '{rules['id']}'" if isinstance(rules, dict) and isinstance(rules.get("id"), str) \
            else f"rule #{(path[1] if path[0] == 'rules' else path[0]) + 1}"
        return name + (f" ({'.'.join(str(p) for p in rest)})" if rest else "")
    if len(path) >= 2 and path[0] in _KIND_OF_LIST and isinstance(data, dict):
        items = data.get(path[0])
        item = items[path[1]] if isinstance(items, list) and isinstance(path[1], int) and path[1] < len(items) \
            else items if isinstance(items, dict) else None
        rest = path[2:] if isinstance(path[1], int) else path[1:]
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            name = f"{_KIND_OF_LIST[path[0]]} '{item['id']}'"
            return name + (f" ({'.'.join(str(p) for p in rest)})" if rest else "")
    return ".".join(str(p) for p in path) or "pipeline"


def _component_kind(path: tuple) -> str | None:
    return _KIND_OF_LIST.get(path[0]) if path else None


def validate_model(model: type[M], data: Any, smap: SourceMap, report: Report, *, prefix: tuple = (),
                   registry_kind: str | None = None) -> M | None:
    """Validate `data` against `model`; every error becomes a diagnostic at its YAML position."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = _merge_alternatives([dict(e) for e in exc.errors(include_url=False)], data)
        for err in _fold_condition_keys(model, errors):
            _report_error(model, err, data, smap, report, prefix, registry_kind)
        return None


_TYPE_ERRORS = ("_type", "_parsing", "literal_error")


def _merge_alternatives(errors: list[dict], data: Any) -> list[dict]:
    """A value that fits none of a union's types (`float | str`) gives one error per type:
    merge those at the same place into one ("a valid number or a valid string")."""
    out: list[dict] = []
    by_path: dict[tuple, dict] = {}
    for err in errors:
        if not any(err["type"].endswith(t) for t in _TYPE_ERRORS):
            out.append(err)
            continue
        key = _yaml_path(tuple(err["loc"]), data)
        first = by_path.get(key)
        if first is None:
            first = dict(err)
            by_path[key] = first
            out.append(first)
        elif err["msg"] not in first["msg"]:
            first["msg"] = first["msg"] + " or " + err["msg"].removeprefix("Input should be ")
            first["type"] = "union_mismatch" if first["type"] != "literal_error" else first["type"]
    return out


def _condition_keys() -> set[str]:
    return {f.alias or n for m in (Predicate, All, AnyOf, Not) for n, f in m.model_fields.items()}


def _fold_condition_keys(model: type[BaseModel], errors: list[dict]) -> list[dict]:
    """A rule written without `when` ({id, field, regex}) gives 'when' missing and one unknown key per
    condition key: fold those into one error that shows the rule as it should read."""
    folded = {tuple(e["loc"][:-1]): e for e in errors if e["type"] == "missing" and e["loc"][-1] == "when"
              and isinstance(e.get("input"), dict) and model_at(model, e["loc"][:-1]) is Rule}
    if not folded:
        return errors
    keys = _condition_keys()
    moved: dict[tuple, list[str]] = {}
    for e in errors:
        loc = tuple(e["loc"])
        if e["type"] == "extra_forbidden" and loc[:-1] in folded and loc[-1] in keys:
            moved.setdefault(loc[:-1], []).append(str(loc[-1]))
    out = []
    for e in errors:
        loc = tuple(e["loc"])
        if e["type"] == "extra_forbidden" and loc[:-1] in moved:
            if loc[-1] in keys:
                continue
            e["operator"] = True  # beside a condition: most likely a misspelt operator
        out.append(e)
    for rule_loc, names in moved.items():
        err = folded[rule_loc]
        cond = ", ".join(f"{k}: {_flow(err['input'][k])}" for k in names)
        err.update(type="condition_outside_when", loc=rule_loc + (names[0],),
                   msg=f"the condition ({', '.join(names)}) goes under `when`", hint=f"write `when: {{{cond}}}`")
    return out


def _flow(v: Any) -> str:
    """A value as YAML flow text: JSON (which YAML reads) unless a plain word reads back the same."""
    import json

    plain = isinstance(v, str) and re.fullmatch(r"[A-Za-z_][\w.-]*", v) \
        and v.lower() not in ("true", "false", "yes", "no", "on", "off", "null")
    return v if plain else json.dumps(v)


def _report_error(model: type[BaseModel], err: dict, data: Any, smap: SourceMap, report: Report,
                  prefix: tuple, registry_kind: str | None) -> None:
    loc = tuple(err["loc"])
    etype = err["type"]
    root = data if not prefix else None
    path = _yaml_path(loc, data)
    full = prefix + path
    if etype == "extra_forbidden":
        key = path[-1] if path else loc[-1]
        parent = model_at(model, loc[:-1])
        allowed = sorted(f.alias or n for n, f in parent.model_fields.items()) if parent else []
        hint = did_you_mean(str(key), allowed)
        if key == "input" and "inputs" in allowed:
            hint = "give either `input` or `inputs`, not both"
        elif key == "url" and {"host", "port", "database"} <= set(allowed):
            hint = _jdbc_hint(err.get("input"))
        elif err.get("operator"):
            hint = did_you_mean(str(key), list(ALL_OPS)) or "a condition's operator is one of: " + ", ".join(ALL_OPS)
        elif not hint and allowed:
            hint = "allowed keys: " + ", ".join(allowed)
        report.error("E100", f"unknown key '{key}' in {_where(full[:-1], root)}", smap.key(full), hint)
    elif etype == "missing":
        key = loc[-1]
        report.error("E101", f"missing required key '{key}' in {_where(full, root)}", smap.value(full),
                     f"add `{key}: ...`")
    elif etype in ("union_tag_invalid", "union_tag_not_found"):
        kind = registry_kind or _component_kind(full) or "component"
        tag = err.get("ctx", {}).get("tag")
        if etype == "union_tag_not_found" or tag is None:
            report.error("E101", f"missing required key 'type' in {_where(full, root)}", smap.value(full),
                         f"one of: {', '.join(registry.types(kind))}" if kind in registry.KINDS else None)
        else:
            cands = registry.types(kind) if kind in registry.KINDS else []
            report.error("E103", f"unknown {kind} type '{tag}'", smap.value(full + ("type",)),
                         choices_hint(str(tag), cands))
    elif etype == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        options = [o.strip().strip("'") for o in expected.replace(" or ", ",").split(",") if o.strip()]
        hint = did_you_mean(str(err.get("input")), options)
        hint = f"{hint} expected {expected}" if hint else f"expected {expected}"
        report.error("E102", f"invalid value {_short(err.get('input'))} for '{loc[-1]}'", smap.value(full), hint)
    elif etype == "value_error" or etype == "assertion_error":
        msg = str(err["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if _is_scalar_field(model, loc):  # a typed value (duration, size) that does not parse, or is out of bounds
            head, _, tail = msg.partition(": ")
            hint = (err.get("ctx") or {}).get("hint") or (
                _hint_for(loc) if head.startswith(("invalid duration", "invalid size")) else None)
            report.error("E102", f"{head} for '{loc[-1]}' in {_where(full[:-1], root)}" + (f": {tail}" if tail else ""),
                         smap.value(full), hint)
        else:
            report.error("E104", f"{msg} (in {_where(full, root)})", smap.value(full), _hint_for(loc))
    elif etype == "condition_outside_when":
        report.error("E101", f"missing required key 'when' in {_where(full[:-1], root)}: {err['msg']}",
                     smap.key(full), err["hint"])
    elif etype == "invalid_rule_node":
        report.error("E104", f"{err['msg']} (in {_where(full, root)})", smap.value(full),
                     "write {field: name, regex: '...'} or all: [...], any: [...], not: {...}")
    elif etype == "string_pattern_mismatch":
        report.error("E102", f"invalid {loc[-1]} {_short(err.get('input'))}: use letters, digits, '_' and '-', "
                     "starting with a letter or '_'", smap.value(full))
    else:
        msg = re.sub(r" or instance of \w+", "", str(err["msg"]))
        msg = msg[:1].lower() + msg[1:]
        key = next((p for p in reversed(path) if isinstance(p, str)), None) or str(loc[-1])
        owner = full[:-1] if path and path[-1] == key else full
        # an empty value (`key:` with nothing after it) is best shown at its key
        span = smap.key(full) if err.get("input") is None and full else smap.value(full)
        report.error("E102", f"invalid value {_short(err.get('input'))} for '{key}' in {_where(owner, root)}: {msg}",
                     span, _hint_for(loc))


def _jdbc_hint(url: Any) -> str:
    """What a JDBC url (jdbc:mysql://[user[:password]@]host[:port]/database) reads as here; never the password."""
    m = JDBC_URL.match(re.sub(r"(?<=://)[^@/]*@", "", str(url or ""), count=1))  # credentials: not read, not shown
    keys = f"host: {m[1]}, port: {m[2] or 3306}, database: {m[3]}" if m else "host, port, database"
    return f"give {keys} (and user, password) instead of a JDBC url"


def _is_scalar_field(model: type[BaseModel], loc: tuple) -> bool:
    if not loc or not isinstance(loc[-1], str):
        return False
    parent = model_at(model, loc[:-1])
    if parent is None:
        return False
    ann = _field_for(parent, loc[-1])
    return any(m in (Duration, Size, Instant) for m in _members(ann)) if ann is not None else False


def _hint_for(loc: tuple) -> str | None:
    last = loc[-1] if loc else None
    if last in ("size", "slide", "gap", "within", "watermark", "interval", "flush_interval", "refresh", "early"):
        return "durations are written like '500ms', '10s', '5m', '1h'"
    if last in ("max_buffer", "max_bytes_per_trigger"):
        return "sizes are written like '512KB', '64MB', '1GB'"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
