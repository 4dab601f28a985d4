"""Semantic checks over the graph, beyond what the schema can say.

Every check reads only the Graph (specs, edges, rules, source map), never
YAML: a SQL front-end gets the same checks for free.
"""

from __future__ import annotations

import ipaddress
import os
import re
import warnings
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterable

from etl.diagnostics import Report, Span, did_you_mean, short_repr
from etl.graph.columns import propagate_columns
from etl.graph.model import Graph, Node, is_placeholder
from etl.graph.public import check_public_names
from etl.graph.realtime import check_realtime
from etl.spec.rules import walk_predicates


def _resolve(base_dir: str, path: str) -> str:
    if "\0" in path:  # reported by check_path_text; no file system call can take it
        return path
    p = Path(path)
    return str(p if p.is_absolute() else (Path(base_dir) / p).resolve())


def check_unused(graph: Graph, report: Report) -> None:
    used = {e.src for n in graph.nodes.values() for e in n.inputs}
    for node in graph.nodes.values():
        if node.id in used or node.kind == "sink":
            continue
        if node.kind == "source":
            report.warning("W204", f"source '{node.id}' is not used by any transform or sink", node.span,
                           "remove it or add it to some component's inputs")
        else:
            report.warning("W206", f"output of transform '{node.id}' is not used", node.span,
                           "send it to a sink or remove the transform")


def check_outputs(graph: Graph, report: Report) -> None:
    """No two sinks may write the same resource."""
    seen: dict[str, Any] = {}
    sinks = list(graph.of_kind("sink"))
    dl = getattr(graph.pipeline, "dead_letter", None)
    for node in sinks:
        key = node.spec.output_key()
        if key is None:
            continue
        if key.startswith("path:"):
            key = "path:" + _resolve(graph.base_dir, key[5:])
        if key in seen:
            report.error("E330", f"sinks '{seen[key].id}' and '{node.id}' write the same output ({key.split(':', 1)[1]})",
                         node.span, "give each sink its own path, table, topic or index")
        else:
            seen[key] = node
    if dl is not None and dl.output_key() is not None:
        key = dl.output_key()
        if key.startswith("path:"):
            key = "path:" + _resolve(graph.base_dir, key[5:])
        if key in seen and graph.smap is not None:
            report.error("E330", f"dead_letter writes the same output as sink '{seen[key].id}'",
                         graph.smap.value(("dead_letter",)), "give the dead-letter sink its own path")


def _watched_folder(base_dir: str, path: str) -> str:
    """The folder a file source watches (a glob's fixed part), resolved."""
    cut = min((path.index(c) for c in "*?[" if c in path), default=None)
    if cut is not None:
        path = os.path.dirname(path[:cut]) or "."
    return _resolve(base_dir, path)


def check_path_text(graph: Graph, report: Report) -> None:
    """File paths (file sources and sinks, the dead-letter sink, the checkpoint) hold no NUL character (E102)."""
    places = [(n.spec, n.path + (n.spec.PATH_FIELD,)) for n in graph.nodes.values()
              if not is_placeholder(n.spec) and n.spec.PATH_FIELD]
    dl = getattr(graph.pipeline, "dead_letter", None)
    if (key := getattr(dl, "PATH_FIELD", None)) is not None:
        places.append((dl, ("dead_letter", key)))
    ckpt = getattr(graph.pipeline, "checkpoint", None)
    if ckpt is not None and isinstance(getattr(ckpt, "path", None), str):
        places.append((ckpt, ("checkpoint", "path")))
    for spec, where in places:
        if "\0" in getattr(spec, where[-1]):
            span = graph.smap.value(where) if graph.smap is not None else Span(graph.name)
            report.error("E102", "a path cannot hold a NUL character", span, "remove the \\0 from the path")


