"""Sigma rules of a filter (`sigma:`): files -> selection -> etl rules, each with its Sigma metadata.

Files come from `sigma.paths` (files, folders read recursively for .yml/.yaml,
globs; relative to the pipeline file's folder, through the guard of every file a pipeline reads:
etl.load.paths). Each rule document is read by
pySigma (etl.load.sigma_parse, cached by mtime), selected by `sigma.select`
(logsource product/category/service, status, level) and mapped onto etl's
rule language (etl.load.sigma_map), so the optimizer, Hyperscan, the JVM paths
and the reference interpreter run Sigma rules unchanged. A rule etl cannot
express is skipped with a W340 warning at its place in the rule file, saying
why; `etl explain` counts loaded, skipped by selection and unsupported rules.

The etl id of a rule is its Sigma `name`, else its file name without extension
(made an identifier; `_<document>` for the later documents of a file, `_2`, `_3` ... when two files share a
name); the Sigma id, title, level and
tags go with it (`SigmaSourced.sigma`) to tag and alerts mode.

Correlation rules among the files are resolved against the loaded rules
(etl.load.sigma_corr) into `SigmaStats.correlations`, which a
`sigma_correlation` transform reading the filter's alerts runs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from collections.abc import Callable

from etl.diagnostics import Report, Span
from etl.load.paths import SIGMA_FILES, PathError, resolve
from etl.load.sourced import SourcedRule
from etl.spec.rules import Rule

SEVERITY = {"informational": "info", "low": "low", "medium": "medium", "high": "high", "critical": "critical"}
_SUFFIXES = (".yml", ".yaml")


@dataclass(frozen=True)
class _At:
    """Source map stand-in of a Sigma rule: every path inside the rule points at one place of its file."""

    file: str
    line: int
    col: int = 1

    def value(self, _path: tuple = ()) -> Span:
        return Span(self.file, self.line, self.col)

    def inner(self, _path: tuple, _text: str, _pos: int) -> Span:
        return self.value()


@dataclass(frozen=True)
class SigmaSourced(SourcedRule):
    """A Sigma rule mapped onto an etl rule, with the Sigma rule as pySigma read it (`sigma`, a SigmaEntry)."""

    sigma: Any = None
    fields: tuple[tuple[str, str | None], ...] = ()  # (event field, Sigma field) of each field the rule reads

    @property
    def name(self) -> str:
        return f"Sigma rule '{self.sigma.title}'" if self.sigma.title else f"Sigma rule '{self.rule.id}'"

    def field_span(self, sigma_field: str | None) -> Span:
        """Where the rule reads `sigma_field` first (its detection item's key), else the rule's title."""
        for (_det, key), line, col in self.sigma.positions:
            if key is not None and key == sigma_field:
                return Span(self.file, line, col)
        return self.span


@dataclass
class SigmaStats:
    files: int = 0
    loaded: int = 0
    skipped: int = 0  # by selection
    unsupported: int = 0
    absent: int = 0  # read a field the events do not have (never match); counted by the column check
    correlations: list = field(default_factory=list)  # etl.load.sigma_corr.Correlation, resolved

    def text(self) -> str:
        return (f"sigma: {self.loaded} rules loaded from {self.files} files, {self.skipped} skipped by selection, "
                f"{self.unsupported} unsupported" + (f", {self.absent} read absent fields (never match)"
                                                     if self.absent else "")
                + (f", {len(self.correlations)} correlation rules" if self.correlations else ""))


def sigma_files(spec: Any, base_dir: str | os.PathLike, refused: list | None = None) -> list[list[str]]:
    """Per `paths` entry, the Sigma files it names (sorted), through the guard of every file a pipeline reads
    (etl.load.paths); an entry it refuses names none, and goes to `refused` as (index, PathError)."""
    out = []
    for k, pattern in enumerate(spec.paths):
        try:
            out.append(resolve(pattern, base_dir, SIGMA_FILES))
        except PathError as e:
            out.append([])
            if refused is not None:
                refused.append((k, e))
    return out


def field_mapper(spec: Any) -> Callable[[str], str]:
    from etl.load.sigma_presets import PRESETS

    preset = PRESETS[spec.preset] if spec.preset else (lambda f: f)
    own = spec.field_mapping
    return lambda f: own[f] if f in own else preset(f)


def selected(entry: Any, select: Any) -> bool:
    for key in ("product", "category", "service"):
        want = getattr(select, key)
        if want is not None and (getattr(entry, key) or "").lower() != want.lower():
            return False
    if select.status and entry.status not in select.status:
        return False
    return not (select.level and entry.level not in select.level)


def _rule_id(entry: Any, taken: set[str]) -> str:
    stem = re.sub(r"[^A-Za-z0-9_\-]", "_", entry.name or Path(entry.file).stem)[:100] or "rule"
    if not re.match(r"[A-Za-z_]", stem):
        stem = "r_" + stem
    if entry.doc and not entry.name:
        stem += f"_{entry.doc}"
    rid, k = stem, 1
    while rid in taken:
        k += 1
        rid = f"{stem}_{k}"
    taken.add(rid)
    return rid


def _position(entry: Any, key: tuple | None) -> tuple[int, int]:
    """Line and column of a detection item (or of its detection, or of the rule's title)."""
    if key is not None:
        for want in (key, (key[0], None)):
            for k, line, col in entry.positions:
                if k == want:
                    return line, col
    return entry.line, 1


def load_sigma(spec: Any, span: Callable[..., Span], base_dir: str | os.PathLike, report: Report,
               taken: set[str] | None = None, stats: SigmaStats | None = None,
               reload: bool = False) -> list[SigmaSourced]:
    """The selected, supported Sigma rules of one filter's `sigma:` block; W340 for each rule skipped.

    `reload`: a changed file that cannot be read keeps its last readable version (W340 says so)."""
    from etl.load.sigma_map import Mapper, Unsupported
    from etl.load.sigma_parse import entries_of

    stats = stats if stats is not None else SigmaStats()
    taken = taken if taken is not None else set()
    files: dict[str, None] = {}
    refused: list = []
    found_per_entry = sigma_files(spec, base_dir, refused)
    for k, e in refused:
        report.error(e.code, e.message, span("sigma", "paths", k), e.hint)
    for k, found in enumerate(found_per_entry):
        if not found and all(k != r for r, _ in refused):
            report.error("E006", f"sigma path {spec.paths[k]!r} names no Sigma rule file (.yml)",
                         span("sigma", "paths", k), f"paths are relative to the pipeline file's folder ({base_dir})")
        for f in found:
            files.setdefault(os.path.normpath(f), None)
    stats.files = len(files)
    field_of = field_mapper(spec)
    out: list[SigmaSourced] = []
    rejected: list = []
    entries = entries_of(list(files), rejected if reload else None)
    for entry in rejected:
        report.warning("W340", f"changed Sigma file cannot be read, its previous version stays in force: "
                       f"{entry.error}", Span(entry.file, entry.error_line, entry.error_col), "fix the file")
    pending: list = []  # correlation rules: resolved once every detection rule is known
    loaded: dict[str, str] = {}  # Sigma id or name -> etl id of each loaded rule
    not_loaded: dict[str, str] = {}  # Sigma id or name -> why that rule is not loaded
    for entry in entries:
        if entry.correlation is not None:
            pending.append(entry)
            _refer(not_loaded, entry, "it is a correlation rule (correlations of correlations are not supported)")
            continue
        if not selected(entry, spec.select):
            stats.skipped += 1
            _refer(not_loaded, entry, "skipped by `select`")
            continue
        name = f"Sigma rule '{entry.title}'" if entry.title else "Sigma rule"
        if entry.error is not None:
            stats.unsupported += 1
            _refer(not_loaded, entry, "not supported")
            report.warning("W340", f"{name} skipped: {entry.error}", Span(entry.file, entry.error_line,
                                                                           entry.error_col),
                           "the filter runs without it")
            continue
        mapper = Mapper(field_of, spec.keyword_fields, spec.vars)
        try:
            when = mapper.when(entry.tree)
        except Unsupported as e:
            stats.unsupported += 1
            _refer(not_loaded, entry, "not supported")
            line, col = _position(entry, e.key)
            report.warning("W340", f"{name} skipped: {e.reason}", Span(entry.file, line, col),
                           "the filter runs without it")
            continue
        rid = _rule_id(entry, taken)
        _refer(loaded, entry, rid)
        rule = Rule.model_validate({"id": rid, "when": when, "severity": SEVERITY.get(entry.level or ""),
                                    "tags": list(entry.tags), "description": entry.title or None})
        line, col = _position(entry, None)
        out.append(SigmaSourced(rule, entry.file, (), _At(entry.file, line, col), entry,
                                tuple(mapper.fields_read.items())))
        stats.loaded += 1
    for entry in pending:
        _correlation(entry, spec, loaded, not_loaded, field_of, taken, stats, report)
    return out


def _refer(refs: dict[str, str], entry: Any, what: str) -> None:
    """Correlation rules name a rule by its Sigma `id` or its `name`."""
    for ref in (entry.sigma_id, entry.name):
        if ref is not None:
            refs.setdefault(ref, what)


def _correlation(entry: Any, spec: Any, loaded: dict[str, str], not_loaded: dict[str, str],
                 field_of: Callable[[str], str], taken: set[str], stats: SigmaStats, report: Report) -> None:
    """Resolve one correlation rule into `stats.correlations`, or W340 at its culprit's place."""
    from etl.load.sigma_corr import Unresolved, resolve

    select = spec.select
    if (select.status and entry.status not in select.status) or (select.level and entry.level not in select.level):
        stats.skipped += 1
        return
    name = f"Sigma correlation rule '{entry.title}'" if entry.title else "Sigma correlation rule"
    doc = entry.correlation
    if entry.error is not None or doc.unsupported is not None:
        why, (line, col) = ((entry.error, (entry.error_line, entry.error_col)) if entry.error is not None
                            else (doc.unsupported, doc.at(doc.unsupported_key, (entry.line, 1))))
        stats.unsupported += 1
        report.warning("W340", f"{name} skipped: {why}", Span(entry.file, line, col), "the filter runs without it")
        return
    try:
        corr = resolve(entry, loaded, not_loaded, field_of, "")
    except Unresolved as e:
        stats.unsupported += 1
        line, col = doc.at(e.key, (entry.line, 1))
        report.warning("W340", f"{name} skipped: {e.reason}", Span(entry.file, line, col),
                       "the correlation does not run")
        return
    stats.correlations.append(replace(corr, rule=_rule_id(entry, taken)))
