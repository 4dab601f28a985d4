"""The front door: file -> document -> spec -> graph -> checks -> plan, collecting diagnostics.

`validate`, `explain`, `test` and `run` all call `check_file` and walk the same plan.
Never raises on user input: an exception from a bug becomes one E999 diagnostic.

Every problem in one run: when the spec does not validate, the components that
do are still built into a partial graph (the others become `Placeholder`s whose
columns and properties are unknown), so reference, rule, regex, grok and column
problems are reported together with the schema errors, without false positives.
A file holding only rules (a list of rules, or `rules: [...]`) is checked as a
rule file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Mapping

from pydantic import ValidationError

from etl import registry
from etl.diagnostics import Report, Span
from etl.graph import Graph, build_graph
from etl.graph.checks import check_across, check_graph, check_rule_list
from etl.graph.model import Placeholder, is_placeholder
from etl.load import Document, load_file
from etl.load.rules import allow_paths as allow
from etl.load.rules import check_duplicate_ids, is_rule_document, load_filter_rules, rules_of_document
from etl.load.sigma import SigmaStats
from etl.plan import build_plan
from etl.spec.pipeline import Pipeline
from etl.spec.errors import validate_model
from etl.spec.functions import FunctionSpec
from etl.sql import load_sql_file

SQL_SUFFIXES = (".sql",)
PIPELINE_SUFFIXES = (".yaml", ".yml") + SQL_SUFFIXES


@dataclass
class Checked:
    file: str
    report: Report
    document: Document | None = None
    pipeline: Any = None
    graph: Graph | None = None
    plan: Any = None
    rules_only: bool = False  # the file is a valid rule file (no pipeline, so no plan)

    @property
    def ok(self) -> bool:
        return (self.plan is not None or self.rules_only) and not self.report.errors


def check_file(path: str | os.PathLike, *, cli_vars: Mapping[str, Any] | None = None,
               environ: Mapping[str, str] | None = None, programs: bool = False,
               allow_paths: Iterable[str | os.PathLike] = ()) -> Checked:
    """Check one pipeline file. Never raises: an internal bug becomes an E999 diagnostic.

    `programs=True` also compiles each filter's rules with the optimizer (explain, run).
    `allow_paths`: folders besides the pipeline's own whose files it may read (--allow-path: etl.load.paths;
    remembered for the process, so that reloads of a running pipeline may read them too)."""
    allow(allow_paths)
    file = str(path)
    out = Checked(file, Report())
    try:
        _check(out, cli_vars, environ, programs)
    except Exception as e:  # noqa: BLE001 - reported, not hidden: a bug in etl, shown as E999
        out.plan = None
        out.report.error("E999", f"internal error: {type(e).__name__}: {e}", Span(file, 1, 1),
                         "this is a bug in etl; please report it with the pipeline file")
    quiet = getattr(getattr(out.document, "smap", None), "quiet", None)
    if quiet:  # SQL: a component unused only because the statement reading it failed (already reported)
        out.report.diagnostics = [d for d in out.report.diagnostics
                                  if not (d.code in ("W204", "W206") and d.span in quiet)]
    return out


def _check(out: Checked, cli_vars: Mapping[str, Any] | None, environ: Mapping[str, str] | None,
           programs: bool = False) -> None:
    file, report = out.file, out.report
    if file.lower().endswith(SQL_SUFFIXES):  # a SQL script: its own front-end, the same document shape
        doc = load_sql_file(file, report, cli_vars=cli_vars, environ=environ)
    else:
        doc = load_file(file, report, cli_vars=cli_vars, environ=environ)
    if doc is None:
        return
    out.document = doc
    if is_rule_document(doc.data):  # a rule file given on its own: check its rules
        rules = rules_of_document(doc, report)
        if rules is not None:
            check_duplicate_ids(rules, report)
            check_rule_list(rules, report)
        out.rules_only = rules is not None and not report.errors
        return
    if not isinstance(doc.data, dict):
        report.error("E102", "a pipeline file must be a mapping with name, sources, transforms and sinks",
                     doc.smap.value(()), "start with `name: my-pipeline`")
        return
    pipeline = validate_model(Pipeline, doc.data, doc.smap, report)
    if pipeline is None:
        # still report reference, rule, regex and column problems of the components that are valid
        partial = partial_pipeline(doc.data)
        graph = build_graph(partial, doc.smap, report, str(doc.base_dir))
        graph = replace(graph, vars=dict(doc.vars))
        graph = replace(graph, rules=_load_rules(graph, doc, report, environ))
        check_graph(graph, report, doc)
        return
    out.pipeline = pipeline
    graph = build_graph(pipeline, doc.smap, report, str(doc.base_dir))
    graph = replace(graph, vars=dict(doc.vars))
    graph = replace(graph, rules=_load_rules(graph, doc, report, environ))
    out.graph = graph
    graph = check_graph(graph, report, doc)
    out.graph = graph
    if report.errors:
        return
    plan = build_plan(graph, report, programs=programs)
    out.plan = None if report.errors else plan


def _load_rules(graph: Graph, doc: Document, report: Report, environ: Mapping[str, str] | None) -> dict:
    rules: dict[str, tuple] = {}
    for node in graph.of_kind("transform"):
        if is_placeholder(node.spec) or not node.spec.LOADS_RULES:
            continue
        stats = None
        if getattr(node.spec, "sigma", None) is not None:
            stats = graph.sigma[node.id] = SigmaStats()
        # rule files are named relative to the pipeline file, as the user gave its path
        loaded = load_filter_rules(node.spec, node.path, doc.smap, os.path.dirname(doc.file) or ".", report,
                                   vars_=doc.vars,
                                   environ=environ, file=doc.file, sigma_stats=stats)
        if loaded is not None:
            rules[node.id] = tuple(loaded)
    return rules


@dataclass
class _PartialPipeline:
    name: str
    sources: list
    transforms: list
    sinks: list
    dead_letter: Any = None
    checkpoint: Any = None
    functions: list = field(default_factory=list)


def partial_pipeline(data: dict) -> _PartialPipeline:
    """The components of an invalid pipeline: valid ones as specs, the others as placeholders."""
    lists: dict[str, list] = {}
    for list_name, kind in (("sources", "source"), ("transforms", "transform"), ("sinks", "sink")):
        items = data.get(list_name)
        specs: list = []
        for item in items if isinstance(items, list) else []:
            specs.append(_component(item, kind, registry, Report))
        lists[list_name] = specs
    name = data["name"] if isinstance(data.get("name"), str) else "pipeline"
    return _PartialPipeline(name, lists["sources"], lists["transforms"], lists["sinks"],
                            functions=_valid_functions(data.get("functions")))


def _valid_functions(items: Any) -> list:
    """The `functions:` entries that validate, each at its own index (None for the others)."""
    out: list = []
    for item in items if isinstance(items, list) else []:
        try:
            out.append(FunctionSpec.model_validate(item))
        except ValidationError:
            out.append(None)
    return out


def _component(item: Any, kind: str, registry: Any, scratch: Any) -> Any:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
        return None
    typ = item.get("type")
    entry = registry.entries(kind).get(typ) if isinstance(typ, str) else None
    if entry is not None:
        try:
            return entry.spec.model_validate(item)
        except ValidationError:
            pass
    raw_inputs = item.get("inputs", item.get("input", []))
    if isinstance(raw_inputs, str):
        raw_inputs = [raw_inputs]
    inputs = tuple(i for i in raw_inputs if isinstance(i, str)) if isinstance(raw_inputs, list) else ()
    labels, table = entry.spec.raw_refs(item) if entry is not None else (None, None)
    return Placeholder(item["id"], typ if isinstance(typ, str) else "?", kind, inputs if kind != "source" else (),
                       labels, table)


def pipeline_files(paths: Iterable[str | os.PathLike]) -> list[str]:
    """Expand folders into the pipeline files they hold (sorted); keep files as given."""
    files: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            files.extend(str(f) for f in sorted(path.iterdir())
                         if f.suffix in PIPELINE_SUFFIXES and f.is_file() and not _beside_a_script(f))
        else:
            files.append(str(p))
    return files


def _beside_a_script(f: Path) -> bool:
    """`x.tests.yaml` beside `x.sql` holds the tests of the script, not a pipeline; `x.yaml` beside `x.sql`
    is its YAML twin (the same pipeline, same checkpoint and outputs): a folder lists the script once."""
    if f.name.endswith(".tests.yaml"):
        return f.with_name(f.name[:-len(".tests.yaml")] + ".sql").is_file()
    return f.suffix in (".yaml", ".yml") and f.with_suffix(".sql").is_file()


def check_paths(paths: Iterable[str | os.PathLike], **kw: Any) -> list[Checked]:
    results = [check_file(f, **kw) for f in pipeline_files(paths)]
    try:
        check_across(results)
    except Exception as e:  # noqa: BLE001 - reported as E999, never a traceback
        if results:
            results[0].plan = None
            results[0].report.error("E999", f"internal error: {type(e).__name__}: {e}", Span(results[0].file, 1, 1),
                                    "this is a bug in etl; please report it with the pipeline files")
    return results
