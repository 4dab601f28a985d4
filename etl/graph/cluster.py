"""W332: on a cluster, every machine must see the pipeline's files: a file source's or sink's `path`, the
dead-letter folder and the checkpoint. `etl validate --master URL` and `etl run --master URL` warn when a
cluster master is named (anything but local[...]) and one of them is a local path (no URI scheme, or file://):
it is right only when that path is shared storage mounted at the same place on every machine."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from etl.diagnostics import Report, Span

HINT = ("on a cluster, use storage every machine sees: a shared mount at the same path everywhere "
        "(then ignore this warning), or a hdfs:// / s3a:// checkpoint")


def is_cluster(master: str | None) -> bool:
    return master is not None and master.strip() != "" and not master.strip().startswith("local")


def _local(path: str | None) -> bool:
    scheme = urlparse(path or "").scheme
    return len(scheme) <= 1 or scheme == "file"  # a Windows drive letter is local too


def check_cluster_paths(graph: Any, report: Report, master: str | None, file: str) -> None:
    if not is_cluster(master):
        return
    smap = graph.smap
    for node in graph.nodes.values():
        path = getattr(node.spec, "path", None)
        if node.kind in ("source", "sink") and isinstance(path, str) and _local(path):
            report.warning("W332", f"{node.kind} '{node.id}' {'reads' if node.kind == 'source' else 'writes'} "
                           f"the local path {path!r} on the cluster {master}", node.field_span(smap, "path"), HINT)
    pipeline = graph.pipeline
    dead = getattr(pipeline, "dead_letter", None)
    if dead is not None and isinstance(getattr(dead, "path", None), str) and _local(dead.path):
        report.warning("W332", f"the dead-letter sink writes the local path {dead.path!r} on the cluster {master}",
                       _span(smap, ("dead_letter", "path"), file), HINT)
    ckpt = getattr(getattr(pipeline, "checkpoint", None), "path", None)
    if _local(ckpt):
        where = repr(ckpt) if ckpt else f"'.etl/{graph.name}/checkpoint' (the default)"
        report.warning("W332", f"the checkpoint {where} is a local path on the cluster {master}",
                       _span(smap, ("checkpoint",), file), HINT)


def _span(smap: Any, keys: tuple, file: str) -> Span:
    if smap is not None:
        try:
            return smap.value(keys)
        except (KeyError, IndexError, TypeError, AttributeError):
            pass
    return Span(file, 1, 1)
