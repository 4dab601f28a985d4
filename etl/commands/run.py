"""`etl run`: execute a pipeline on PySpark Structured Streaming.

Exit codes: 0 done (or stopped by SIGINT/SIGTERM after finishing the batch in
flight), 1 invalid pipeline or failed query, 2 usage error.

On a cluster, through spark-submit (it needs a .py file; the master, jars and
confs are spark-submit's, --conf values of etl are applied on top):

    spark-submit --master spark://host:7077 "$(python -c 'import etl, os; print(os.path.dirname(etl.__file__))')/__main__.py" \
        run pipelines/quickstart.yaml
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from pathlib import Path
from typing import Any
from collections.abc import Iterator

import typer

from etl import DISTRIBUTION, settings, version
from etl.commands import ALLOW_PATH_HELP, parse_vars, redact
from etl.commands.app import app

JVM_EXIT_S = 10.0  # how long the end of a run waits for its JVM to exit, its last log lines into the run's log


def _fail(lines: list[str], code: int = 1) -> None:
    for ln in lines:
        typer.echo(redact(ln), err=True)
    raise typer.Exit(code)


@app.command()
def run(
    path: str = typer.Argument(..., help="pipeline file"),
    once: bool = typer.Option(False, "--once", help="process everything available now, then exit (AvailableNow)"),
    drain: bool = typer.Option(False, "--drain", help="the input is complete: process it, flush every open window, "
                               "session, join buffer and dedupe state, then exit"),
    master: str | None = typer.Option(None, "--master", help="Spark master URL (default local[*])"),
    conf: list[str] | None = typer.Option(None, "--conf", help="Spark setting key=value (repeatable)"),
    checkpoint: str | None = typer.Option(None, "--checkpoint", help="checkpoint folder (overrides the pipeline's)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress output"),
    progress: str = typer.Option("live", "--progress", help="live, plain or json (one JSON line per batch); on stderr"),
    var: list[str] | None = typer.Option(None, "--var", help="template variable NAME=VALUE (repeatable)"),
    allow_path: list[str] | None = typer.Option(None, "--allow-path", help=ALLOW_PATH_HELP),
    setting: list[str] | None = typer.Option(None, "--set", help="etl setting NAME=VALUE, over the environment's "
                                                "(repeatable; python -m etl.settings --markdown lists them)"),
    metrics_port: int | None = typer.Option(None, "--metrics-port", min=1, max=65535,
                                               help="serve Prometheus metrics on this port (GET /metrics; "
                                               "the run's token as bearer credentials)"),
    profile: str | None = typer.Option(None, "--profile", help="light: local[1], a 512 MB heap not pre-touched, "
                                          "bounded state stores (the whole run within 1 core and 1 GB)"),
    metrics_host: str = typer.Option("127.0.0.1", "--metrics-host", help="address the metrics port listens on "
                                     "(0.0.0.0: every interface)"),
    ui: bool = typer.Option(False, "--ui", help="Spark's web UI, on 127.0.0.1 (off by default: it has no "
                            "authentication and shows query plans with their literal values)"),
) -> None:
    """Run a pipeline: continuous micro-batches (the pipeline's trigger) or --once; Ctrl-C stops cleanly.

    Under spark-submit, submit etl/__main__.py with the same arguments (run PIPELINE ...)."""
    from etl.check import check_file

    settings.configure(settings.parse_assignments(setting))
    if progress not in ("live", "plain", "json"):
        raise typer.BadParameter("expected live, plain or json", param_hint="--progress")
    from etl.runtime.session import PROFILES, parse_conf

    if profile is not None and profile not in PROFILES:
        raise typer.BadParameter(f"expected one of: {', '.join(sorted(PROFILES))}", param_hint="--profile")

    try:
        spark_conf = parse_conf(conf)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--conf") from None
    checked = check_file(path, cli_vars=parse_vars(var), programs=True, allow_paths=allow_path or ())
    if checked.plan is None:
        _fail([d.render() for d in checked.report.sorted()] or [f"{path}: invalid pipeline"])
    if master and checked.graph is not None:
        from etl.graph.cluster import check_cluster_paths

        check_cluster_paths(checked.graph, checked.report, master, checked.file)
    for d in checked.report.warnings:
        typer.echo(redact(d.render()), err=True)
    if once and drain:
        raise typer.BadParameter("give --once or --drain, not both", param_hint="--drain")
    code = execute(checked, once=once, master=master, conf=spark_conf, checkpoint=checkpoint,
                   progress="none" if quiet else progress, metrics_port=metrics_port, metrics_host=metrics_host,
                   profile=profile, drain=drain, ui=ui)
    leave(code)


@contextlib.contextmanager
def jvm_stderr_to(log: Any) -> Iterator[None]:
    """While the JVM starts, this process's stderr (fd 2) is the run's log file, so the JVM inherits it: what
    it and the Python daemons it starts print on stderr (a daemon's BrokenPipe traceback when the run stops, the
    JVM's start-up warnings) goes to the log, even from daemons started before System.err is redirected."""
    if log is None:
        yield
        return
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(str(log), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def leave(code: int) -> None:
    """Exit without the interpreter's finalization, once everything is committed, stopped and flushed: native
    client threads (librdkafka's, py4j's) calling back into a Python that is shutting down could otherwise print
    half a traceback after etl's last line."""
    import logging

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def execute(checked: Any, *, once: bool, master: str | None, conf: dict[str, str], checkpoint: str | None,
            progress: str, metrics_port: int | None = None, metrics_host: str = "127.0.0.1",
            profile: str | None = None, drain: bool = False, ui: bool = False) -> int:
    from etl.runtime import statedir

    with statedir.private():  # every file of the run (and of its JVM) 0600, every folder 0700
        return _execute(checked, once=once, master=master, conf={**statedir.HADOOP_UMASK, **conf},
                        checkpoint=checkpoint, progress=progress, metrics_port=metrics_port,
                        metrics_host=metrics_host, profile=profile, drain=drain, ui=ui)


# C901: the run's life in order: session, control, signals, run, exit code
def _execute(checked: Any, *, once: bool, master: str | None, conf: dict[str, str], checkpoint: str | None,  # noqa: C901
             progress: str, metrics_port: int | None, metrics_host: str, profile: str | None, drain: bool,
             ui: bool) -> int:
    from etl.runtime.control import Control
    from etl.runtime.failure import PythonLog
    from etl.runtime.failure import log_file as run_log
    from etl.runtime.job import Refused, Signals, drive, hold
    from etl.runtime.runlog import RunLog
    from etl.runtime.runner import PipelineRun, RunOptions
    from etl.runtime import packages
    from etl.runtime.session import build_session, end_jvm, run_master, stderr_to_file, under_spark_submit

    plan = checked.plan
    master = run_master(master, profile, plan.graph.pipeline.trigger.mode, once or drain)
    ck = str(Path(checkpoint).resolve()) if checkpoint else plan.checkpoint
    log = run_log(ck)
    try:  # before anything is written: a refused run leaves the running one's files alone
        hold(plan.graph, ck, log)
    except Refused as e:
        typer.echo(e.line, err=True)
        return 1
    quiet_jvm = not settings.current().log_level and not under_spark_submit()
    control = Control(plan.name, metrics_port, metrics_host)  # metrics, etl tap, etl top: before the JVM starts
    try:
        control.start(checkpoint or plan.checkpoint)
    except OSError as e:  # the metrics port is taken
        control.close()
        typer.echo(redact(f"etl run: --metrics-port {metrics_port}: cannot listen on {metrics_host}: {e}"), err=True)
        return 2
    runlog = RunLog(log)  # what the JVM writes to the log passes the redaction first (a FIFO etl reads)
    try:
        with jvm_stderr_to(Path(runlog.target) if quiet_jvm else None):
            spark = build_session(f"etl-{plan.name}", master, conf, ui=ui, log_file=runlog.target, profile=profile,
                                  packages=packages.needed(plan.graph))
    except packages.JarsUnavailable as e:  # Ivy could not fetch the connectors' jars: at the first that needs them
        control.close()
        runlog.close()
        typer.echo(redact(packages.jars_fault(plan.graph, e).diagnostic().render()), err=True)
        return 1
    except ValueError as e:
        control.close()
        runlog.close()
        typer.echo(redact(f"etl run: {e}"), err=True)
        return 2
    if quiet_jvm:
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            stderr_to_file(spark, runlog.target)
        except OSError:
            pass
    if progress != "none":  # the first line: which etl and which Spark run it (and where to watch it)
        ui = spark.sparkContext.uiWebUrl
        typer.echo(f"etl run: {plan.name}: {DISTRIBUTION} {version()} on Spark {spark.version}"
                   + (f", Spark UI {ui}" if ui else "") + f" (master {spark.sparkContext.master})", err=True)
    runner = PipelineRun(plan, spark, RunOptions(once=once, checkpoint=checkpoint, progress=progress,
                                                 control=control, drain=drain))
    control.on_drain = lambda: runner.request_drain("etl drain")  # POST /drain with the run's token
    def on_stop(how: str) -> None:
        if progress != "none":
            sys.stderr.write(f"\netl: {how}: finishing the current batch, then stopping\n")
        runner.request_stop()

    def on_drain(signum: int, frame: Any) -> None:
        if progress != "none":
            sys.stderr.write("\netl: SIGUSR1: draining: finishing the current batch, then flushing every window\n")
        runner.request_drain()

    resumed = any(Path(runner.checkpoint).glob("*/commits/[0-9]*"))  # a query committed a batch before
    signals = Signals(on_stop, {signal.SIGUSR1: on_drain})
    try:
        with runner.progress, PythonLog(log):
            code = drive(runner, log, lambda line: typer.echo(line, err=True), lambda: signals.how)
            if code:
                return code
        if progress != "none":
            summary = runner.progress.summary()
            if resumed and not runner.progress.totals:
                summary = (f"no new input since the last run (its checkpoint {runner.checkpoint} remembers what "
                           "was read: remove it to read everything again)")
            typer.echo(redact(f"etl run: {plan.name}: {summary}"), err=True)
        return 0
    finally:
        control.close()
        signals.restore()
        ended = False
        if not under_spark_submit():
            with contextlib.suppress(Exception):
                spark.stop()
            ended = end_jvm(JVM_EXIT_S)
        runlog.close(JVM_EXIT_S if ended else 0)  # what the JVM wrote until it exited is in the log, redacted
        # Kafka clients left for the garbage collector are destroyed now: at interpreter exit, their threads'
        # log callbacks could print half a Python traceback after etl's last line
        gc.collect()