def check_lookup_tables(graph: Graph, report: Report) -> None:
    """A lookup table's files (a static file source) go through the guard of every file a pipeline reads
    (etl.load.paths: inside the allowed folders, regular files, ETL_MAX_TABLE_MB together): a refusal is at its
    `path`. A table that does not exist yet is `etl run`'s to report; a URI (s3a://...) is not a local file."""
    from etl.load.paths import LOOKUP_TABLES, PathError, PathMissing, resolve

    for n in graph.of_kind("source"):
        if is_placeholder(n.spec) or not n.spec.PATH_FIELD or not n.spec.is_static():
            continue
        path = getattr(n.spec, n.spec.PATH_FIELD)
        if "\0" in path:
            continue
        path = path[len("file://"):] if path.startswith("file://") else path
        if "://" in path:
            continue
        try:
            resolve(path, graph.base_dir, LOOKUP_TABLES)
        except PathMissing:
            continue
        except PathError as e:
            span = graph.smap.value(n.path + (n.spec.PATH_FIELD,)) if graph.smap is not None else Span(graph.name)
            report.error(e.code, e.message, span, e.hint)


def check_sink_in_source(graph: Graph, report: Report) -> None:
    """A file sink (or the dead-letter sink) may not write inside a folder a streaming file source watches:
    its output would be read back as input, forever (E330 at the sink's path)."""
    watched = [(n, _watched_folder(graph.base_dir, getattr(n.spec, n.spec.PATH_FIELD)))
               for n in graph.of_kind("source")
               if not is_placeholder(n.spec) and n.spec.PATH_FIELD and not n.spec.is_static()]
    if not watched:
        return
    sinks = [(n.spec, n.path + (n.spec.PATH_FIELD,), f"sink '{n.id}'") for n in graph.of_kind("sink")
             if not is_placeholder(n.spec) and n.spec.PATH_FIELD]
    dl = getattr(graph.pipeline, "dead_letter", None)
    if (key := getattr(dl, "PATH_FIELD", None)) is not None:
        sinks.append((dl, ("dead_letter", key), "the dead-letter sink"))
    for spec, path, what in sinks:
        written = getattr(spec, path[-1])
        out = _resolve(graph.base_dir, written)
        for src, folder in watched:
            if out == folder or out.startswith(folder.rstrip(os.sep) + os.sep):
                span = graph.smap.value(path) if graph.smap is not None else Span(graph.name)
                report.error("E330", f"{what} writes into {written}, inside the folder that source '{src.id}' "
                             "reads: its output would be read back as input", span,
                             "write outside the source's folder")
                break


def _hyperscan_rejects() -> Callable[[str, bool], str | None]:
    """The optimizer's verdict on a pattern (why Hyperscan cannot compile it exactly, or None), remembered on
    disk (etl.diskcache.memo): test-compiling a caseless pattern takes up to 50 ms, and a Sigma corpus
    has hundreds."""
    from etl.diskcache import memo
    from etl.regexes.hsregex import hyperscan_rejects

    return memo("hyperscan-rejects", hyperscan_rejects)


def _compile_error(pattern: str, caseless: bool) -> re.error | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            re.compile(pattern, re.IGNORECASE if caseless else 0)
    except re.error as e:
        return e
    except (OverflowError, RecursionError, ValueError) as e:
        return re.error(str(e))
    return None


def check_rules(graph: Graph, report: Report) -> None:
    """Regexes of rules compile (E300); name those Hyperscan cannot compile (W301); cidr values parse."""
    for rules in graph.rules.values():
        check_rule_list(rules, report)


def check_rule_list(rules: Iterable[Any], report: Report) -> None:
    """The per-rule checks of `check_rules`, for any list of sourced rules (also a rule file alone)."""
    rejects = None
    for sr in rules:
        for pred, ppath in walk_predicates(sr.rule.when, ("when",)):
            if pred.op == "regex":
                err = _compile_error(pred.regex, pred.caseless)
                span = sr.span_of(*ppath, "regex")
                if err is not None:
                    if sr.smap is not None and err.pos is not None:
                        span = sr.smap.inner(sr.path + ppath + ("regex",), pred.regex, err.pos)
                    report.error("E300", f"regex of rule '{sr.rule.id}' does not compile: {err.msg}"
                                 + (f" at position {err.pos}" if err.pos is not None else ""), span,
                                 "patterns use Python `re` syntax; escape special characters with \\")
                    continue
                if rejects is None:
                    rejects = _hyperscan_rejects()
                why = rejects(pred.regex, pred.caseless)
                if why:
                    report.warning("W301", f"regex of rule '{sr.rule.id}' will fall back: {why}", span,
                                   "avoid backreferences, lookaround, atomic groups and possessive quantifiers")
            elif pred.op == "cidr":
                nets = pred.cidr if isinstance(pred.cidr, list) else [pred.cidr]
                for k, net in enumerate(nets):
                    try:
                        ipaddress.ip_network(net, strict=False)
                    except ValueError:
                        keys = (*ppath, "cidr", k) if isinstance(pred.cidr, list) else (*ppath, "cidr")
                        report.error("E102", f"invalid network {net!r} in rule '{sr.rule.id}'",
                                     sr.span_of(*keys), "write a network such as 10.0.0.0/8 or 2001:db8::/32")


