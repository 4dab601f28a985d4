"""Rule sets: inline `rules` and separate `rule_files` of a filter, each rule with its origin.

A rule file holds a list of rules or `{rules: [...]}`; it is loaded like a
pipeline file (templated with the pipeline's vars, positioned YAML), so every
diagnostic about a rule points into the file that holds it. Paths and globs in
`rule_files` are relative to the pipeline file's folder and stay inside it (etl.load.paths).

The runtime calls `load_filter_rules` again when it reloads rules between
micro-batches; `rule_file_paths` says which files to watch.
"""

from __future__ import annotations

import os
from typing import Any
from collections.abc import Callable, Mapping

from etl.diagnostics import Report, Span
from etl.load import load_file
from etl.load.paths import RULE_FILES, PathError, RulePathError, allow_paths, read_text, resolve_rule_paths
from etl.load.sigma import load_sigma, sigma_files
from etl.load.sourced import SourcedRule
from etl.load.template import has_template, process_environ
from etl.spec.errors import validate_model
from etl.spec.rules import RuleFile, RuleList, walk_predicates
from etl.workercache import WorkerCache

__all__ = ["RulePathError", "SourcedRule", "allow_paths", "expand_rule_paths", "load_filter_rules",
           "load_rule_file", "resolve_rule_paths", "rule_file_paths", "rule_files_signature", "walk_predicates"]


def _norm(path: str) -> str:
    """A canonical spelling of a path (no symlink resolution: realpath costs a stat per component)."""
    return os.path.normcase(os.path.abspath(path))


def expand_rule_paths(pattern: str, base_dir: str | os.PathLike) -> list[str]:
    """Files named by one `rule_files` entry (sorted; a glob may match several); [] when it names
    none or names files a pipeline may not read."""
    try:
        return resolve_rule_paths(pattern, base_dir)
    except RulePathError:
        return []


def rule_file_paths(spec: Any, base_dir: str | os.PathLike) -> list[str]:
    """The files of a filter's `rule_files` and `sigma.paths` (what a reload watches)."""
    seen: dict[str, None] = {}
    for pattern in getattr(spec, "rule_files", None) or []:
        for f in expand_rule_paths(pattern, base_dir):
            seen.setdefault(_norm(f), None)
    if getattr(spec, "sigma", None) is not None:
        for found in sigma_files(spec.sigma, base_dir):
            for f in found:
                seen.setdefault(_norm(f), None)
    return list(seen)


class RuleFilesWatch:
    """What a holder of a filter's rule files (etl.compile.rule_programs, etl.compile.sigma_reload) compares
    before each micro-batch: `reload` (watch at all), `signature` (the files as last seen) and `_signature()`
    (the files now); `_files_changed()` says whether they changed since, and remembers them."""

    reload: bool
    signature: tuple

    def _signature(self) -> tuple:
        raise NotImplementedError

    def _files_changed(self) -> bool:
        if not self.reload:
            return False
        sig = self._signature()
        if sig == self.signature:
            return False
        self.signature = sig
        return True


