"""A failure that stops `etl run`: one positioned line on the console, the full stack in a log file.

`etl run` reports every failure that ends a run (a server gone past the sink's
retries, a source that cannot be reached, a bug) as one diagnostic,
``file:line:col: E4xx <component>: <cause>``, and a hint that names the run's log
file. The log file, ``<checkpoint parent>/logs/etl-run-<timestamp>.log``, holds
the Python traceback and the Java stack of the failure, and the lines Spark logs
about the failed task and query (etl/runtime/session.py sends them there, not to
the console, unless ETL_LOG_LEVEL asks for Spark's logs).

Which component: a full disk (E411) or a damaged checkpoint (E412) is named as
such, whoever met it (a sink retrying its write, a query reading its state);
a sink that gave up (SinkFailed) is the sink, at its position; a query whose
error names a connection problem of its only server source is that source
(E407); a Python aggregate function of a batch group-by that raised or ran past a bound is the function, at
its def (E401); anything else is the pipeline, at its first line (E401). A checkpoint
held by a running `etl run` (E410) or recorded by another pipeline (E413) is
refused before the run starts (etl/runtime/statedir.py).
"""

from __future__ import annotations

import datetime
import logging
import os
import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etl.diagnostics import Diagnostic, Severity, Span
from etl.runtime.statedir import CheckpointInUse, ForeignCheckpoint
from etl.secrets import redact, registered

RESUME = "the run resumes from its checkpoint: nothing committed is lost or written twice"
UNREACHABLE = re.compile(r"Connection refused|ConnectException|UnknownHostException|No route to host|"
                         r"Communications link failure|TimeoutException|timed out|Failed to (get|fetch)|"
                         r"cannot reach|Can't connect", re.I)
DISK_FULL = re.compile(r"No space left on device|\[Errno 28\]|ENOSPC|Disk quota exceeded|\[Errno 122\]")
# what Spark says when a part of a query's checkpoint cannot be read back: a state store's error classes, or a
# truncated or garbled file (JSON, a stream's end) met by the code reading offsets/commits (HDFSMetadataLog),
# metadata (StreamMetadata) or a state store's changelog or snapshot
STATE_ERROR = re.compile(r"CANNOT_LOAD_STATE_STORE|CANNOT_READ_STREAMING_STATE_FILE|CANNOT_READ_DELTA_FILE|"
                         r"CANNOT_READ_SNAPSHOT_FILE|CANNOT_READ_CHECKPOINT|STATE_STORE_\w*CORRUPT\w*|"
                         r"INVALID_LOG_VERSION|UnsupportedLogVersion|Log file was malformed")
GARBLED = re.compile(r"Unexpected end-of-input|JsonParseException|JsonEOFException|ParserUtil\$ParseException|"
                     r"Unexpected character|Unrecognized token")
DAMAGE = re.compile(rf"{GARBLED.pattern}|EOFException|CHECKSUM")
FIRST = re.compile(r"Current State: INITIALIZING|Current Committed Offsets: \{\}")
# a Python aggregate function a batch group-by called raised or ran past a bound (etl.compile.functions._series)
AGGREGATE_FAILED = re.compile(r"AggregateFailed: python function '([^'\n]+)' failed: ([^\n]+)")
READER = re.compile(r"HDFSMetadataLog|OffsetSeqLog|CommitLog|StreamMetadata|StateStoreChangelog|RocksDBFileManager|"
                    r"HDFSBackedStateStore|StateSchemaCompatibilityChecker|OperatorStateMetadata")


def log_file(checkpoint: str, now: datetime.datetime | None = None) -> Path:
    """Where this run's log goes: next to the checkpoint folder (the pipeline's state folder)."""
    now = now or datetime.datetime.now(datetime.UTC)
    return Path(checkpoint).resolve().parent / "logs" / f"etl-run-{now:%Y%m%dT%H%M%SZ}.log"


