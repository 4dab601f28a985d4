"""The jobs of `etl serve`: many pipelines run by one process, on one Spark session.

Each job is one pipeline file, named by its pipeline's `name`: its own PipelineRun (queries, checkpoint, sinks,
dead letters), its own control endpoint (run file beside its checkpoint: `etl tap`, `etl top`, `etl drain` of the
file work as for `etl run`) and metrics, its own FAIR scheduler pool (named as the job) and share of the set's
turns (etl.runtime.turns: its micro-batches wait for one, fairly to the jobs' weights), its own thread (a failure
ends that job only). What a job needs around its run is etl.runtime.job's, as for `etl run`.

`sync()` compares the folder's files with what runs: a new file is checked and started; a changed one is
checked first and, valid, its job is stopped gracefully (the batch in flight written by every sink) and started
again from its checkpoint (a version that cannot start on that checkpoint, or that Spark's state schema check
refuses at its first batch, is refused with the reason and the previous version starts again); a changed file
that does not validate, or writes another running job's output, leaves the running version alone and says why; a
removed file stops its job. The caller (etl/commands/serve.py) gives the file listing and the checker:
the runtime layer does not import the front end.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from collections.abc import Callable, Iterable

from py4j.protocol import Py4JError

from etl import settings
from etl.diagnostics import Report
from etl.graph.checks import check_across
from etl.runtime.control import Control
from etl.runtime.failure import log_file as run_log
from etl.runtime.job import Refused, drive, hold, release
from etl.runtime.runner import PipelineRun, RunOptions
from etl.runtime.turns import Turns

POOL = "spark.scheduler.pool"
RUNNING = ("starting", "running", "stopping")
# Spark's error classes for a checkpoint's state that the plan of a new version does not fit (its schema check at
# the first batch: a stateful operator added, removed or changed, its key or value columns changed)
INCOMPATIBLE_STATE = re.compile(r"STATE_STORE_(KEY|VALUE)_SCHEMA_NOT_COMPATIBLE|STATE_STORE_COLUMN_FAMILY_SCHEMA_"
                                r"INCOMPATIBLE|STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION|STATE_STORE_INVALID_CONFIG_"
                                r"AFTER_RESTART|STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA")


def digest(path: str) -> str | None:
    """The file's content digest (None: it cannot be read now, e.g. removed meanwhile)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


@dataclass
class Job:
    name: str
    file: str
    digest: str
    plan: Any
    state: str = "starting"  # starting | running | stopping | stopped | done | failed
    reason: str = ""
    since: str = field(default_factory=lambda: datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"))
    how: str = "etl serve"  # what stopped it (for a batch a stop cancelled)
    previous: Any = None  # the plan of the version this one replaced after a change of its file
    runner: Any = None
    thread: threading.Thread | None = None
    started: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)

    def view(self) -> dict[str, Any]:
        batches = 0
        if self.runner is not None:
            batches = sum(r.batch + 1 for r in list(self.runner.progress.latest.values()))
        return {"name": self.name, "file": self.file, "state": self.state, "since": self.since,
                "batches": batches, "checkpoint": self.plan.checkpoint, "reason": self.reason}


@dataclass
class JobsOptions:
    files: Callable[[], Iterable[str]]  # the pipeline files of the folder, now
    check: Callable[[str], Any]  # a file -> etl.check.Checked (with its plan's filter programs)
    echo: Callable[[str], None]
    needed: Callable[[Any], Iterable[str]]  # a graph -> the connector packages it needs
    packages: frozenset[str] = frozenset()  # the ones the session was started with
    progress: str = "none"
    once: bool = False
    weights: dict[str, int] = field(default_factory=dict)  # job -> its weight (--weight; the others weigh 1)
    slots: Callable[[], int] = lambda: 1  # the session's task slots now (etl.runtime.session.task_slots)


