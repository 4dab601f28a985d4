"""YAML text -> plain Python data plus a source map (path -> position).

The document is composed into ruamel's node graph and constructed here, so that
every key and value keeps its line and column and every duplicate key is found,
not only the first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from etl.diagnostics import Report, Span

Path = tuple[Any, ...]
_MAX_DEPTH = 200


@dataclass
class SourceMap:
    file: str
    values: dict[Path, Span] = field(default_factory=dict)
    keys: dict[Path, Span] = field(default_factory=dict)
    styles: dict[Path, str] = field(default_factory=dict)  # scalar style: '' plain, "'", '"', '|', '>'

    def value(self, path: Path) -> Span:
        """Position of the value at `path`, or of its nearest existing ancestor."""
        path = tuple(path)
        while path:
            if path in self.values:
                return self.values[path]
            path = path[:-1]
        return self.values.get((), Span(self.file, 1, 1))

    def key(self, path: Path) -> Span:
        """Position of the key of `path` (falls back to the value's position)."""
        path = tuple(path)
        if path in self.keys:
            return self.keys[path]
        return self.value(path)

    def inner(self, path: Path, text: str, offset: int, line: int = 1) -> Span:
        """Position of character `offset` (0-based) on `line` (1-based) of the scalar at `path`.

        Exact for one-line scalars written without escapes; block scalars, folded lines and
        escapes fall back to the value's own position."""
        base = self.value(path)
        path = tuple(path)
        style = self.styles.get(path)
        if path not in self.values or style is None or offset < 0:
            return base
        if style in ("|", ">"):
            return base
        if "\n" in text or line != 1 or offset > len(text):
            return base
        return Span(base.file, base.line, base.col + offset + (1 if style in ("'", '"') else 0))

    def has(self, path: Path) -> bool:
        return tuple(path) in self.values


def _implicit_table() -> dict[str, list[tuple[str, Any]]]:
    """ruamel's YAML 1.2 implicit resolvers, by first character (same regexes, same order)."""
    from ruamel.yaml.resolver import implicit_resolvers

    table: dict[str, list[tuple[str, Any]]] = {}  # ruamel's regexes are compiled lazily
    for versions, tag, regexp, first in implicit_resolvers:
        if (1, 2) not in versions:
            continue
        for ch in first:
            table.setdefault(ch, []).append((tag.rsplit(":", 1)[-1], regexp))
    return table


_IMPLICIT = _implicit_table()


def resolve_tag(value: str, plain: bool, tag: str | None) -> str:
    """The core-schema type of a scalar: 'null', 'bool', 'int', 'float', 'merge' or 'str'."""
    if tag and tag not in ("!", "?"):
        return tag.rsplit(":", 1)[-1] if tag.startswith("tag:yaml.org,2002:") else "str"
    if not plain:
        return "str"
    for kind, regexp in _IMPLICIT.get(value[:1], ()):
        if regexp.match(value):
            return kind
    return "str"


def scalar_value(kind: str, text: str) -> Any:
    if kind == "null":
        return None
    if kind == "bool":
        return text.lower() in ("true", "yes", "on", "y")
    if kind == "int":
        t = text.replace("_", "")
        try:
            sign = -1 if t.startswith("-") else 1
            body = t.lstrip("+-")
            if body.startswith("0o"):
                return sign * int(body[2:], 8)
            if len(body) > 1 and body.startswith("0") and body[1].isdigit():
                return sign * int(body, 8)
            return int(t, 0)
        except ValueError:
            return text
    if kind == "float":
        t = text.replace("_", "").lower()
        if t in (".inf", "+.inf"):
            return math.inf
        if t == "-.inf":
            return -math.inf
        if t == ".nan":
            return math.nan
        try:
            return float(t)
        except ValueError:
            return text
    return text


class _TooDeep(Exception):
    pass


class _TooBig(Exception):
    pass


_MAX_NODES = 1_000_000  # values after alias expansion ("billion laughs" guard)


class _Builder:
    """Builds plain data and the source map straight from the parser's events (no node graph:
    ruamel's composer and resolver cost ~10x the C parser)."""

    def __init__(self, events: Any, smap: SourceMap, report: Report):
        self.events = events
        self.smap = smap
        self.report = report
        self.anchors: dict[str, Any] = {}
        self.sizes: dict[str, int] = {}  # anchor -> number of values it expands to
        self.count = 0

    def span(self, mark: Any) -> Span:
        return Span(self.smap.file, mark.line + 1, mark.column + 1)

    def build(self, ev: Any, path: Path | None, depth: int = 0) -> Any:
        """Build the value that starts with event `ev`; record positions under `path`."""
        if path is not None:
            self.smap.values[path] = self.span(ev.start_mark)
        if depth > _MAX_DEPTH:
            self.report.error("E001", "YAML nesting is too deep", self.span(ev.start_mark))
            raise _TooDeep
        kind = type(ev).__name__
        start = self.count
        self.count += 1
        if kind == "ScalarEvent":
            value = ev.value
            style = ev.style or ""
            if path is not None:
                quotes = 2 if style in ("'", '"') else 0
                exact = (style in ("", "'", '"') and ev.end_mark.line == ev.start_mark.line
                         and ev.end_mark.column - ev.start_mark.column == len(value) + quotes)
                self.smap.styles[path] = style if exact else "|"
            plain = not style and (ev.implicit[0] if isinstance(ev.implicit, tuple) else True)
            out = scalar_value(resolve_tag(value, plain, ev.tag), value)
        elif kind == "SequenceStartEvent":
            out = []
            for i, item in enumerate(self.events):
                if type(item).__name__ == "SequenceEndEvent":
                    break
                out.append(self.build(item, path + (i,) if path is not None else None, depth + 1))
        elif kind == "MappingStartEvent":
            out = self._mapping(path, depth)
        elif kind == "AliasEvent":
            if ev.anchor not in self.anchors:
                self.report.error("E001", f"unknown alias '*{ev.anchor}'", self.span(ev.start_mark))
                return None
            self.count += self.sizes.get(ev.anchor, 1)
            if self.count > _MAX_NODES:
                self.report.error("E001", "YAML aliases expand to too many values", self.span(ev.start_mark),
                                  "use fewer nested aliases")
                raise _TooBig
            return self.anchors[ev.anchor]
        else:
            self.report.error("E001", f"unexpected YAML event {kind}", self.span(ev.start_mark))
            return None
        anchor = getattr(ev, "anchor", None)
        if anchor:
            self.anchors[anchor] = out
            self.sizes[anchor] = self.count - start
        return out

    def _mapping(self, path: Path | None, depth: int) -> dict:
        out: dict = {}
        seen: dict[Any, Span] = {}
        merges: list[Any] = []
        for kev in self.events:
            kkind = type(kev).__name__
            if kkind == "MappingEndEvent":
                break
            vev = None
            if kkind != "ScalarEvent":
                self.build(kev, None, depth + 1)  # consume the complex key
                self.report.error("E001", "mapping keys must be plain scalars", self.span(kev.start_mark),
                                  "write the key as a string")
                self.build(next(self.events), None, depth + 1)
                continue
            style = kev.style or ""
            plain = not style and (kev.implicit[0] if isinstance(kev.implicit, tuple) else True)
            kind = resolve_tag(kev.value, plain, kev.tag)
            vev = next(self.events)
            if kind == "merge":
                merges.append(self.build(vev, path + ("<<",) if path is not None else None, depth + 1))
                continue
            key = scalar_value(kind, kev.value)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                key = str(key)
            if key is None:
                key = "null"
            ks = self.span(kev.start_mark)
            if key in seen:
                first = seen[key]
                self.report.error("E001", f"duplicate key '{key}' (first defined at line {first.line})", ks,
                                  "remove or rename one of them")
                self.build(vev, None, depth + 1)
                continue
            seen[key] = ks
            if path is not None:
                self.smap.keys[path + (key,)] = ks
            out[key] = self.build(vev, path + (key,) if path is not None else None, depth + 1)
        for merged in merges:
            for m in merged if isinstance(merged, list) else [merged]:
                if isinstance(m, dict):
                    for k, v in m.items():
                        out.setdefault(k, v)
        return out


def _c_parser() -> Any:
    try:
        from _ruamel_yaml import CParser  # ruamel.yaml.clib
    except ImportError:
        try:
            from ruamel.yaml.clib._ruamel_yaml import CParser  # type: ignore[no-redef]
        except ImportError:
            return None
    return CParser


_CPARSER = _c_parser()


def _events(text: str) -> Any:
    """Parser events: libyaml through ruamel.yaml.clib when installed (fast), else pure Python."""
    if _CPARSER is None:
        yield from YAML(typ="safe").parse(text)
        return
    parser = _CPARSER(text)
    try:
        while parser.check_event():
            yield parser.get_event()
    finally:
        parser.dispose()


def _flow_too_deep(text: str) -> tuple[int, int] | None:
    """Position (line, col) where flow brackets nest deeper than _MAX_DEPTH, else None.

    ruamel takes seconds on thousands of nested brackets; this linear scan answers first."""
    if text.count("[") + text.count("{") <= _MAX_DEPTH:
        return None
    depth, quote, line, col, prev = 0, "", 1, 0, "\n"
    for ch in text:
        col += 1
        if ch == "\n":
            line, col, prev = line + 1, 0, ch
            quote = "" if quote == "'" or quote == '"' else quote
            continue
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"" and prev in " \t\n[{,:":
            quote = ch
        elif ch in "[{":
            depth += 1
            if depth > _MAX_DEPTH:
                return line, col
        elif ch in "]}":
            depth = max(depth - 1, 0)
        prev = ch
    return None


def parse_yaml(text: str, file: str, report: Report) -> tuple[Any, SourceMap] | None:
    """Parse one YAML document; on a syntax error add a diagnostic and return None."""
    smap = SourceMap(file)
    deep = _flow_too_deep(text)
    if deep is not None:
        report.error("E001", "YAML nesting is too deep", Span(file, *deep), f"nest at most {_MAX_DEPTH} levels")
        return None
    events = _events(text)
    data: Any = None
    docs = 0
    try:
        for ev in events:
            kind = type(ev).__name__
            if kind == "DocumentStartEvent":
                docs += 1
                if docs > 1:
                    report.error("E001", "a pipeline file holds one YAML document", Span(file, ev.start_mark.line + 1, 1),
                                 "remove the '---' separator or split the file")
                    return None
            elif kind in ("StreamStartEvent", "StreamEndEvent", "DocumentEndEvent"):
                continue
            else:
                data = _Builder(events, smap, report).build(ev, ())
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = (e.problem or e.context or "invalid YAML").strip()
        ctx = f" ({e.context.strip()})" if e.context and e.problem else ""
        report.error("E001", f"YAML syntax error: {problem}{ctx}", Span(file, line, col),
                     "check indentation, colons and quotes on this line")
        return None
    except YAMLError as e:
        report.error("E001", f"YAML error: {e}", Span(file, 1, 1))
        return None
    except _TooBig:
        return None
    except (_TooDeep, RecursionError):
        if not report.errors or report.errors[-1].code != "E001":
            report.error("E001", "YAML nesting is too deep", Span(file, 1, 1))
        return None
    return data, smap
