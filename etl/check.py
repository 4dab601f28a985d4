"""The front door: file -> document -> spec -> graph -> checks -> plan, collecting diagnostics.

`validate`, `explain`, `test` and `run` all call `check_file` and walk the same plan.
Never raises on user input.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from etl.diagnostics import Report
from etl.graph import Graph, build_graph
from etl.load import Document, load_file

PIPELINE_SUFFIXES = (".yaml", ".yml")


@dataclass
class Checked:
    file: str
    report: Report
    document: Document | None = None
    pipeline: Any = None
    graph: Graph | None = None
    plan: Any = None

    @property
    def ok(self) -> bool:
        return self.plan is not None and not self.report.errors


def check_file(path: str | os.PathLike, *, cli_vars: Mapping[str, Any] | None = None,
               environ: Mapping[str, str] | None = None) -> Checked:
    from etl.graph.checks import check_graph
    from etl.plan import build_plan
    from etl.spec import Pipeline
    from etl.spec.errors import validate_model

    file = str(path)
    report = Report()
    out = Checked(file, report)
    doc = load_file(file, report, cli_vars=cli_vars, environ=environ)
    if doc is None:
        return out
    out.document = doc
    if not isinstance(doc.data, dict):
        report.error("E102", "a pipeline file must be a mapping with name, sources, transforms and sinks",
                     doc.smap.value(()), "start with `name: my-pipeline`")
        return out
    pipeline = validate_model(Pipeline, doc.data, doc.smap, report)
    if pipeline is None:
        return out
    out.pipeline = pipeline
    graph = build_graph(pipeline, doc.smap, report, str(doc.base_dir))
    out.graph = graph
    graph = check_graph(graph, report, doc)
    out.graph = graph
    if report.errors:
        return out
    out.plan = build_plan(graph, report)
    return out


def pipeline_files(paths: Iterable[str | os.PathLike]) -> list[str]:
    """Expand folders into the pipeline files they hold (sorted); keep files as given."""
    files: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            files.extend(str(f) for f in sorted(path.iterdir()) if f.suffix in PIPELINE_SUFFIXES and f.is_file())
        else:
            files.append(str(p))
    return files


def check_paths(paths: Iterable[str | os.PathLike], **kw: Any) -> list[Checked]:
    from etl.graph.checks import check_across

    results = [check_file(f, **kw) for f in pipeline_files(paths)]
    check_across(results)
    return results
