"""`etl serve` and `etl jobs` without a JVM: which files are jobs, the FAIR pools file, the merged metrics, the
operations' refusals, the control endpoint's job routes and the client's answers."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlparse

import pytest
import typer
from typer.testing import CliRunner

from etl.cli import app
from etl.commands.serve import job_files, parse_weights, pools_xml
from etl.runtime.control import Control
from etl.runtime.jobs import Job, JobSet, JobsMetrics, JobsOptions
from etl.runtime.metrics import Metrics


def test_jobs_are_the_pipeline_files_two_levels_deep_outside_hidden_folders(tmp_path):
    for f in ("a.yaml", "z.sql", "sub/b.sql", "sub/b.tests.yaml", "sub/b.yaml", "sub/c.yml", "sub/deeper/d.yaml",
              ".etl/e.yaml", "_old/f.yaml", "data.jsonl"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("name: x\n")
    assert [Path(f).relative_to(tmp_path).as_posix() for f in job_files(tmp_path)] == \
        ["a.yaml", "z.sql", "sub/b.sql", "sub/c.yml"]


def test_weights_become_a_fair_allocation_file():
    assert parse_weights(["heavy=1", "light=4"]) == {"heavy": 1, "light": 4}
    assert pools_xml({"light": 4, 'a"b': 2}) == (
        '<?xml version="1.0"?>\n<allocations>\n'
        '  <pool name=\'a"b\'><schedulingMode>FIFO</schedulingMode><weight>2</weight><minShare>0</minShare></pool>\n'
        '  <pool name="light"><schedulingMode>FIFO</schedulingMode><weight>4</weight><minShare>0</minShare></pool>\n'
        '</allocations>\n')
    for bad in ("light", "light=0", "=2", "light=x"):
        with pytest.raises(typer.BadParameter, match="expected NAME=WEIGHT"):
            parse_weights([bad])


def job(name: str, state: str, metrics: Metrics | None = None) -> Job:
    j = Job(name, f"/jobs/{name}.yaml", "d", SimpleNamespace(checkpoint=f"/state/{name}/checkpoint"), state=state,
            since="2026-11-29T08:00:00+00:00")
    if metrics is not None:
        j.runner = SimpleNamespace(opts=SimpleNamespace(control=SimpleNamespace(metrics=metrics)),
                                   progress=SimpleNamespace(latest={}))
    return j


def jobset(*jobs: Job) -> JobSet:
    said: list[str] = []
    js = JobSet(None, JobsOptions(files=list, check=lambda f: None, echo=said.append, needed=lambda g: ()))
    js._pooled = lambda name: False  # type: ignore[method-assign] # (no session)
    js.jobs = {j.name: j for j in jobs}
    return js


def test_the_set_metrics_are_every_running_jobs_in_one_exposition():
    one, two, gone = Metrics("one"), Metrics("two"), Metrics("gone")
    for m, n in ((one, 2), (two, 3), (gone, 5)):
        for _ in range(n):
            m.on_progress("events", {"numInputRows": 10}, 0)
    text = JobsMetrics(jobset(job("one", "running", one), job("two", "running", two),
                              job("gone", "stopped", gone))).text().decode()
    assert text.count("# TYPE etl_batches_total counter") == 1
    assert 'etl_batches_total{pipeline="one",query="events"} 2.0' in text
    assert 'etl_batches_total{pipeline="two",query="events"} 3.0' in text
    assert 'etl_query_input_rows_total{pipeline="two",query="events"} 30.0' in text
    assert 'pipeline="gone"' not in text


def test_operations_refused_with_their_reason():
    js = jobset(job("a", "running"), job("b", "stopped"))
    assert js.act("pause", "a") == (404, {"error": "unknown operation 'pause'",
                                          "operations": ["stop", "start", "restart", "drain"]})
    assert js.act("stop", "c") == (404, {"error": "no job named 'c'", "jobs": ["a", "b"]})
    code, answer = js.act("stop", "b")
    assert (code, answer["error"]) == (409, "job 'b' is not running (stopped)")
    code, answer = js.act("drain", "b")
    assert (code, answer["error"]) == (409, "job 'b' is not running (stopped)")
    code, answer = js.act("start", "a")
    assert (code, answer["error"]) == (409, "job 'a' is running already")
    js.invalid["/jobs/x.yaml"] = "/jobs/x.yaml:3:5: E310 unknown column"
    assert js.listing() == [
        {"name": "a", "file": "/jobs/a.yaml", "state": "running", "since": "2026-11-29T08:00:00+00:00", "batches": 0,
         "checkpoint": "/state/a/checkpoint", "reason": "", "pool": None},
        {"name": "b", "file": "/jobs/b.yaml", "state": "stopped", "since": "2026-11-29T08:00:00+00:00", "batches": 0,
         "checkpoint": "/state/b/checkpoint", "reason": "", "pool": None},
        {"name": "", "file": "/jobs/x.yaml", "state": "invalid", "since": "", "batches": 0, "checkpoint": "",
         "reason": "/jobs/x.yaml:3:5: E310 unknown column"}]


def test_the_control_endpoint_routes_jobs_only_for_a_set():
    control = Control("p")
    assert control.other("GET", urlparse("/jobs"), True) == (404, b"not found\n", "text/plain")
    control.jobs = jobset(job("a", "running"))
    code, body, _ = control.other("GET", urlparse("/jobs"), True)
    assert code == 200 and [j["name"] for j in json.loads(body)["jobs"]] == ["a"]
    code, body, _ = control.other("POST", urlparse("/jobs/stop?name=zz"), True)
    assert (code, json.loads(body)["error"]) == (404, "no job named 'zz'")
    assert control.other("GET", urlparse("/jobs"), False)[0] == 404  # the metrics port serves /metrics only


def test_etl_jobs_without_a_running_serve_and_usage_errors(tmp_path):
    runner = CliRunner()
    r = runner.invoke(app, ["jobs", "list", "--folder", str(tmp_path)])
    assert r.exit_code == 1
    assert f"etl jobs: no running `etl serve` of {tmp_path.resolve()}" in r.output
    assert runner.invoke(app, ["jobs", "stop", "--folder", str(tmp_path)]).exit_code == 2
    assert runner.invoke(app, ["jobs", "list", "x", "--folder", str(tmp_path)]).exit_code == 2
    assert runner.invoke(app, ["jobs", "pause", "x", "--folder", str(tmp_path)]).exit_code == 2


def test_etl_jobs_talks_to_the_set_with_its_token(tmp_path):
    """A live set's run file (this process's pid): list prints the table, an operation's refusal is exit 1."""
    control = Control("serve")
    control.jobs = jobset(job("a", "running"), job("b", "stopped"))
    control.start(str(tmp_path / ".etl" / "@serve" / "checkpoint"))
    try:
        runner = CliRunner()
        r = runner.invoke(app, ["jobs", "--folder", str(tmp_path)])
        assert r.exit_code == 0, r.output
        assert r.stdout.splitlines() == [
            "NAME  STATE    BATCHES  SINCE                      FILE",
            "a     running  0        2026-11-29T08:00:00+00:00  /jobs/a.yaml",
            "b     stopped  0        2026-11-29T08:00:00+00:00  /jobs/b.yaml"]
        r = runner.invoke(app, ["jobs", "stop", "b", "--folder", str(tmp_path)])
        assert (r.exit_code, r.stderr) == (1, "etl jobs: stop b: job 'b' is not running (stopped)\n")
    finally:
        control.close()