def check_source_patterns(graph: Graph, report: Report) -> None:
    """A Kafka topic `pattern` must be a valid regex (E300)."""
    for node in graph.of_kind("source"):
        for key in getattr(node.spec, "REGEX_FIELDS", ()):
            pattern = getattr(node.spec, key, None)
            err = _compile_error(pattern, False) if isinstance(pattern, str) else None
            if err is not None:
                report.error("E300", f"topic {key} of source '{node.id}' does not compile: {err.msg}",
                             node.field_span(graph.smap, key), "write a Java/Python regular expression")


def has_event_time(graph: Graph, ref: str, memo: dict[str, bool | None] | None = None) -> bool | None:
    """Whether the output of node `ref` carries event time with a watermark (None: unknown)."""
    memo = {} if memo is None else memo
    nid = ref.split(".", 1)[0]
    if nid in memo:
        return memo[nid]
    memo[nid] = None  # cycle guard
    node = graph.nodes.get(nid)
    result: bool | None
    if node is None or is_placeholder(node.spec):
        result = None
    elif node.kind == "source":
        result = node.spec.event_time is not None
    elif node.spec.event_time_out() is not None:  # the component's own answer (a window's time, updates of keys)
        result = node.spec.event_time_out()
    else:
        own = getattr(node.spec, "event_time", None)  # a dedupe's own event time
        ins = [e for e in node.inputs if e.role == "input"]
        times = node.spec.input_times()  # a join's left_time and right_time
        if times is not None and len(times) == len(ins):
            sides = [t is not None or has_event_time(graph, e.ref, memo) for t, e in zip(times, ins, strict=True)]
        else:
            sides = [has_event_time(graph, e.ref, memo) for e in ins]
        if own is not None:
            result = True
        elif not sides or any(v is False for v in sides):
            result = False if sides else None
        elif any(v is None for v in sides):
            result = None
        else:
            result = True
    memo[nid] = result
    return result


def _first_event_time_sources(graph: Graph) -> dict[str, Node | None]:
    """Per node: the upstream source with event time that comes first by id (as the runtime picks it),
    in one pass over the graph in topological order (Graph.upstream_sources per node is quadratic)."""
    first: dict[str, Node | None] = {}
    for node in graph.nodes.values():
        best = node if node.kind == "source" and not is_placeholder(node.spec) \
            and getattr(node.spec, "event_time", None) is not None else None
        for e in node.inputs:
            up = first.get(e.src)
            if up is not None and (best is None or up.id < best.id):
                best = up
        first[node.id] = best
    return first


def _check_inherited_event_time(graph: Graph, node: Node, span: Span, report: Report,
                                first: dict[str, Node | None]) -> None:
    """A window without its own event_time uses its upstream source's (the first by id, as the
    runtime does): that column must still be in the window's input."""
    ups = [u for u in (first.get(e.src) for e in node.inputs) if u is not None]
    if not ups:
        return
    source = min(ups, key=lambda n: n.id)
    field = source.spec.event_time.field
    cols = graph.input_columns(node.id)
    if len(cols) != 1 or cols[0] is None:
        return
    names = {n.lower() for n, _ in cols[0]}
    if field.lower() not in names:
        report.error("E320", f"{node.type} '{node.id}' would use event time column '{field}' of source "
                     f"'{source.id}', but its input has no such column", span,
                     "give the window its own `event_time: {field: <timestamp column>, watermark: 30s}`")