class JobSet:
    def __init__(self, spark: Any, opts: JobsOptions):
        self.spark = spark
        self.opts = opts
        self.listeners = Listeners(spark) if spark is not None else None
        self.jobs: dict[str, Job] = {}  # name -> its job (stopped, failed and done ones too)
        self.seen: dict[str, str] = {}  # file -> digest last checked (valid or not)
        self.invalid: dict[str, str] = {}  # file -> why it is not running (its first diagnostic)
        self._refused: list[Job] = []  # new versions Spark refused at their first batch, to roll back
        self.turns = Turns(opts.slots(), opts.weights, settings.current().serve_turn_s)  # (etl.runtime.turns)
        self._lock = threading.RLock()

    # ---------------------------------------------------------------- folder
    def sync(self) -> None:
        """Start, restart and stop jobs after the folder's files (see the module's doc)."""
        with self._lock:
            self.turns.resize(self.opts.slots())
            while self._refused:
                self._roll_back(self._refused.pop(0), " at its first batch")
            now = {f: d for f in self.opts.files() if (d := digest(f)) is not None}
            for f in sorted(set(self.seen) - set(now)):
                del self.seen[f]
                self.invalid.pop(f, None)
                job = self._of_file(f)
                if job is not None and job.state in RUNNING:
                    self.opts.echo(f"etl serve: {job.name}: {f} removed: stopping the job")
                    self._stop(job, "its file removed")
                if job is not None:
                    del self.jobs[job.name]
            for f, d in sorted(now.items()):
                if self.seen.get(f) != d:
                    self.seen[f] = d
                    self._changed(f, d)

    def _of_file(self, f: str) -> Job | None:
        return next((j for j in self.jobs.values() if j.file == f), None)

    def _changed(self, f: str, d: str) -> None:
        old = self._of_file(f)
        checked = self.opts.check(f)
        if checked.rules_only:  # a rule file: the pipelines reading it reload it in place
            return
        refused = self._refusal(f, checked)
        if refused:
            for line in refused:
                self.opts.echo(line)
            self.invalid[f] = refused[0]
            if old is not None and old.state in RUNNING:
                self.opts.echo(f"etl serve: {old.name}: {f} changed but cannot run: the running version (since "
                               f"{old.since}) goes on")
            else:
                self.opts.echo(f"etl serve: {f}: not started")
            return
        self.invalid.pop(f, None)
        plan = checked.plan
        if old is None or old.state not in RUNNING:
            self.opts.echo(f"etl serve: {plan.name}: {f}: starting")
            self._start(Job(plan.name, f, d, plan))
            return
        self.opts.echo(f"etl serve: {old.name}: {f} changed and valid: restarting the job from its checkpoint")
        self._stop(old, "its file changed")
        new = self._start(Job(plan.name, f, d, plan, previous=old.plan if old.name == plan.name else None))
        if new.state == "failed" and new.previous is not None and not new.started.is_set():
            self._roll_back(new, "")

    def _refusal(self, f: str, checked: Any) -> list[str]:
        """Why a checked file cannot run now (its diagnostics, a name another file runs, connector jars the
        session lacks); [] when it can."""
        if checked.plan is None or checked.report.errors:
            return [d.render() for d in checked.report.sorted()] or [f"{f}: invalid pipeline"]
        name = checked.plan.name
        other = self.jobs.get(name)
        if other is not None and other.file != f and other.state in RUNNING:
            return [f"{f}: pipeline '{name}' is already run by {other.file}: each job needs a name of its own"]
        self._across(f, checked)
        if checked.report.errors:
            return [d.render() for d in checked.report.sorted()]
        missing = sorted(set(self.opts.needed(checked.plan.graph)) - self.opts.packages)
        if missing:
            return [f"{f}: needs connector jars the running set was started without ({', '.join(missing)}): "
                    "restart `etl serve` to load them"]
        return []

    def _across(self, f: str, checked: Any) -> None:
        """The checks between pipelines of `etl validate` with several files (E330 a sink writing another's output,
        E331 a shared checkpoint) of `checked` against the other files' running jobs: errors at `checked`'s
        positions, added to its report."""
        others = [SimpleNamespace(graph=j.plan.graph, report=Report(), file=j.file)
                  for j in self.jobs.values() if j.state in RUNNING and j.file != f]
        if checked.graph is not None and others:
            check_across([*others, checked])  # errors go to the later ones: only `checked`

    # ------------------------------------------------------------ one job
    def _start(self, job: Job) -> Job:
        """Start `job` on its own thread; returns once its queries started or it failed to start."""
        self.jobs[job.name] = job
        job.thread = threading.Thread(target=self._body, args=(job,), name=f"etl-job-{job.name}", daemon=True)
        job.thread.start()
        _until_started(job)
        return job

    def _body(self, job: Job) -> None:
        plan, echo = job.plan, self.opts.echo

        def said(line: str) -> None:
            job.reason = job.reason or line.splitlines()[0]
            echo(line)

        def running() -> None:
            job.state = "running"
            job.started.set()

        fd = control = None
        try:
            self.spark.sparkContext.setLocalProperty(POOL, job.name)  # inherited by the queries this thread starts
            log = run_log(plan.checkpoint)
            fd = hold(plan.graph, plan.checkpoint, log)
            control = Control(plan.name)
            control.start(plan.checkpoint)
            runner = PipelineRun(plan, self.spark, RunOptions(once=self.opts.once, progress=self.opts.progress,
                                                              control=control, listeners=self.listeners,
                                                              turns=self.turns))
            control.on_drain = lambda: runner.request_drain("etl jobs drain")
            job.runner = runner
            with runner.progress:
                code = drive(runner, log, said, lambda: job.how, started=running)
            job.state = "failed" if code else "stopped" if job.state == "stopping" else "done"
        except Refused as e:
            said(e.line)
            job.state = "failed"
        finally:
            if job.state not in ("stopped", "done"):
                job.state = "failed"
            if control is not None:
                control.close()
            release(fd)
            job.ended.set()
        if job.state == "failed" and job.started.is_set() and self._refused_state(job):
            self._refused.append(job)  # rolled back by the next sync (this thread may not wait for the set's lock)

    @staticmethod
    def _refused_state(job: Job) -> bool:
        """A new version's run ended at its first batch on Spark's state schema check: it wrote no batch."""
        return (job.previous is not None and job.runner is not None and not job.runner.progress.latest
                and INCOMPATIBLE_STATE.search(job.reason) is not None)

    def _roll_back(self, job: Job, when: str) -> None:
        """A new version refused `when` (at its start: a checkpoint it may not use, a compile error; at its first
        batch: Spark's state schema check): the version `job` replaced starts again on the checkpoint (a batch the
        new one planned but did not write is run again by it); the refusal stays listed as the job's reason until
        the file changes."""
        if self.jobs.get(job.name) is not job or digest(job.file) != job.digest:  # replaced, changed, removed
            return
        self.opts.echo(f"etl serve: {job.name}: the new version of {job.file} is refused{when} ({job.reason}); the "
                       "previous version starts again")
        self.invalid[job.file] = f"{job.file}: the new version is refused{when}: {job.reason}"
        self._start(Job(job.name, job.file, job.digest, job.previous))

    def _stop(self, job: Job, how: str) -> None:
        """Stop `job` gracefully: its batch in flight written by every sink; returns once it ended."""
        _ask_stop(job, how)
        if job.thread is not None:
            job.thread.join()

    # --------------------------------------------------------- operations
    def listing(self) -> list[dict[str, Any]]:
        with self._lock:
            jobs = [{**j.view(), "pool": j.name if self._pooled(j.name) else None,
                     **({"reason": f"its file's change is refused: {self.invalid[j.file]}"}
                        if j.file in self.invalid else {})} for j in self.jobs.values()]
            broken = [{"name": "", "file": f, "state": "invalid", "since": "", "batches": 0, "checkpoint": "",
                       "reason": why} for f, why in self.invalid.items() if self._of_file(f) is None]
        return sorted(jobs, key=lambda j: str(j["name"])) + sorted(broken, key=lambda j: str(j["file"]))

    def _pooled(self, name: str) -> bool:
        """Spark's FAIR scheduler has a pool of this name: it made it when the job's first tasks were scheduled."""
        try:
            return bool(self.spark.sparkContext._jsc.sc().getPoolForName(name).isDefined())
        except Py4JError:  # the JVM is going away (a listing while the set stops): not known
            return False

    def act(self, op: str, name: str) -> tuple[int, dict[str, Any]]:
        """`etl jobs stop|start|restart|drain NAME`: (HTTP status, answer)."""
        if op not in ("stop", "start", "restart", "drain"):
            return 404, {"error": f"unknown operation '{op}'", "operations": ["stop", "start", "restart", "drain"]}
        with self._lock:
            job = self.jobs.get(name)
            if job is None:
                return 404, {"error": f"no job named '{name}'", "jobs": sorted(self.jobs)}
            live = job.state in RUNNING
            if op in ("stop", "drain") and not live:
                return 409, {"error": f"job '{name}' is not running ({job.state})", "job": job.view()}
            if op == "start" and live:
                return 409, {"error": f"job '{name}' is running already", "job": job.view()}
            if op == "drain":
                job.runner.request_drain("etl jobs drain")
                return 202, {"draining": True, "job": job.view()}
            if live:
                self._stop(job, f"etl jobs {op}")
                self.opts.echo(f"etl serve: {name}: stopped (etl jobs {op})")
            if op == "stop":
                return 200, {"job": job.view()}
            checked = self.opts.check(job.file)  # the file as it is now, checked first
            refused = self._refusal(job.file, checked)
            if not refused and checked.plan.name != name:
                refused = [f"{job.file} now names pipeline '{checked.plan.name}'"]
            if refused:
                self.invalid[job.file] = refused[0]
                return 409, {"error": "the file does not validate", "diagnostics": refused, "job": job.view()}
            self.seen[job.file] = digest(job.file) or job.digest
            new = self._start(Job(name, job.file, self.seen[job.file], checked.plan))
            self.opts.echo(f"etl serve: {name}: started (etl jobs {op})")
            return (200 if new.state == "running" else 409), {"job": new.view()}

    def stop_all(self, how: str) -> None:
        """Every running job stopped gracefully, together (SIGTERM, Ctrl-C)."""
        with self._lock:
            live = [j for j in self.jobs.values() if j.state in RUNNING]
            for j in live:
                _ask_stop(j, how)
            for j in live:
                if j.thread is not None:
                    j.thread.join()

    def running(self) -> list[Job]:
        return [j for j in list(self.jobs.values()) if j.state in RUNNING]

    def failed(self) -> list[Job]:
        return [j for j in list(self.jobs.values()) if j.state == "failed"]