SINK_TO = """\
name: {name}
sources:
  - {{id: events, type: generator, count: 10, fields: {{id: {{sequence: 0}}}}}}
sinks:
  - {{id: out, type: file, input: events, path: {path}, format: jsonl}}
checkpoint: {ckpt}
"""


def test_a_file_writing_a_running_jobs_output_is_refused_at_its_sink(tmp_path):
    """E330 across files, as `etl validate a b` reports it: the second file's sink, not started; the others run."""
    from etl.commands.serve import _checker

    for name, path, ckpt in (("a", "out/shared", "state/a"), ("b", "out/shared", "state/b"),
                             ("c", "out/c", "state/a")):
        (tmp_path / f"{name}.yaml").write_text(SINK_TO.format(name=name, path=path, ckpt=ckpt))
    said: list[str] = []
    js = JobSet(None, JobsOptions(files=lambda: job_files(tmp_path), check=_checker({}, (), None), echo=said.append,
                                  needed=lambda g: ()))
    started: list[str] = []

    def start(j: Job) -> Job:  # no session: the job counts as running
        js.jobs[j.name], j.state = j, "running"
        started.append(j.name)
        return j

    js._start = start  # type: ignore[method-assign]
    js._pooled = lambda name: False  # type: ignore[method-assign]
    js.sync()
    a, b, c = (str(tmp_path / f"{n}.yaml") for n in "abc")
    assert started == ["a"]
    assert said == [
        f"etl serve: a: {a}: starting",
        f"{b}:5:5: E330 sink 'out' writes the same output as sink 'out' of {a}\n"
        "    hint: give each sink its own path, table, topic or index",
        f"etl serve: {b}: not started",
        f"{c}:6:13: E331 checkpoint folder {tmp_path / 'state' / 'a'} is also used by pipeline 'a' ({a})\n"
        "    hint: give each pipeline its own `checkpoint` (or a distinct `name`)",
        f"etl serve: {c}: not started"]
    assert [(j["file"], j["state"], j["reason"]) for j in js.listing()] == [
        (a, "running", ""), (b, "invalid", said[1]), (c, "invalid", said[3])]
    js.jobs["a"].state = "stopped"  # a stopped job's output is free: a changed b starts
    (tmp_path / "b.yaml").write_text(SINK_TO.format(name="b", path="out/shared", ckpt="state/b") + "# v2\n")
    js.sync()
    assert started == ["a", "b"]



