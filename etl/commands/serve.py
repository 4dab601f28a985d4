"""`etl serve FOLDER`: every pipeline file (YAML or SQL) under FOLDER, two levels deep, run as jobs of one
Spark application (etl/runtime/jobs.py); files added, changed and removed while it runs start, restart and stop
their jobs. `etl jobs` operates the set through its control endpoint (run file FOLDER/.etl/@serve/run.json).

Exit codes: 0 stopped by SIGINT/SIGTERM (every job's batch in flight finished) or, with --once, every job done;
1 a job failed or a file did not validate (--once), or the folder is served already; 2 usage error.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from pathlib import Path
from typing import Any

import typer

from etl import DISTRIBUTION, settings, version
from etl.commands import ALLOW_PATH_HELP, parse_vars, redact
from etl.commands.app import app
from etl.commands.run import JVM_EXIT_S, jvm_stderr_to, leave

STATE = Path(".etl") / "@serve"  # under FOLDER: the set's lock, run file, token, log (no pipeline's name has @)


def job_files(folder: Path) -> list[str]:
    """The pipeline files of `folder` and of its sub-folders (two levels, as rsqldb's jobs folder); folders whose
    name starts with . or _ are not looked into (.etl holds the jobs' state)."""
    from etl.check import pipeline_files

    subs = [d for d in sorted(folder.iterdir()) if d.is_dir() and not d.name.startswith((".", "_"))]
    return pipeline_files([folder, *subs])


def pools_xml(weights: dict[str, int]) -> str:
    """A FAIR scheduler allocation file giving the named jobs' pools their weights (the others weigh 1)."""
    from xml.sax.saxutils import quoteattr

    pools = "".join(f"  <pool name={quoteattr(n)}><schedulingMode>FIFO</schedulingMode><weight>{w}</weight>"
                    "<minShare>0</minShare></pool>\n" for n, w in sorted(weights.items()))
    return f'<?xml version="1.0"?>\n<allocations>\n{pools}</allocations>\n'


def parse_weights(items: list[str] | None) -> dict[str, int]:
    weights: dict[str, int] = {}
    for item in items or []:
        name, _, w = item.partition("=")
        if not name or not w.isdigit() or int(w) < 1:
            raise typer.BadParameter(f"expected NAME=WEIGHT (a whole number >= 1), got {item!r}",
                                     param_hint="--weight")
        weights[name] = int(w)
    return weights


@app.command()
def serve(
    folder: str = typer.Argument(..., help="folder of pipeline files (YAML or SQL; its sub-folders too)"),
    once: bool = typer.Option(False, "--once", help="run every job on what is available now, then exit"),
    master: str | None = typer.Option(None, "--master", help="Spark master URL (default local[*])"),
    conf: list[str] | None = typer.Option(None, "--conf", help="Spark setting key=value (repeatable)"),
    progress: str = typer.Option("none", "--progress", help="none, plain or json (one JSON line per batch, "
                                 "naming its pipeline); on stderr"),
    var: list[str] | None = typer.Option(None, "--var", help="template variable NAME=VALUE (repeatable)"),
    allow_path: list[str] | None = typer.Option(None, "--allow-path", help=ALLOW_PATH_HELP),
    setting: list[str] | None = typer.Option(None, "--set", help="etl setting NAME=VALUE (repeatable)"),
    weight: list[str] | None = typer.Option(None, "--weight", help="JOB=WEIGHT: the job's share of the task "
                                            "slots, its micro-batches' turns and FAIR pool (default 1; repeatable)"),
    metrics_port: int | None = typer.Option(None, "--metrics-port", min=1, max=65535,
                                               help="serve every job's Prometheus metrics on this port"),
    metrics_host: str = typer.Option("127.0.0.1", "--metrics-host", help="address the metrics port listens on"),
    profile: str | None = typer.Option(None, "--profile", help="light: the whole set within 1 core and 1 GB"),
    ui: bool = typer.Option(False, "--ui", help="Spark's web UI, on 127.0.0.1"),
) -> None:
    """Run every pipeline of a folder as jobs of one Spark application; hot add, change and remove of files.

    Under spark-submit, submit etl/__main__.py with the same arguments (serve FOLDER ...)."""
    from etl.runtime import session, statedir

    settings.configure(settings.parse_assignments(setting))
    if progress not in ("none", "plain", "json"):
        raise typer.BadParameter("expected none, plain or json", param_hint="--progress")
    if profile is not None and profile not in session.PROFILES:
        raise typer.BadParameter(f"expected one of: {', '.join(sorted(session.PROFILES))}", param_hint="--profile")
    try:
        spark_conf = session.parse_conf(conf)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--conf") from None
    weights = parse_weights(weight)
    root = Path(folder)
    if not root.is_dir():
        typer.echo(f"etl serve: no such folder: {folder}", err=True)
        raise typer.Exit(2)
    with statedir.private():
        code = _serve(root.resolve(), once=once, master=master, conf={**statedir.HADOOP_UMASK, **spark_conf},
                      progress=progress, cli_vars=parse_vars(var), allow_paths=allow_path or (), weights=weights,
                      metrics_port=metrics_port, metrics_host=metrics_host, profile=profile, ui=ui)
    leave(code)


def _checker(cli_vars: dict[str, Any], allow_paths: Any, master: str | None) -> Any:
    from etl.check import check_file

    def check(f: str) -> Any:
        checked = check_file(f, cli_vars=cli_vars, programs=True, allow_paths=allow_paths)
        if master and checked.graph is not None:
            from etl.graph.cluster import check_cluster_paths

            check_cluster_paths(checked.graph, checked.report, master, checked.file)
        return checked

    return check


# C901: the set's life in order: lock, first check, session, control, signals, watch, stop
def _serve(root: Path, *, once: bool, master: str | None, conf: dict[str, str], progress: str,  # noqa: C901
           cli_vars: dict[str, Any], allow_paths: Any, weights: dict[str, int], metrics_port: int | None,
           metrics_host: str, profile: str | None, ui: bool) -> int:
    from etl.runtime import control as controls
    from etl.runtime import failure, job, jobs as jobset, packages, runlog as runlogs, session, statedir

    state = root / STATE
    try:
        statedir.lock(str(state))
    except statedir.CheckpointInUse as e:
        typer.echo(f"etl serve: {root} is served already (pid {e.pid or '?'}): `etl jobs --folder {root}` "
                   "operates it", err=True)
        return 1
    check = _checker(cli_vars, allow_paths, master)
    first: dict[str, tuple[str | None, Any]] = {f: (jobset.digest(f), check(f)) for f in job_files(root)}

    def checked_once(f: str) -> Any:  # the first look reuses the check that chose the session's jars
        d, c = first.pop(f, (None, None))
        return c if c is not None and d == jobset.digest(f) else check(f)

    needed = frozenset(p for _, c in first.values() if c.plan is not None for p in packages.needed(c.plan.graph))
    echo = lambda line: typer.echo(redact(line), err=True)  # noqa: E731
    if weights:
        pools = state / "pools.xml"
        statedir.write_private(pools, pools_xml(weights))
        conf = {"spark.scheduler.allocation.file": str(pools), **conf}
    conf = {"spark.scheduler.mode": "FAIR", **conf}
    control = controls.Control(f"serve {root}", metrics_port, metrics_host)
    try:
        control.start(str(state / "checkpoint"))  # its run file: state/run.json
    except OSError as e:
        control.close()
        echo(f"etl serve: --metrics-port {metrics_port}: cannot listen on {metrics_host}: {e}")
        return 2
    log = failure.log_file(str(state / "checkpoint"))
    runlog = runlogs.RunLog(log)
    quiet_jvm = not settings.current().log_level and not session.under_spark_submit()
    spark: Any = None
    try:
        with jvm_stderr_to(Path(runlog.target) if quiet_jvm else None):
            spark = session.build_session("etl-serve", master, conf, ui=ui, log_file=runlog.target, profile=profile,
                                  packages=sorted(needed))
    except (packages.JarsUnavailable, ValueError) as e:
        control.close()
        runlog.close()
        echo(f"etl serve: {e}")
        return 1
    if quiet_jvm:
        with contextlib.suppress(OSError):
            session.stderr_to_file(spark, runlog.target)
    echo(f"etl serve: {root}: {DISTRIBUTION} {version()} on Spark {spark.version} (master "
         f"{spark.sparkContext.master}, FAIR pools, turns for {session.task_slots(spark)} batch(es) at once)")
    jobs = jobset.JobSet(spark, jobset.JobsOptions(files=lambda: job_files(root), check=checked_once, echo=echo,
                                     needed=packages.needed, packages=needed, progress=progress, once=once,
                                     weights=weights, slots=lambda: session.task_slots(spark)))
    control.metrics = jobset.JobsMetrics(jobs)  # type: ignore[assignment]
    control.jobs = jobs
    stop = threading.Event()

    def on_stop(how: str) -> None:
        sys.stderr.write(f"\netl serve: {how}: finishing every job's batch in flight, then stopping\n")
        stop.set()

    signals = job.Signals(on_stop)
    try:
        with failure.PythonLog(log):
            jobs.sync()
            poll = settings.current().serve_poll_s
            while not stop.wait(poll):
                if once and not jobs.running():
                    break
                if not once:
                    jobs.sync()
            jobs.stop_all(signals.how)
        failed = jobs.failed()
        for j in failed:
            echo(f"etl serve: {j.name}: failed: {j.reason}")
        states = [f"{j['name'] or j['file']}={j['state']}" for j in jobs.listing()]
        echo(f"etl serve: {root}: {len(states)} job(s): {', '.join(states)}")
        return 1 if once and (failed or jobs.invalid) else 0
    finally:
        control.close()
        signals.restore()
        ended = False
        if not session.under_spark_submit():
            with contextlib.suppress(Exception):
                spark.stop()
            ended = session.end_jvm(JVM_EXIT_S)
        runlog.close(JVM_EXIT_S if ended else 0)