def _until_started(job: Job) -> None:
    """Until `job`'s queries started or its thread ended."""
    while not (job.started.wait(0.1) or job.ended.is_set()):
        pass


def _ask_stop(job: Job, how: str) -> None:
    """Ask `job` to stop gracefully (`how`: what stops it), once its queries started."""
    job.how = how
    if job.state in RUNNING:
        job.state = "stopping"
    _until_started(job)
    if job.runner is not None:
        job.runner.request_stop()


class Listeners:
    """One StreamingQueryListener for the whole set, handing each query's progress to its job's Progress: Spark
    calls every registered Python listener for every event, so one per job would cost jobs x events calls."""

    def __init__(self, spark: Any):
        from pyspark.sql.streaming import StreamingQueryListener

        self._by_name: dict[str, Any] = {}
        by_name = self._by_name

        class _Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                p = event.progress
                progress = by_name.get(p.name)
                if progress is not None:
                    progress.on_progress(json.loads(p.json))

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                pass

        spark.streams.addListener(_Listener())

    def add(self, progress: Any, names: set[str]) -> frozenset[str]:
        for n in names:
            self._by_name[n] = progress
        return frozenset(names)

    def remove(self, names: frozenset[str]) -> None:
        for n in names:
            self._by_name.pop(n, None)


class JobsMetrics:
    """The set's metrics (its control endpoint's /metrics and --metrics-port): every running job's in one
    exposition, each series with its job's `pipeline` label."""

    def __init__(self, jobs: JobSet):
        self.jobs = jobs

    def text(self) -> bytes:
        from prometheus_client import generate_latest
        from prometheus_client.registry import CollectorRegistry

        families: dict[str, Any] = {}
        for j in self.jobs.running():
            control = getattr(j.runner, "opts", None) and j.runner.opts.control
            if not control:
                continue
            for fam in control.metrics.registry.collect():
                merged = families.get(fam.name)
                if merged is None:
                    families[fam.name] = fam
                else:
                    merged.samples.extend(fam.samples)

        class Merged:
            def collect(self) -> Iterable[Any]:
                return list(families.values())

        registry = CollectorRegistry(auto_describe=False)
        registry.register(Merged())  # type: ignore[arg-type]
        with contextlib.suppress(ValueError):
            return generate_latest(registry)
        return b""
