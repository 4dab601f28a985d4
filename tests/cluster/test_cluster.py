"""etl on a real Spark standalone cluster (tests/servers/spark_cluster.py: a master and two one-core workers on
127.0.0.1): example pipelines give the output they give on local[2], through `etl run --master spark://...` (two of
them) and through spark-submit (the third); a worker killed between a partition's commit and the driver's ends with exactly the
input's rows; no console output holds a traceback.

The workers run this interpreter without this process's PYTHONPATH: they import etl from the driver's checkout
because etl's session puts it on the executors' PYTHONPATH (etl/runtime/session.py, ship_python_path)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.servers, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {  # pipeline -> its file sink's folder (relative to the copy's root)
    "quickstart": "out/quickstart/status_counts",  # grok, filter, window
    "example_filter": "out/examples/filter",
    "example_lookup": "out/examples/lookup",
}
SUBMITTED = "example_filter"  # run through spark-submit (test_spark_submit_of_a_pipeline), the others by `etl run`
CONF = ["--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.executor.memory=768m",
        "--conf", "spark.ui.showConsoleProgress=false"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["PYSPARK_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.pop("PYSPARK_GATEWAY_PORT", None)
    return env


def _copy(tmp: Path, name: str) -> Path:
    root = tmp / name
    shutil.copytree(ROOT / "pipelines", root / "pipelines", ignore=shutil.ignore_patterns(".etl", "__pycache__"))
    return root


def _rows(folder: Path) -> list[str]:
    return sorted(json.dumps(json.loads(line), sort_keys=True)
                  for f in folder.glob("part-*.jsonl") for line in f.read_text().splitlines() if line)


def _no_traceback(*texts: str) -> None:
    for t in texts:
        assert "Traceback" not in t and "BrokenPipeError" not in t, t[-3000:]


def _etl_run(root: Path, pipeline: str, master: str, *extra: str, timeout: float = 400) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "etl", "run", f"pipelines/{pipeline}.yaml", "--once", "--master", master,
           "--progress", "plain", *CONF, *extra]
    p = subprocess.run(cmd, cwd=root, env=_env(), capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    _no_traceback(p.stdout, p.stderr)
    return p


def _run_local(spark, root: Path, pipeline: str) -> None:
    """The reference: the pipeline (`name` or `sql/name.sql` under pipelines/) run --once in this process's
    local[2] session (the test session: 2 shuffle partitions, as CONF gives the cluster), with the checkpoint
    `etl run` would use."""
    from etl.check import check_file
    from etl.runtime.runner import PipelineRun, RunOptions

    file = root / "pipelines" / (pipeline if pipeline.endswith(".sql") else f"{pipeline}.yaml")
    checked = check_file(file, programs=True)
    assert checked.plan is not None, "\n".join(d.render() for d in checked.report.sorted())
    run = PipelineRun(checked.plan, spark, RunOptions(once=True, checkpoint=str(root / "ckpt"), progress="none"))
    run.start()
    run.wait()
    assert run.failure is None, run.failure


def test_examples_give_the_same_output_as_on_local(spark_cluster, spark, tmp_path):
    for pipeline, out in EXAMPLES.items():
        if pipeline == SUBMITTED:  # one application less (a driver and two executors: about 17 CPU-s)
            continue
        local, cluster = _copy(tmp_path, f"local-{pipeline}"), _copy(tmp_path, f"cluster-{pipeline}")
        _run_local(spark, local, pipeline)
        p = _etl_run(cluster, pipeline, spark_cluster.master_url, *(("--ui",) if pipeline == "quickstart" else ()))
        assert ("Spark UI http://" in p.stderr) == (pipeline == "quickstart")  # off unless --ui and f"(master {spark_cluster.master_url})" in p.stderr
        want = _rows(local / out)
        assert want, f"{pipeline}: no rows on local[2]"
        assert _rows(cluster / out) == want, pipeline
    # the rows were written on the executors by Spark's writer, and every batch was published
    assert not list((cluster / out).glob("_staging")) and list((cluster / out).glob("_etl_batches/*"))


def test_spark_submit_of_a_pipeline(spark_cluster, spark, tmp_path):
    import pyspark

    root = _copy(tmp_path, "submit")
    submit = Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"
    cmd = [str(submit), "--master", spark_cluster.master_url, *CONF,
           "--conf", f"spark.pyspark.python={sys.executable}", "--conf", f"spark.pyspark.driver.python={sys.executable}",
           str(ROOT / "etl" / "__main__.py"), "run", f"pipelines/{SUBMITTED}.yaml", "--once", "--progress", "plain"]
    p = subprocess.run(cmd, cwd=root, env=_env(), capture_output=True, text=True, timeout=400)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    _no_traceback(p.stdout, p.stderr)
    ref = _copy(tmp_path, "submit-local")
    _run_local(spark, ref, SUBMITTED)
    assert _rows(root / EXAMPLES[SUBMITTED]) == _rows(ref / EXAMPLES[SUBMITTED]) != []


def test_a_worker_killed_while_the_file_sink_writes(spark_cluster, tmp_path):
    """A worker dies while Spark's writer writes the batch's parts into the staging folder: Spark runs the lost
    tasks again on the other worker, its output committer keeps only the committed attempts, and the driver
    publishes the batch; the output is exactly the input."""
    data = tmp_path / "in"
    data.mkdir()
    rows = [{"id": i, "name": f"n{i}"} for i in range(20000)]
    for k in range(2):
        (data / f"in-{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[k::2]))
    (tmp_path / "p.yaml").write_text(
        "name: killed\n"
        f"sources: [{{id: src, type: file, path: {data}, format: jsonl, schema: {{id: bigint, name: string}}}}]\n"
        f"sinks: [{{id: out, type: file, input: src, path: {tmp_path / 'out'}}}]\n"
        f"checkpoint: {tmp_path / 'ckpt'}\n")
    cmd = [sys.executable, "-m", "etl", "run", str(tmp_path / "p.yaml"), "--once", "--master",
           spark_cluster.master_url, "--progress", "plain", *CONF,
           "--conf", "spark.sql.files.maxPartitionBytes=100000", "--conf", "spark.sql.leafNodeDefaultParallelism=2"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        attempts = tmp_path / "out" / "_staging"
        while not list(attempts.glob("*/_temporary/0/_temporary/attempt_*")) and time.monotonic() < deadline \
                and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before its write began"
        spark_cluster.kill_worker(0)
        out, err = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
        spark_cluster.ensure_running()
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    _no_traceback(out, err)
    got = [json.loads(x) for f in (tmp_path / "out").glob("part-*.jsonl") for x in f.read_text().splitlines()]
    assert sorted(r["id"] for r in got) == list(range(20000))


def test_python_functions_run_on_the_cluster(spark_cluster, spark, tmp_path):
    """functions.sql's scalar, table and aggregate functions (order_functions.py, shipped with the plan: the workers
    have no copy of the pipeline's folder on their path) give on the cluster what they give on local[2]."""
    outs = ("out/examples/sql/masked", "out/examples/sql/id_parts", "out/examples/sql/spreads")
    local, cluster = _copy(tmp_path, "local"), _copy(tmp_path, "cluster")
    _run_local(spark, local, "sql/functions.sql")
    cmd = [sys.executable, "-m", "etl", "run", "pipelines/sql/functions.sql", "--once", "--master",
           spark_cluster.master_url, "--progress", "plain", *CONF]
    p = subprocess.run(cmd, cwd=cluster, env=_env(), capture_output=True, text=True, timeout=400)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    _no_traceback(p.stdout, p.stderr)
    want = {o: _rows(local / o) for o in outs}
    assert all(want.values()), {o: len(v) for o, v in want.items()}
    assert {o: _rows(cluster / o) for o in outs} == want
    orders = [json.loads(x) for x in (ROOT / "pipelines" / "data" / "orders.jsonl").read_text().splitlines() if x]
    assert sorted(json.loads(r)["who"] for r in want[outs[0]]) == sorted(
        o["customer"][:1] + "*" * (len(o["customer"]) - 1) for o in orders)
