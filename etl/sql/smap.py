"""Positions of the generated spec inside the SQL script: a SourceMap keyed by spec paths."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from etl.diagnostics import Span
from etl.load.yamlmap import SourceMap

_NAME = re.compile(r"`?([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class SqlSourceMap(SourceMap):
    names: dict[tuple, dict[str, Span]] = field(default_factory=dict)  # path -> column name -> where written
    literals: dict[tuple, Span] = field(default_factory=dict)  # path -> opening quote of a string literal
    quiet: set[Span] = field(default_factory=set)  # components read only by a statement that failed (reported)

    def put(self, path: tuple, span: Span | None, key: Span | None = None) -> None:
        if span is not None:
            self.values[tuple(path)] = span
        if key is not None:
            self.keys[tuple(path)] = key

    def inner(self, path: Any, text: str, offset: int, line: int = 1) -> Span:
        path = tuple(path)
        lit = self.literals.get(path)
        if lit is not None and "\n" not in text and line == 1 and 0 <= offset <= len(text):
            return Span(lit.file, lit.line, lit.col + 1 + offset)
        names = self.names.get(path)
        if names and 0 <= offset < len(text):
            m = _NAME.match(text, offset)
            if m and m.group(1).lower() in names:
                return names[m.group(1).lower()]
        return self.value(path)
