"""A validated rule and where it is written: what inline rules, rule files (etl.load.rules) and Sigma rules
(etl.load.sigma) all hand to the filter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from etl.diagnostics import Span


@dataclass(frozen=True)
class SourcedRule:
    """A validated rule and where it is written (file, path inside that file's document)."""

    rule: Any  # etl.spec.rules.Rule
    file: str
    path: tuple  # e.g. ("transforms", 2, "rules", 0) or (3,) or ("rules", 3)
    smap: Any = None  # source map of `file`

    @property
    def span(self) -> Span:
        return self.span_of()

    def span_of(self, *keys: Any) -> Span:
        return self.smap.value(self.path + keys) if self.smap is not None else Span(self.file)