def check_event_time(graph: Graph, report: Report) -> None:
    """Event-time windows, stream-stream joins and dedupes need event time and a watermark."""
    memo: dict[str, bool | None] = {}
    smap = graph.smap
    first: dict[str, Node | None] | None = None
    for node in graph.of_kind("transform"):
        if is_placeholder(node.spec):
            continue
        ins = [e for e in node.inputs if e.role == "input"]
        spec = node.spec
        use = spec.event_time_use()  # how the component uses event time (etl.spec.base.TransformBase)
        if use == "window" and spec.event_time is None:
            span = node.field_span(smap, "time") if smap is not None and smap.has(node.path + ("time",)) \
                else node.span
            if ins and all(has_event_time(graph, e.ref, memo) is False for e in ins):
                report.error("E320", f"{node.type} '{node.id}' uses event time, but no event time is defined upstream",
                             span, "add `event_time: {field: ts, watermark: 30s}` to the window or its source, "
                             "or set `time: processing`")
            else:
                first = _first_event_time_sources(graph) if first is None else first
                _check_inherited_event_time(graph, node, span, report, first)
        elif use == "processing" and any(
                has_event_time(graph, e.ref, memo) for e in ins):
            # Spark: one watermark per query's lineage; the processing-time column's own is a second one
            # ("Redefining watermark is disallowed" when the query starts: a SQL HOP over PROCTIME() of a table
            # with a WATERMARK validated and then failed at run)
            span = node.field_span(smap, "time") if smap is not None and smap.has(node.path + ("time",)) \
                else node.span
            report.error("E320", f"window '{node.id}' uses processing time, but its input carries event time with "
                         "a watermark: Spark allows one watermark per query, and a processing-time window "
                         "needs its own", span, "window by the event-time column (`time: event`; in SQL the "
                         "WATERMARK column), or read the stream through a source without event time")
        elif use == "join" and len(ins) == 2:
            for side, edge, own in (("left", ins[0], spec.left_time), ("right", ins[1], spec.right_time)):
                if own is None and has_event_time(graph, edge.ref, memo) is False:
                    report.error("E321", f"{node.type} '{node.id}': the {side} input '{edge.ref}' has no event time; "
                                 f"a {spec.JOIN_WORD} join needs "
                                 "event time and a watermark on both sides",
                                 edge.span or node.span,
                                 f"add `{side}_time: {{field: ts, watermark: 30s}}` or `event_time` on its source")
        elif (use == "state" and spec.event_time is None and ins
              and all(has_event_time(graph, e.ref, memo) is False for e in ins)):
            report.error("E321", f"dedupe '{node.id}' has no event time: its state would grow forever",
                         node.span, "add `event_time: {field: ts, watermark: 10m}` to the dedupe or its source")


MAX_TEST_ADVANCE_S = 60.0  # processing time a test waits out, at most, over all its batches


def check_tests(graph: Graph, report: Report) -> None:
    """`tests:` blocks name existing sources (inputs) and sinks (expect) (E207), in the case and in each of its
    `batches`; a batch's `watermark` is an ISO 8601 instant and the `advance`s of a case add up to at most 60s
    (E102)."""
    smap = graph.smap
    sources = [n.id for n in graph.of_kind("source") if not n.spec.is_static()]
    sinks = [n.id for n in graph.of_kind("sink")]

    def at(path: tuple, key: bool = True) -> Span:
        return (smap.key(path) if key else smap.value(path)) if smap is not None else Span(graph.name)

    for i, case in enumerate(getattr(graph.pipeline, "tests", None) or []):
        parts: list[tuple[tuple, Any]] = [(("tests", i), case)]
        parts += [(("tests", i, "batches", j), b) for j, b in enumerate(case.batches or [])]
        for path, part in parts:
            for key, known, what in (("inputs", sources, "source"), ("expect", sinks, "sink")):
                for name in getattr(part, key) or {}:
                    if name not in known:
                        report.error("E207", f"test '{case.name}' names unknown {what} '{name}' in `{key}`",
                                     at(path + (key, name)),
                                     did_you_mean(name, known) or (f"{what}s: {', '.join(known)}" if known else None))
        total = 0.0
        for j, b in enumerate(case.batches or []):
            if b.watermark is not None and _instant(b.watermark) is None:
                report.error("E102", f"test '{case.name}' batch {j + 1}: invalid watermark {b.watermark!r}",
                             at(("tests", i, "batches", j, "watermark"), key=False),
                             "an ISO 8601 instant, e.g. '2026-01-10T09:01:00Z'")
            total += float(b.advance or 0)
            if b.advance is not None and total > MAX_TEST_ADVANCE_S:
                report.error("E102", f"test '{case.name}': the batches' `advance` add up to {total:g}s, more than "
                             f"{MAX_TEST_ADVANCE_S:g}s", at(("tests", i, "batches", j, "advance"), key=False),
                             "a test waits processing time out on the wall clock: use event time to test long spans")


