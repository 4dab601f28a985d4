"""Run a plan: compile it, start one streaming query per root, stop gracefully.

Lifecycle: `start()` compiles and starts the queries; `wait()` returns when
they end by themselves (AvailableNow) or after `request_stop()` (SIGINT,
SIGTERM): the batch in flight finishes and is committed by every sink, the
next one is never started, and the next run resumes from the checkpoint.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Callable

import pyarrow as pa

from etl import registry, settings
from etl.compile import CompileContext, Compiler, Output, Query
from etl.compile import drain as drain_files
from etl.compile.bounds import CRASHED_TASKS, MAX_CRASHES, crashed_tasks, running_calls
from etl.compile.context import CompileError
from etl.compile.deadletter import carried_stages, redacted_reasons
from etl.compile.guard import GUARDED_BATCHES, guarding, row_error
from etl.dead_letters import DDL, ERR, PAYLOAD
from etl.physical import PhysicalPlan
from etl.secrets import redact
from etl.components.sinks.file.spec import default_dead_letter
from etl.runtime.draining import Drain
from etl.runtime.errors import RunFailed
from etl.runtime.failure import Failure, query_failure, sink_failure, stack_of
from etl.runtime.file_watch import FileWatch
from etl.runtime.progress import Progress, make_listener
from etl.runtime import realtime
from etl.runtime.sink import AbstractSink, SinkContext, SinkFailed

log = logging.getLogger("etl.run")

SinkFactory = Callable[[Output, Any, SinkContext], AbstractSink]


@dataclass(frozen=True)
class Cancelled:
    """A query's batch a stop cancelled (past ETL_STOP_GRACE_S): it is not committed."""

    query: str
    root: str  # the query's first component
    batch: int
    functions: tuple[str, ...]  # the pipeline's Python functions whose calls were running (as their journals say)


class StopRequested(RuntimeError):
    """Raised in foreachBatch when a batch starts after a stop was requested (it is replayed later)."""


@dataclass
class RunOptions:
    once: bool = False
    drain: bool = False  # the input is complete: flush every window, session, join buffer and dedupe state
    checkpoint: str | None = None  # overrides the plan's
    progress: str = "live"  # live | plain | json | none
    sources: dict[str, Callable[..., Any]] | None = None  # test hooks: source id -> builder
    sink_factory: SinkFactory | None = None  # test hook: build every sink
    control: Any = None  # etl.runtime.control.Control: metrics and taps (etl run starts one)
    echo: Callable[[str], None] | None = None
    interval: str | None = None  # test hook: a processing-time trigger (Spark interval text) whatever the plan says
    listeners: Any = None  # etl serve: one StreamingQueryListener for every job (etl.runtime.jobs.Listeners)
    turns: Any = None  # etl serve: the set's fair turns; each micro-batch waits for one (etl.runtime.turns.Turns)
    extra: dict[str, Any] = field(default_factory=dict)


def default_dead_letter_spec(checkpoint: str) -> Any:
    return default_dead_letter(str(Path(checkpoint).parent / "dead_letters"))