def rule_files_signature(spec: Any, base_dir: str | os.PathLike) -> tuple:
    """What a reload compares: the files the `rule_files` entries name now, with mtime and size."""
    out: list[tuple[str, int | None, int | None]] = []
    for f in rule_file_paths(spec, base_dir):
        try:
            st = os.stat(f)
            out.append((f, st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((f, None, None))
    return tuple(out)


_CACHE_MAX = 256
# (path, content hash[, vars, environment]) -> (rules, diagnostics): a pure function of its key
_CACHE: WorkerCache[tuple, tuple[list[SourcedRule] | None, list]] = WorkerCache("rule files read", _CACHE_MAX)


def _cache_key(file: str, vars_: Mapping[str, Any] | None, environ: Mapping[str, str] | None) -> tuple | None:
    """Same file content (and, for a templated file, same vars and environment) -> same result."""
    try:
        content = read_text(file, RULE_FILES)
    except PathError:
        return None  # load_file reports it
    key: tuple = (_norm(file), file, hash(content))
    if has_template(content):
        env = process_environ() if environ is None else environ
        try:
            key += (repr(sorted((str(k), repr(v)) for k, v in (vars_ or {}).items())), hash(frozenset(env.items())))
        except (TypeError, ValueError):
            return None
    return key


def load_rule_file(file: str, report: Report, *, vars_: Mapping[str, Any] | None = None,
                   environ: Mapping[str, str] | None = None) -> list[SourcedRule] | None:
    """Load and validate one rule file; diagnostics point into it. None when it is invalid.

    Results are cached per process (keyed by path, mtime, size, vars and environment):
    pipelines sharing rule files, and reloads of unchanged files, parse them once."""
    key = _cache_key(file, vars_, environ)
    if key is not None and key in _CACHE:
        rules, diags = _CACHE[key]
        report.extend(diags)
        return None if rules is None else list(rules)
    scratch = Report()
    rules = _load_rule_file(file, scratch, vars_=vars_, environ=environ)
    report.extend(scratch.diagnostics)
    if key is not None:
        _CACHE[key] = (None if rules is None else list(rules), list(scratch.diagnostics))
    return rules


def _load_rule_file(file: str, report: Report, *, vars_: Mapping[str, Any] | None = None,
                    environ: Mapping[str, str] | None = None) -> list[SourcedRule] | None:
    doc = load_file(file, report, environ=environ, inherit_vars=dict(vars_ or {}))
    if doc is None:
        return None
    data = doc.data
    if not (isinstance(data, list) and all(isinstance(x, dict) for x in data)
            or isinstance(data, dict) and "rules" in data):
        # not a rule file at all (say /etc/passwd): said without echoing a word of it
        report.error("E102", "this file is not a rule file", Span(file, 1, 1),
                     "a rule file holds a list of rules or a mapping `rules: [...]`")
        return None
    return rules_of_document(doc, report)


def is_rule_document(data: Any) -> bool:
    """A document that is a rule file rather than a pipeline: a list of rules (mappings with `when`),
    or a mapping with only `rules`."""
    if isinstance(data, list):
        return bool(data) and all(isinstance(x, dict) and "when" in x for x in data)
    return isinstance(data, dict) and bool(data) and set(data) <= {"rules"}


def rules_of_document(doc: Any, report: Report) -> list[SourcedRule] | None:
    """Validate a loaded rule-file document; diagnostics point into it."""
    file = doc.file
    data = doc.data
    if isinstance(data, dict):
        parsed = validate_model(RuleFile, data, doc.smap, report)
        if parsed is None:
            return None
        return [SourcedRule(r, file, ("rules", i), doc.smap) for i, r in enumerate(parsed.rules)]
    if isinstance(data, list):
        listed = validate_model(RuleList, data, doc.smap, report)
        if listed is None:
            return None
        return [SourcedRule(r, file, (i,), doc.smap) for i, r in enumerate(listed.root)]
    report.error("E102", "a rule file holds a list of rules or a mapping `rules: [...]`", doc.smap.value(()),
                 "write `rules:` followed by `- id: ...` items")
    return None


def load_filter_rules(spec: Any, path: tuple, smap: Any, base_dir: str | os.PathLike, report: Report, *,
                      vars_: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None,
                      file: str | None = None, sigma_stats: Any = None) -> list[SourcedRule] | None:
    """Inline rules plus rule files plus Sigma rules of one filter spec (at `path` in the pipeline document).

    Reports missing files, invalid rules (in their file) and duplicate rule ids;
    returns None when anything is wrong. `sigma_stats` (an etl.load.sigma.SigmaStats) gets the Sigma counts."""
    file = file or (smap.file if smap is not None else "<pipeline>")
    span: Callable[..., Span] = (lambda *k: smap.value(path + k)) if smap is not None else (lambda *k: Span(file))
    before = len(report.errors)
    rules = [SourcedRule(r, file, path + ("rules", i), smap) for i, r in enumerate(spec.rules or [])]
    rules.extend(load_rule_files(spec.rule_files or [], base_dir, report, lambda k: span("rule_files", k),
                                 vars_=vars_, environ=environ))
    if getattr(spec, "sigma", None) is not None:
        rules.extend(load_sigma(spec.sigma, span, base_dir, report, {r.rule.id for r in rules}, sigma_stats))
    check_duplicate_ids(rules, report)
    return None if len(report.errors) > before else rules


def load_rule_files(patterns: list[str], base_dir: str | os.PathLike, report: Report, span: Callable[[int], Span],
                    *, vars_: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
                    ) -> list[SourcedRule]:
    """The rules of the files a filter's `rule_files` name (each file once); a path a pipeline may not
    read, or that names no file, is reported at its entry (`span(k)`)."""
    rules: list[SourcedRule] = []
    seen_files: set[str] = set()
    for k, pattern in enumerate(patterns):
        try:
            files = resolve_rule_paths(pattern, base_dir)
        except RulePathError as e:
            report.error(e.code, e.message, span(k), e.hint)
            continue
        if not files:
            report.error("E006", f"rule file {pattern!r} matches no file", span(k),
                         f"paths are relative to the pipeline file's folder ({base_dir})")
            continue
        for f in files:
            real = _norm(f)
            if real in seen_files:
                continue
            seen_files.add(real)
            loaded = load_rule_file(f, report, vars_=vars_, environ=environ)
            if loaded:
                rules.extend(loaded)
    return rules


def check_duplicate_ids(rules: list[SourcedRule], report: Report) -> None:
    first: dict[str, SourcedRule] = {}
    for r in rules:
        prev = first.get(r.rule.id)
        if prev is None:
            first[r.rule.id] = r
            continue
        where = f"{prev.file}:{prev.span_of('id').line}"
        report.error("E303", f"duplicate rule id '{r.rule.id}' (first defined at {where})", r.span_of("id"),
                     "rule ids must be unique within a filter")