def _instant(text: str) -> Any:
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        return None


def check_endpoints(graph: Graph, report: Report) -> None:
    """The servers and names each component connects to, from its spec's endpoint_problems() hook: E102."""
    targets = [(n.spec, n.path, f"{n.kind} '{n.id}'", n.span) for n in graph.nodes.values()
               if not is_placeholder(n.spec)]
    dl = getattr(graph.pipeline, "dead_letter", None)
    if dl is not None:
        targets.append((dl, ("dead_letter",), "the dead-letter sink", Span(graph.name)))
    for spec, path, what, fallback in targets:
        for keys, value, why in spec.endpoint_problems():
            span = graph.smap.value(path + keys) if graph.smap is not None else fallback
            report.error("E102", f"invalid {'.'.join(map(str, keys))} {short_repr(value)} of {what}: {why}", span)


def check_graph(graph: Graph, report: Report, doc: Any = None) -> Graph:
    """Run every graph check; returns the graph (with columns filled in where known)."""
    check_public_names(graph, report, getattr(doc, "secrets", ()))
    check_unused(graph, report)
    check_path_text(graph, report)
    check_lookup_tables(graph, report)
    check_outputs(graph, report)
    check_sink_in_source(graph, report)
    check_endpoints(graph, report)
    check_source_patterns(graph, report)
    check_rules(graph, report)
    from etl.graph.functions import resolve_functions

    graph.functions.update(resolve_functions(graph.pipeline, graph.smap, graph.base_dir, report))
    propagate_columns(graph, report)
    check_event_time(graph, report)
    check_tests(graph, report)
    check_realtime(graph, report)
    return graph


def checkpoint_dir(graph: Graph) -> str:
    configured = graph.pipeline.checkpoint.path
    if configured:
        return _resolve(graph.base_dir, configured)
    return str((Path(".etl") / graph.name / "checkpoint").resolve())


def check_across(results: Iterable[Any]) -> None:
    """Checks between pipelines validated together: no shared checkpoint or output path."""
    seen_ckpt: dict[str, Any] = {}
    seen_out: dict[str, Any] = {}
    for r in results:
        if r.graph is None:
            continue
        ck = checkpoint_dir(r.graph)
        span = r.graph.smap.value(("checkpoint",)) if r.graph.smap else None
        if ck in seen_ckpt:
            r.report.error("E331", f"checkpoint folder {ck} is also used by pipeline '{seen_ckpt[ck].graph.name}' "
                           f"({seen_ckpt[ck].file})", span or r.graph.nodes[next(iter(r.graph.nodes))].span,
                           "give each pipeline its own `checkpoint` (or a distinct `name`)")
        else:
            seen_ckpt[ck] = r
        for node in r.graph.of_kind("sink"):
            key = node.spec.output_key()
            if key is None:
                continue
            if key.startswith("path:"):
                key = "path:" + _resolve(r.graph.base_dir, key[5:])
            other = seen_out.get(key)
            if other is not None and other[0] is not r:
                r.report.error("E330", f"sink '{node.id}' writes the same output as sink '{other[1]}' of "
                               f"{other[0].file}", node.span, "give each sink its own path, table, topic or index")
            else:
                seen_out.setdefault(key, (r, node.id))