class PipelineRun:
    def __init__(self, plan: Any, spark: Any, options: RunOptions | None = None):
        self.plan = plan
        self.graph = plan.graph
        self.spark = spark
        self.opts = options or RunOptions()
        self.checkpoint = str(Path(self.opts.checkpoint).resolve()) if self.opts.checkpoint else plan.checkpoint
        self.progress = Progress(self.graph.name, self.opts.progress if self.opts.progress != "none" else "none")
        self.queries: list[Query] = []
        self.streams: list[Any] = []
        self.sinks: dict[tuple[str, str], AbstractSink] = {}
        self.failure: str | None = None
        self.failed: Failure | None = None  # the sink failure that stopped the run (with its stack)
        self._stopping = False
        self.drain = Drain(self, self.opts.drain)
        self._locks: dict[str, threading.Lock] = {}
        self._guard_left: dict[str, int] = {}  # query -> micro-batches it still evaluates guarded (etl.compile.guard)
        self._last_done: dict[str, int] = {}
        self._in_flight: dict[str, int] = {}  # query -> the batch its foreachBatch is running
        self._dead_seen: dict[str, bool] = {}  # query -> its last batch had (or may have had) dead letters
        self.cancelled: list[Cancelled] = []  # batches a stop cancelled past ETL_STOP_GRACE_S (not committed)
        self._cancelling: set[str] = set()  # queries whose batch's jobs _cancel is cancelling
        self._listener: Any = None
        available_now = self.opts.once or self.opts.drain or plan.graph.pipeline.trigger.mode == "available_now"
        # Spark's real-time mode: its own sinks, no foreachBatch (etl.runtime.realtime); --once, --drain, `etl test`
        # and the test hooks run the pipeline in micro-batches
        self.realtime = plan.graph.pipeline.trigger.mode == "realtime" and not available_now and \
            self.opts.interval is None and self.opts.sink_factory is None
        ctx = CompileContext(spark, self.graph, self.checkpoint, plan=plan,
                             trigger="available_now" if available_now else "continuous")
        self.compiler = Compiler(ctx, self.opts.sources)
        # files read once by name: renames, appends, truncation and recreation it will not handle are warned about
        self.watches = [FileWatch(n.id, ctx.resolve(p)) for n in self.graph.of_kind("source")
                        if (p := n.spec.files_read_once()) and n.id not in (self.opts.sources or {})]

    @property
    def physical(self) -> PhysicalPlan:
        """The run's physical plan: planned once, on first use, by its CompileContext for its session's target (the
        settings snapshot, master and jar); compile builds it, the runtime reads it (sink engines, query pace)."""
        return self.compiler.ctx.physical_plan()

    # --------------------------------------------------------------- naming
    def query_name(self, q: Query) -> str:
        return f"{self.graph.name}/{q.name}"

    def query_checkpoint(self, q: Query) -> str:
        return os.path.join(self.checkpoint, q.name)

    # ---------------------------------------------------------------- sinks
    def _make_sink(self, q: Query, out: Output) -> AbstractSink:
        spec = out.spec
        if out.is_dead_letter:
            spec = self.graph.pipeline.dead_letter or default_dead_letter_spec(self.checkpoint)
        node = self.graph.nodes.get(out.id)
        ctx = SinkContext(self.graph.name, out.id, q.name, self.checkpoint, self.graph.base_dir,
                          echo=self.opts.echo or self.progress.echo(), checkpoint=self.query_checkpoint(q),
                          where=str(node.span) if node is not None else None,
                          dead_letter=self.graph.pipeline.dead_letter or default_dead_letter_spec(self.checkpoint))
        if self.opts.sink_factory is not None:  # sinks a caller made (`etl test`'s captures) live in this process
            ctx.executors = False
            return self.opts.sink_factory(out, spec, ctx)
        cls = registry.lookup("sink", spec.type)
        try:
            sink_cls = cls.load_builder()
        except (ImportError, AttributeError) as e:
            node = self.graph.nodes.get(out.id)
            raise CompileError(f"sink type '{spec.type}' is not supported by `etl run` yet ({e})", node,
                               code="E402") from None
        sink = sink_cls(spec, ctx)
        planned = self._planned_sink(out)
        if planned is not None:  # the JSON lines engine of the physical plan (file sinks)
            sink.json_engine = planned.engine("json")
            sink.count_engine = planned.engine("count")  # how Spark's writer counts its rows
        return sink

    def _planned_sink(self, out: Any) -> Any:
        """The physical plan's node of a query output (a sink, or the dead-letter sink: its id is DEAD_LETTER);
        None: not planned."""
        planned = self.physical.find(out.id)
        return planned if planned is not None and planned.kind == "sink" else None

    # ----------------------------------------------------------- per batch
    def _batch_fn(self, q: Query) -> Callable[[Any, int], None]:
        lock = self._locks.setdefault(q.name, threading.Lock())
        sinks = {o.id: self.sinks[(q.name, o.id)] for o in q.outputs}
        crash = settings.current().test_worker_crash  # CRASH_HOOK
        demotions = self.compiler.ctx.demotions  # the rule sets a step budget moved out of the JVM (this run's)

        def run_batch(batch_df: Any, batch_id: int) -> None:
            with lock:
                self._in_flight[q.name] = batch_id
                if crash is not None:
                    _crash_in_worker(batch_df, crash)
                if self._stopping:
                    raise StopRequested(f"etl: stopping; batch {batch_id} of {q.name} will be replayed on restart")
                written: dict[str, int] = {}
                guarded = self._guard_left.get(q.name, 0) > 0
                crashed: set[int] = set()  # task attempts whose Python worker ended (etl.compile.bounds)
                while True:
                    try:
                        with guarding(guarded):
                            skipped = self._write_batch(q, sinks, batch_df, batch_id, written)
                        break
                    except Exception as e:
                        if q.name in self._cancelling:  # a stop cancelled the batch's jobs (_cancel): not retried
                            raise
                        # a rule pattern ran past its step budget: the batch again, its rule set on the Python
                        # path (sinks that committed the batch skip it; the others write it now)
                        if demotions.demote(e):
                            continue
                        # an expression threw on a row: the batch again with guards (etl.compile.guard), the
                        # failing rows to dead letters; the query's next batches stay guarded for a while
                        if not guarded and row_error(e):
                            guarded = True
                            self._guard_left[q.name] = GUARDED_BATCHES + 1
                            continue
                        # a Python function ended its worker: the batch again, guarded; the new worker answers
                        # that call from the dead one's journal (etl.compile.bounds), one more call each time
                        tids = crashed_tasks(e) - crashed
                        if tids and len(crashed) < MAX_CRASHES:
                            crashed |= tids
                            batch_df.sparkSession.sparkContext.setLocalProperty(
                                CRASHED_TASKS, ",".join(map(str, sorted(crashed))))
                            guarded = True
                            self._guard_left[q.name] = GUARDED_BATCHES + 1
                            continue
                        if isinstance(e, SinkFailed):
                            self.failure = str(e)
                            self.failed = sink_failure(self.graph, e, stack_of(e))
                        raise
                if crashed:
                    batch_df.sparkSession.sparkContext.setLocalProperty(CRASHED_TASKS, None)
                self._guard_left[q.name] = self._guard_left.get(q.name, 1) - 1
                self.progress.sink_counts(q.name, batch_id, written, skipped)
                self._last_done[q.name] = batch_id
            for w in self.watches:
                w.check()

        if self.opts.turns is None:
            return run_batch
        turns, job = self.opts.turns, self.graph.name

        def run_in_turn(batch_df: Any, batch_id: int) -> None:  # (a stop while it waits: StopRequested above)
            with turns.turn(job, lambda: self._stopping):
                run_batch(batch_df, batch_id)

        return run_in_turn

    def _write_batch(self, q: Query, sinks: dict[str, AbstractSink], batch_df: Any, batch_id: int,
                     written: dict[str, int]) -> list[str]:
        """Evaluate one micro-batch and write it to every output of `q`; fills `written` (rows per sink; a count
        from an earlier attempt at the batch stays when this one skips the sink) and returns the skipped sinks."""
        batch = self.compiler.evaluate(q, batch_df, lambda oid: sinks[oid].can_split,
                                       dead_expected=self._dead_seen.get(q.name, True))
        skipped: list[str] = []
        failed_rows: list[tuple[str, Any]] = []  # (stage, table of ERR/PAYLOAD) from split writes
        evaluated = False  # did a write run the batch's plan (and so commit its state stores)?
        try:
            for o in q.outputs:
                if o.id in batch.splits:
                    res, dead = sinks[o.id].write_split(batch.frame(o.id), batch_id)
                    evaluated = True  # a skipped split write still reads the failed rows
                    if dead is not None and dead.num_rows:
                        stage = batch.splits[o.id]
                        failed_rows.extend(carried_stages(dead, stage, batch.carried.get(stage)))
                else:
                    if not o.is_dead_letter:
                        frame = batch.frame(o.id)
                    else:  # the sinks' pass counted no failed row in it: no job for it, its frame not even made
                        none = batch.dead_counts is not None and batch.dead_counts.none()
                        self._dead_seen[q.name] = not none
                        frame = redacted_reasons(self._with_failed_rows(None if none else batch.frame(o.id),
                                                                        failed_rows))
                    if frame is None:
                        written[o.id] = 0
                        continue
                    res = sinks[o.id].write_batch(frame, batch_id)
                    evaluated = evaluated or not res.skipped
                if res.skipped and o.id in written:  # committed by an earlier attempt at this batch
                    continue
                written[o.id] = res.rows
                if self.opts.control is not None:
                    self.opts.control.sink_result(o.id, res)
                if res.skipped:
                    skipped.append(o.id)
            self._record_engines(q, sinks)
            if not evaluated:
                # A replay every sink had already committed (the crash fell between the sinks'
                # commits and Spark's commit log). A stateful plan must still run: Spark
                # requires each state store of the batch to commit its version again.
                batch_df.write.format("noop").mode("overwrite").save()
            if self.opts.control is not None:  # taps sample the batch after every sink has written it
                self.opts.control.batch_counts(q.name, batch.rows_out())  # before a tap computes a stage again
                self.opts.control.sample(q, batch, batch_id)
        finally:
            for c in batch.cached:
                c.unpersist()
        return skipped

    def _record_engines(self, q: Query, sinks: dict[str, AbstractSink]) -> None:
        """The sinks' engines as they ran (etl.physical's `write`, `json` and `count` aspects): compared with
        explain's."""
        ctx = self.compiler.ctx
        for o in q.outputs:  # (the dead-letter sink's id is DEAD_LETTER, as in the physical plan)
            ctx.record(o.id, "write", sinks[o.id].write_engine)
            spec = getattr(sinks[o.id], "spec", None)
            if getattr(spec, "type", None) == "file" and getattr(spec, "format", None) == "jsonl":
                rendering = getattr(sinks[o.id], "json_rendering", None)  # a caller's sink may be another class
                ctx.record(o.id, "json", rendering() if rendering else "to_json")
            counted = getattr(sinks[o.id], "count_ran", None)
            if counted is not None and counted() is not None:
                ctx.record(o.id, "count", counted())

    def _with_failed_rows(self, frame: Any, failed: list[tuple[str, Any]]) -> Any:
        """The dead-letter frame plus the failed rows that split writes brought back to the driver."""
        if not failed:
            return frame
        now = datetime.datetime.now(datetime.UTC)
        tables = []
        for stage, t in failed:
            n = t.num_rows
            tables.append(pa.table({
                "pipeline": pa.array([self.graph.name] * n, pa.string()),
                "stage": pa.array([stage] * n, pa.string()),
                "reason": t.column(ERR).cast(pa.string()),
                "payload": t.column(PAYLOAD).cast(pa.string()),
                "time": pa.array([now] * n, pa.timestamp("us", tz="UTC")),
            }))
        extra = self.spark.createDataFrame(pa.concat_tables(tables).to_pandas(), DDL)
        return extra if frame is None else frame.unionByName(extra)

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Compile and start every query (raises CompileError before anything starts)."""
        drain_files.refuse_drained(self.graph, self.checkpoint)
        with drain_files.sentinels(self.checkpoint, self.drain.nonce):
            self.queries = realtime.queries(self.compiler) if self.realtime else self.compiler.queries()
        for q in self.queries:
            for o in q.outputs:
                self.sinks[(q.name, o.id)] = self._make_sink(q, o)
        names = {self.query_name(q) for q in self.queries}
        if self.opts.control is not None:
            self.opts.control.started(self.graph, self.queries, self.progress)
        if self.progress.mode != "none" or self.progress.observers:
            if self.opts.listeners is not None:  # one listener for the set: each event once, not once per job
                self._listener = self.opts.listeners.add(self.progress, names)
            else:
                self._listener = make_listener(self.progress, names)
                self.spark.streams.addListener(self._listener)
        Path(self.checkpoint).mkdir(parents=True, exist_ok=True)
        for w in self.watches:
            w.check()  # the files as the first micro-batch will find them
        trigger = self.plan.graph.pipeline.trigger
        self._start_streams(self.opts.once or self.opts.drain or trigger.mode == "available_now")

    def _start_streams(self, available_now: bool) -> None:
        self.streams = []
        trigger = self.plan.graph.pipeline.trigger
        for q in self.queries:
            if self.realtime and not q.dead_only:  # (dead letters: micro-batches, foreachBatch, any sink)
                self.progress.spark_sinks[q.name] = q.outputs[0].id
                self.streams.append(realtime.start(q, self.sinks[(q.name, q.outputs[0].id)], self.query_name(q),
                                                   self.query_checkpoint(q), trigger.interval.seconds,
                                                   self.graph.base_dir))
                continue
            w = (q.stream.writeStream.queryName(self.query_name(q))
                 .option("checkpointLocation", self.query_checkpoint(q))
                 .foreachBatch(self._batch_fn(q)))
            paced = self.physical.paced(q.root)  # a continuous aggregate's `every`: its batches' pace
            if available_now and self.opts.interval is None:
                w = w.trigger(availableNow=True)
            elif paced is not None and (self.opts.interval is not None or paced[0] > trigger.interval.seconds):
                w = w.trigger(processingTime=f"{int(round(paced[0] * 1000))} milliseconds")
            else:
                w = w.trigger(processingTime=self.opts.interval or trigger.interval.spark())
            self.streams.append(w.start())

    def request_stop(self) -> None:
        self._stopping = True

    def request_drain(self, how: str = "SIGUSR1") -> None:
        """Drain a running pipeline (SIGUSR1, `etl drain`): finish the batch in flight, then drain as `--drain`."""
        self.drain.asked = how

    def _graceful_stop(self) -> None:
        """Each query's batch in flight is written by every sink, within ETL_STOP_GRACE_S of the stop for all of
        them; the batches still running then (a Python function call that never returns, a sink stuck) have their
        Spark jobs cancelled -- their tasks' Python workers are ended (spark.python.task.killTimeout) -- and are not
        committed: the next run processes them again."""
        grace = time.monotonic() + settings.current().stop_grace_s
        busy: list[tuple[Query, Any]] = []
        for q, s in zip(self.queries, self.streams, strict=False):
            lock = self._locks.setdefault(q.name, threading.Lock())
            if not lock.acquire(timeout=max(0.0, grace - time.monotonic())):
                busy.append((q, s))
                continue
            lock.release()
            done = self._last_done.get(q.name)
            deadline = time.monotonic() + 5
            while done is not None and s.isActive and time.monotonic() < deadline:
                lp = s.lastProgress  # reported after Spark's commit log is written
                if lp and int(lp.get("batchId", -1)) >= done:
                    break
                time.sleep(0.05)
            try:
                s.stop()
            except Exception as e:  # noqa: BLE001 - a query failing while it stops is reported below
                log.debug("stop of %s: %s", q.name, e)
        if busy:
            self._cancel(busy)

    def _cancel(self, busy: list[tuple[Query, Any]]) -> None:
        """Cancel the jobs of the batches in flight of `busy` queries and stop them; records each batch that did not
        finish, with the Python functions whose calls were running (etl.compile.bounds' journals, this machine's)."""
        batches = {q.name: self._in_flight.get(q.name, -1) for q, _ in busy}
        self._cancelling.update(batches)
        for (query, _), sink in self.sinks.items():
            if query in batches:  # a write the cancellation makes fail is not retried (AbstractSink._retry)
                sink.cancelled = True
        for _, s in busy:  # a query's batches run in its job group, its run id (etl serve: the other jobs go on)
            self.spark.sparkContext.cancelJobGroup(str(s.runId))
        for q, s in busy:
            try:
                s.stop()  # returns once foreachBatch has raised on its cancelled job
            except Exception as e:  # noqa: BLE001 - the query ends on the cancellation it was asked for
                log.debug("stop of %s: %s", q.name, e)
            if self._last_done.get(q.name) != batches[q.name]:  # (it may have finished meanwhile)
                self.cancelled.append(Cancelled(q.name, q.root, batches[q.name],
                                                running_calls(str(s.id), batches[q.name])))

    def wait(self, poll: float = 0.25) -> None:
        """Until every query ends (AvailableNow) or a stop is requested; raises RunFailed on failure."""
        try:
            while True:
                if self._stopping:
                    self._graceful_stop()
                    break
                if self.drain.pass_ == 0 and self.drain.step():  # a drain asked for while running
                    continue
                # active first: a query that ends between the two looks is seen failed now, or active (next turn)
                active = [s for s in self.streams if s.isActive]
                failed = [(q, s) for q, s in zip(self.queries, self.streams, strict=False)
                          if not s.isActive and s.exception() is not None]
                if failed:
                    self._stopping = True
                    for s in active:
                        if s.isActive:
                            s.stop()
                    raise self._failed(*failed[0])
                if not active:
                    if self.drain.pass_ in (1, 2) and self.drain.step():
                        continue
                    break
                with contextlib.suppress(Exception):  # a failed query: reported by the check above, next turn
                    active[0].awaitTermination(poll)  # returns as soon as the query ends (AvailableNow), not a poll later
            self._drain_progress()
        finally:
            self.close()

    def _failed(self, q: Query, stream: Any) -> RunFailed:
        exc = stream.exception()
        if self.failure is not None:
            return RunFailed(self.failure, self.failed)
        cause = _explained(exc)
        root = self.graph.nodes.get(q.root)
        sources = [] if root is None else [root.id] if root.kind == "source" else \
            [n.id for n in self.graph.upstream_sources(root.id)]
        failure = query_failure(self.graph, sources, cause, str(exc), stack_of(exc))
        return RunFailed(cause, failure)

    def _drain_progress(self, timeout: float = 3.0) -> None:
        """Progress events arrive asynchronously: wait (briefly) for the last batch of each query."""
        if self.progress.mode == "none" and not self.progress.observers:  # (observers: the metrics)
            return
        deadline = time.monotonic() + timeout
        for q, s in zip(self.queries, self.streams, strict=False):
            lp = s.lastProgress
            if not lp:
                continue
            last = int(lp.get("batchId", -1))
            while time.monotonic() < deadline:
                seen = self.progress.latest.get(q.name)
                if seen is not None and seen.batch >= last:
                    break
                time.sleep(0.05)

    def close(self) -> None:
        for s in self.streams:
            if s.isActive:
                with contextlib.suppress(Exception):
                    s.stop()
        if self._listener is not None and self.opts.listeners is not None:
            self.opts.listeners.remove(self._listener)
            self._listener = None
        if self._listener is not None:
            with contextlib.suppress(Exception):
                self.spark.streams.removeListener(self._listener)
            self._listener = None
        for sink in self.sinks.values():
            sink.close()


CRASH_HOOK = "ETL_TEST_WORKER_CRASH"  # tests: a Python worker raises this message in every batch (a bug's path)


def _crash_in_worker(df: Any, message: str) -> None:
    from pyspark.sql import functions as F

    def boom(x):  # type: ignore[no-untyped-def] # (no hints: pyspark would warn it cannot infer from them)
        raise RuntimeError(message)

    df.select(F.udf(boom, "string")(F.lit(1))).collect()


WRAPPERS = ("Exception thrown in awaitResult", "Job aborted due to stage failure", "Writing job aborted")


def _explained(exc: Any) -> str:
    """The query's failure in one line; a wrapper (awaitResult, job aborted) names its root cause too."""
    msg = _clean(str(exc))
    if not any(msg.startswith(w) for w in WRAPPERS):
        return msg
    java = getattr(exc, "_origin", None)
    try:
        seen = 0
        while java is not None and java.getCause() is not None and seen < 20:
            java, seen = java.getCause(), seen + 1
        root = str(java.toString()) if java is not None and seen else ""
    except Exception:  # noqa: BLE001 - the JVM may be gone; the wrapper line is still worth printing
        root = ""
    root = redact(root) or root  # before it is cut
    return f"{msg.rstrip(': ')} (root cause: {root.splitlines()[0][:500]})" if root else msg


PY_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): (.+)$")


def _clean(msg: str) -> str:
    """The useful line of a StreamingQueryException (Python tracebacks are long): etl's own error, else the
    innermost Python exception of a traceback, else the first line."""
    for marker in ("SinkFailed: ", "TerminalError: ", "etl.compile.context.CompileError: "):
        if marker in msg:
            return msg.split(marker, 1)[1].splitlines()[0]
    lines = [ln for ln in msg.splitlines() if ln.strip()]
    if "Traceback (most recent call last)" in msg:
        raised = [m for m in map(PY_ERROR.match, lines) if m and not m.group(2).startswith("An exception was")]
        if raised:
            return f"{raised[-1].group(1).rsplit('.', 1)[-1]}: {raised[-1].group(2)}"
    return lines[0] if lines else msg
