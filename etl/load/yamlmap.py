"""YAML text -> plain Python data plus a source map (path -> position).

The document is composed into ruamel's node graph and constructed here, so that
every key and value keeps its line and column and every duplicate key is found,
not only the first.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

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


def _tag(node: Node) -> str:
    tag = node.tag
    return str(getattr(tag, "value", tag) or "")


_INT_RE = re.compile(r"^[-+]?(0|[1-9][0-9_]*|0o[0-7_]+|0x[0-9a-fA-F_]+|0b[01_]+|0[0-7_]+)$")


def _scalar(node: ScalarNode) -> Any:
    tag, text = _tag(node), node.value
    if tag.endswith(":null"):
        return None
    if tag.endswith(":bool"):
        return text.lower() in ("true", "yes", "on", "y")
    if tag.endswith(":int"):
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
    if tag.endswith(":float"):
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


class _Builder:
    def __init__(self, smap: SourceMap, report: Report):
        self.smap = smap
        self.report = report

    def span(self, node: Node) -> Span:
        return Span(self.smap.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def build(self, node: Node, path: Path, depth: int = 0) -> Any:
        self.smap.values[path] = self.span(node)
        if depth > _MAX_DEPTH:
            self.report.error("E001", "YAML nesting is too deep", self.span(node))
            return None
        if isinstance(node, ScalarNode):
            style = node.style or ""
            quotes = 2 if style in ("'", '"') else 0
            exact = (style in ("", "'", '"') and node.end_mark.line == node.start_mark.line
                     and node.end_mark.column - node.start_mark.column == len(node.value) + quotes)
            self.smap.styles[path] = style if exact else "|"
            return _scalar(node)
        if isinstance(node, SequenceNode):
            return [self.build(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            return self._mapping(node, path, depth)
        self.report.error("E001", f"unsupported YAML node {type(node).__name__}", self.span(node))
        return None

    def _mapping(self, node: MappingNode, path: Path, depth: int) -> dict:
        out: dict = {}
        seen: dict[Any, Span] = {}
        for key_node, value_node in node.value:
            if _tag(key_node).endswith(":merge"):
                merged = self.build(value_node, path + ("<<",), depth + 1)
                for m in merged if isinstance(merged, list) else [merged]:
                    if isinstance(m, dict):
                        for k, v in m.items():
                            out.setdefault(k, v)
                continue
            if not isinstance(key_node, ScalarNode):
                self.report.error("E001", "mapping keys must be plain scalars", self.span(key_node),
                                  "write the key as a string")
                continue
            key = _scalar(key_node)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                key = str(key)
            if key is None:
                key = "null"
            ks = self.span(key_node)
            if key in seen:
                first = seen[key]
                self.report.error("E001", f"duplicate key '{key}' (first defined at line {first.line})", ks,
                                  "remove or rename one of them")
                continue
            seen[key] = ks
            self.smap.keys[path + (key,)] = ks
            out[key] = self.build(value_node, path + (key,), depth + 1)
        return out


def parse_yaml(text: str, file: str, report: Report) -> tuple[Any, SourceMap] | None:
    """Parse one YAML document; on a syntax error add a diagnostic and return None."""
    smap = SourceMap(file)
    yaml = YAML(typ="rt")
    try:
        nodes = list(yaml.compose_all(text))
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
    except RecursionError:
        report.error("E001", "YAML nesting is too deep", Span(file, 1, 1))
        return None
    nodes = [n for n in nodes if n is not None]
    if len(nodes) > 1:
        report.error("E001", "a pipeline file holds one YAML document", Span(file, nodes[1].start_mark.line + 1, 1),
                     "remove the '---' separator or split the file")
        return None
    if not nodes:
        return None, smap
    data = _Builder(smap, report).build(nodes[0], ())
    return data, smap