def shown(path: Path) -> str:
    """`path` relative to the working folder when it is inside it (shorter messages)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@dataclass
class Failure:
    code: str
    component: str  # "mysql sink 'out'", "pipeline 'x'"
    cause: str
    span: Span
    hint: str
    stack: str = ""  # Python traceback and Java stack, for the log file

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(self.code, f"{self.component}: {self.cause}", self.span, Severity.ERROR, self.hint)


def java_stack(exc: BaseException | None) -> str:
    """The Java stack (with its causes) of a py4j/pyspark exception, when it has one."""
    seen = 0
    while exc is not None and seen < 8:
        origin = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)
        if origin is not None:
            try:
                from pyspark import SparkContext

                jvm = SparkContext._jvm  # type: ignore[attr-defined]
                return str(jvm.org.apache.spark.util.Utils.exceptionString(origin))  # type: ignore[union-attr]  # (caught)
            except Exception:  # noqa: BLE001 - the JVM may be gone
                pass
        text = getattr(exc, "_stackTrace", None)
        if text:
            return str(text)
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return ""


def stack_of(exc: BaseException) -> str:
    py = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    java = java_stack(exc)
    return py + (f"\nJava stack:\n{java}\n" if java else "")


class Redacting(logging.Formatter):
    """A log record's text with env() values and URL passwords hidden (etl.secrets.redact)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class PythonLog:
    """While a run lasts, py4j's errors (an exception in foreachBatch, seen from its callback server; dropped by
    py4j's own NullHandler otherwise) go to the run's log file."""

    LOGGERS = ("py4j",)

    def __init__(self, path: Path):
        self.handler: logging.Handler | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            return
        self.handler = logging.FileHandler(path, delay=True, encoding="utf-8")
        self.handler.setFormatter(Redacting("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self.handler.setLevel(logging.ERROR)

    def __enter__(self) -> PythonLog:
        if self.handler is not None:
            for name in self.LOGGERS:
                logging.getLogger(name).addHandler(self.handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.handler is not None:
            for name in self.LOGGERS:
                logging.getLogger(name).removeHandler(self.handler)
            self.handler.close()


def write_log(path: Path, line: str, stack: str) -> bool:
    """Append a failure (its line, then its stacks) to the run's log, redacted; False when it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{datetime.datetime.now(datetime.UTC).isoformat()} etl run (pid {os.getpid()})\n")
            fh.write(redact(line) + "\n\n")
            fh.write(redact(stack or "(no stack)") + "\n")
        return True
    except OSError:
        return False


def redact_log(path: Path, block: int = 1 << 22) -> None:
    """The run's log at rest, redacted once the run ends, where the JVM wrote it itself (no FIFO could be made for
    etl.runtime.runlog): log4j's run-log appender and its stderr never passed Python's redaction. Rewritten through a
    temporary file in blocks of whole lines."""
    if not registered():
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(path, encoding="utf-8", errors="replace") as src, open(tmp, "w", encoding="utf-8") as dst:
            while chunk := src.read(block):
                chunk += src.readline()  # end the block at a line's end
                dst.write(redact(chunk))
        os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def report(diag: Diagnostic, log: Path, stack: str) -> str:
    """The console text of a failure that stops the run (its hint names the log file), after writing the log."""
    hint = diag.hint
    if write_log(log, diag.render(), stack):
        hint = (f"{hint}; " if hint else "") + f"full stack in {shown(log)}"
    return redact(Diagnostic(diag.code, diag.message, diag.span, diag.severity, hint).render())


def pipeline_span(graph: Any) -> Span:
    for n in graph.nodes.values():
        return Span(n.span.file, 1, 1)
    return Span("<pipeline>")


def stop_cancelled(graph: Any, cancelled: Any, grace_s: float, how: str) -> Failure:
    """A batch a stop (`how`: SIGTERM, SIGINT) cancelled past ETL_STOP_GRACE_S (etl.runtime.runner.Cancelled): at
    the Python function whose call was running (its def in its module), else at the query's first component."""
    node = graph.nodes.get(cancelled.root)
    span = node.span if node is not None else pipeline_span(graph)
    fns = [graph.functions[f.lower()] for f in cancelled.functions if f.lower() in graph.functions]
    if fns:
        span = def_span(fns[0])
    running = (f"a call of python function {', '.join(repr(f.name) for f in fns)} was running, "
               if fns else "")
    return Failure("E414", f"query '{cancelled.query}'",
                   f"{how}: batch {cancelled.batch} did not finish within {grace_s:g} s (ETL_STOP_GRACE_S): "
                   f"{running}its jobs were cancelled and it is not committed", span,
                   f"run again: it processes batch {cancelled.batch} again ({RESUME})")


def def_span(fn: Any) -> Span:
    """A pipeline's Python function (etl.spec.signature.Signature): its def in its module."""
    return Span(shown(Path(fn.file)), fn.line, 1)


def function_failure(graph: Any, full: str, stack: str) -> Failure | None:
    """A Python aggregate function of a batch group-by that raised or ran past a bound (time, memory, value): at
    its def, with what it did; None: no such failure. (A batch group-by has no row to make a dead letter of: the
    query stops, as the function's other failures make a dead letter of their row.)"""
    found = AGGREGATE_FAILED.search(full) or AGGREGATE_FAILED.search(stack)
    if found is None:
        return None
    name, reason = found.group(1), (redact(found.group(2).strip()) or "")[:500]
    fn = graph.functions.get(name.lower())
    return Failure("E401", f"python function '{name}'", f"failed in a batch group-by: {reason}",
                   def_span(fn) if fn is not None else pipeline_span(graph),
                   "a batch group-by's aggregate has no row to make a dead letter of, so its query stops: fix the "
                   "function, or raise the bound its reason names (etl settings), then run again: " + RESUME, stack)


def field_span(graph: Any, node: Any, field: str | None) -> Span:
    if field and graph.smap is not None:
        try:
            return node.field_span(graph.smap, field)
        except Exception:  # noqa: BLE001 - the component's own position is good enough
            pass
    return node.span


def checkpoint_span(graph: Any) -> Span:
    """The pipeline's `checkpoint:` (its first line when it has none)."""
    if graph.smap is not None and ("checkpoint",) in graph.smap.values:
        return graph.smap.value(("checkpoint", "path"))
    return pipeline_span(graph)


def checkpoint_fault(graph: Any, err: BaseException) -> Failure:
    """A checkpoint a run may not use (etl/runtime/statedir.py), found before it starts."""
    span, what = checkpoint_span(graph), f"pipeline '{graph.name}'"
    if isinstance(err, CheckpointInUse):
        return Failure("E410", what, str(err), span, f"one run per checkpoint: stop that run first (kill -TERM "
                       f"{err.pid or '<pid>'}), or give this one its own checkpoint (--checkpoint DIR)")
    if isinstance(err, ForeignCheckpoint):
        return Failure("E413", what, f"{err}, not to '{graph.name}'", span,
                       "give each pipeline its own checkpoint (checkpoint: or --checkpoint DIR); resuming another "
                       "pipeline's offsets and state would read wrong data")
    return fault(graph, f"{type(err).__name__}: {err}", "") or Failure(
        "E412", what, f"the checkpoint cannot be used: {err}", span,
        "check the folder's owner and permissions (only the user running etl should read it)")


def fault(graph: Any, cause: str, full: str, stack: str = "") -> Failure | None:
    """A full disk (E411) or a damaged checkpoint (E412), whichever part of the run met it; None: neither."""
    found = fault_line(f"{cause}\n{full}\n{stack}")
    if found is None:
        return None
    code, line = found
    where, what = checkpoint_span(graph), f"pipeline '{graph.name}'"
    if code == "E411":
        return Failure(code, what, f"disk full: {line}", where, f"free space (or raise the quota) where the "
                       f"checkpoint, the sinks and the dead letters write (df -h), then run again: {RESUME}", stack)
    return Failure(code, what, f"the checkpoint is damaged: {line}", where,
                   "a file of the checkpoint is truncated or not what Spark wrote (the log names it): restore the "
                   "checkpoint from a backup, or start over with a new one (--checkpoint DIR, or remove the folder: "
                   "every source is read again)", stack)


def fault_line(text: str) -> tuple[str, str] | None:
    """("E411", the line saying the disk is full) or ("E412", the line saying the checkpoint cannot be read back);
    a truncated file counts when the error comes from a checkpoint reader, garbled JSON also before the run's
    first commit (Spark reads the offsets, commits and metadata back while the query has committed nothing yet;
    its stack may not name the reader)."""
    if found := DISK_FULL.search(text):
        return "E411", _line(text, found)
    found = STATE_ERROR.search(text) or (DAMAGE.search(text) if READER.search(text) else None) or \
        (GARBLED.search(text) if FIRST.search(text) else None)
    if found:
        return "E412", _line(text, found)
    return None


def _line(text: str, found: re.Match[str]) -> str:
    start = text.rfind("\n", 0, found.start()) + 1
    end = text.find("\n", found.end())
    line = text[start:end if end >= 0 else None].strip()
    return line.removeprefix("Caused by: ").lstrip(": ")[:300]  # (py4j puts ": " before the Java exception)


def sink_failure(graph: Any, err: Any, stack: str) -> Failure:
    """A sink that gave up on a batch (etl.runtime.sink.SinkFailed)."""
    node = graph.nodes.get(getattr(err, "sink_id", None) or "")
    unreachable = getattr(err, "unreachable", False)
    cause = getattr(err, "cause", None) or str(err)
    found = fault(graph, cause, str(err), stack)
    if found is not None:
        return found
    if node is None:
        return Failure("E401", f"pipeline '{graph.name}'", cause, pipeline_span(graph), RESUME, stack)
    what = f"{node.type} sink '{node.id}'"
    if unreachable:
        hint = f"the server did not answer within the sink's retries (retry:); once it runs, run again: {RESUME}"
        return Failure("E407", what, cause, node.span, hint, stack)
    return Failure("E401", what, cause, node.span, f"fix the cause above and run again: {RESUME}", stack)


def query_failure(graph: Any, sources: list[str], cause: str, full: str, stack: str) -> Failure:
    """A query that failed with no sink to blame: its server source when the error says it cannot be reached,
    else the pipeline (a bug in etl or Spark, or a condition etl does not know)."""
    found = fault(graph, cause, full, stack) or function_failure(graph, full, stack)
    if found is not None:
        return found
    servers = [graph.nodes[s] for s in sources if s in graph.nodes and graph.nodes[s].spec.SERVER_FIELD]
    if len(servers) == 1 and UNREACHABLE.search(full):
        node = servers[0]
        field = node.spec.SERVER_FIELD
        return Failure("E407", f"{node.type} source '{node.id}'", cause, field_span(graph, node, field),
                       f"check that the server runs and is reachable, then run again: {RESUME}", stack)
    return unknown_failure(graph, cause, stack)


def text_of(cause: str | BaseException) -> str:
    """str(cause), also once the JVM has died: a Py4JJavaError's text is its Java exception's, asked of the gateway,
    which then raises (ConnectionRefusedError) instead of giving it: the error's class and that it cannot be read."""
    try:
        return str(cause)
    except Exception as e:  # noqa: BLE001 - re-raised unless the gateway's (py4j's classes or a socket error)
        if not (isinstance(e, OSError) or type(e).__module__.startswith("py4j")):
            raise
        return f"{type(cause).__name__} (its text could not be read: the JVM has ended)"


def unknown_failure(graph: Any, cause: str | BaseException, stack: str = "") -> Failure:
    """A failure etl has no component for: the pipeline, at its first line."""
    text = text_of(cause)
    found = fault(graph, f"{type(cause).__name__}: {text}" if isinstance(cause, OSError) else text, "", stack)
    if found is not None:
        return found
    if isinstance(cause, BaseException):
        cause = ((redact(text) or "").strip().splitlines() or [type(cause).__name__])[0][:500]  # (redacted, then cut)
    return Failure("E401", f"pipeline '{graph.name}'", cause, pipeline_span(graph),
                   f"the query stopped on an error etl does not handle (please report it with the log); {RESUME}",
                   stack)