class FakeRun:
    """A PipelineRun without Spark, by its file's generator `count`: 10 runs until stopped; 20 fails as Spark's state
    schema check fails a restarted query at its first batch; 30 fails there on another error; 40 fails on the
    schema check after writing a batch; 50 fails to start."""

    def __init__(self, plan, spark, opts):
        import threading

        self.plan, self.graph, self.opts, self.cancelled = plan, plan.graph, opts, []
        self.count = plan.graph.nodes["events"].spec.count
        self.progress = FakeProgress()
        self._stop = threading.Event()

    def start(self):
        if self.count == 50:
            raise RuntimeError("a connector's class is missing")
        if self.count in (10, 40):
            self.progress.latest = {"events": SimpleNamespace(batch=0)}

    def wait(self):
        from etl.runtime.errors import RunFailed

        if self.count in (20, 40):
            raise RunFailed("[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema does not match existing "
                            "state value schema.")
        if self.count == 30:
            raise RunFailed("[SOMETHING_ELSE] a sink's server went away")
        self._stop.wait(10)

    def request_stop(self):
        self._stop.set()

    def close(self):
        pass


class FakeProgress:
    def __init__(self):
        self.latest = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_new_version_spark_refuses_at_its_first_batch_rolls_back_to_the_running_one(tmp_path, monkeypatch):
    """A valid change whose state does not fit the checkpoint (Spark's schema check fails its first batch, no batch
    written): the previous version starts again on the checkpoint and the refusal is listed; another failure, or one
    after a batch was written, fails the job as before."""
    import etl.runtime.jobs as jobs_module
    from etl.commands.serve import _checker

    monkeypatch.setattr(jobs_module, "PipelineRun", FakeRun)
    folder = tmp_path / "jobs"
    folder.mkdir()
    f = folder / "st.yaml"
    said: list[str] = []
    js = JobSet(None, JobsOptions(files=lambda: job_files(folder), check=_checker({}, (), None), echo=said.append,
                                  needed=lambda g: ()))
    js.spark = SimpleNamespace(sparkContext=SimpleNamespace(setLocalProperty=lambda k, v: None))
    js._pooled = lambda name: False  # type: ignore[method-assign]

    def change(count: int) -> Job:
        """The file with this `count`, synced; the job once its version's thread ended or it runs."""
        f.write_text(SINK_TO.format(name="st", path="out", ckpt="state").replace("count: 10", f"count: {count}"))
        js.sync()
        job = js.jobs["st"]
        job.ended.wait(5) if count != 10 else None
        return job

    first = change(10)
    assert first.state == "running"
    refused = change(20)  # the running version stopped, the new one refused by Spark at its first batch
    assert (refused.state, refused.previous) == ("failed", first.plan)
    js.sync()  # the previous version starts again
    again = js.jobs["st"]
    assert (again.state, again.plan) == ("running", first.plan)
    line = (f"{f}:1:1: E401 pipeline 'st': [STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema does "
            "not match existing state value schema.")
    assert said[-1] == (f"etl serve: st: the new version of {f} is refused at its first batch ({line}); the "
                        "previous version starts again")
    assert js.listing()[0]["reason"] == \
        f"its file's change is refused: {f}: the new version is refused at its first batch: {line}"
    for count, why in ((30, "[SOMETHING_ELSE] a sink's server went away"), (40, line.split("'st': ")[1])):
        assert change(10).state == "running"
        failed = change(count)  # another error, or the schema check's after a batch was written: no roll back
        assert failed.previous is not None
        js.sync()
        assert (js.jobs["st"] is failed, failed.state, failed.reason) == (True, "failed", f"{f}:1:1: E401 pipeline "
                                                                                         f"'st': {why}")
    # a new version that cannot even start rolls back the same way, at once
    running = change(10)
    assert running.state == "running"
    change(50)
    again = js.jobs["st"]
    assert (again.state, again.plan) == ("running", running.plan)
    line = f"{f}:1:1: E401 pipeline 'st': a connector's class is missing"
    assert said[-1] == f"etl serve: st: the new version of {f} is refused ({line}); the previous version starts again"
    assert js.listing()[0]["reason"] == f"its file's change is refused: {f}: the new version is refused: {line}"
    js.stop_all("test")
