"""`etl run` as a user runs it: the quickstart with --once (ends by itself), JSON progress, and a
continuous run stopped by SIGTERM that finishes its batch, exits 0 and resumes on the next run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.spark.test_rules_jvm import EVIL, SLOW  # a pattern java.util.regex backtracks on, and its value

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def etl(*args: str, cwd: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "etl", *args, "--conf", "spark.ui.enabled=false"], cwd=cwd,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_quickstart_once_ends_by_itself_with_json_progress(tmp_path):
    (tmp_path / "pipelines" / "data").mkdir(parents=True)
    shutil.copy(ROOT / "pipelines" / "quickstart.yaml", tmp_path / "pipelines")
    shutil.copy(ROOT / "pipelines" / "data" / "access.log", tmp_path / "pipelines" / "data")
    loaded = tmp_path / "classes.log"  # which classes the driver JVM loaded, and from where
    p = etl("run", "pipelines/quickstart.yaml", "--once", "--progress", "json", "--conf",
            f"spark.driver.extraJavaOptions=-Xlog:class+load=info:file={loaded}", cwd=tmp_path)
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err[-3000:]
    # Spark's classes come from the class archive tests/conftest.py had made (etl.runtime.class_archive)
    session = [x for x in loaded.read_text().splitlines() if " org.apache.spark.sql.classic.SparkSession " in x]
    assert session and session[0].endswith("source: shared objects file (top)"), session
    progress = [json.loads(x) for x in err.splitlines() if x.startswith("{")]
    assert {r["query"] for r in progress} == {"access", "per_minute"}  # grok's dead letters and the rows beyond the window's event-time horizon; the window
    assert sum(r["input_rows"] for r in progress if r["query"] == "per_minute") == 400
    assert sum(r["written"].get("counts", 0) for r in progress) > 0
    assert all({"batch", "input_rows_per_s", "dead_letters", "watermark", "state_rows", "duration_ms"} <= r.keys()
               for r in progress)
    rows = [json.loads(x) for f in (tmp_path / "out" / "quickstart" / "status_counts").glob("part-*.jsonl")
            for x in f.read_text().splitlines()]
    assert rows and {"status", "window_start", "window_end", "requests"} == set(rows[0])
    assert "status" in out and "requests" in out  # the console sink's table
    assert (tmp_path / ".etl" / "quickstart" / "checkpoint").is_dir()
    # run again: nothing new to read, and the summary says why
    p = etl("run", "pipelines/quickstart.yaml", "--once", "--progress", "plain", cwd=tmp_path)
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err[-3000:]
    checkpoint = tmp_path / ".etl" / "quickstart" / "checkpoint"
    from importlib.metadata import version

    installed = subprocess.run([sys.executable, "-m", "etl", "--version"], cwd=tmp_path, capture_output=True,
                               text=True, timeout=60).stdout.split()  # this process's cwd may hold other metadata
    assert installed[0] == "etl-streams" and err.splitlines()[0] == (
        f"etl run: quickstart: etl-streams {installed[1]} on Spark {version('pyspark')} (master local[*])")
    assert err.splitlines()[-1] == (f"etl run: quickstart: no new input since the last run (its checkpoint {checkpoint} "
                                    "remembers what was read: remove it to read everything again)")


def test_the_run_log_holds_what_the_jvm_writes_until_it_has_exited(tmp_path):
    # etl run stops its JVM before it closes the run's log: the JVM's shutdown hooks log after the session stopped
    # (Spark 4.3: at DEBUG), before into a FIFO already gone: lost; the log is read through the redaction to the end
    (tmp_path / "input").mkdir()
    (tmp_path / "input" / "a.jsonl").write_text('{"id": 1}\n')
    (tmp_path / "p.yaml").write_text(textwrap.dedent("""\
        name: shutdown-log
        sources:
          - {id: src, type: file, path: input, format: jsonl, schema: {id: bigint}}
        sinks:
          - {id: out, type: file, input: src, path: output}
        checkpoint: state
    """))
    p = etl("run", "p.yaml", "--once", "--quiet", cwd=tmp_path, env={**os.environ, "ETL_LOG_LEVEL": "debug"})
    _, err = p.communicate(timeout=600)
    assert p.returncode == 0, err[-3000:]
    assert ids(tmp_path / "output") == [1]
    lines = [x for f in (tmp_path / "logs").glob("etl-run-*.log") for x in f.read_text().splitlines()]
    stopped = [i for i, x in enumerate(lines) if "SparkContext: Successfully stopped SparkContext" in x]
    hooks = [i for i, x in enumerate(lines) if "ShutdownHookManager: Shutdown hook called" in x]
    assert len(stopped) == 1 and len(hooks) == 1 and stopped[0] < hooks[0], lines[-10:]
    assert any("ShutdownHookManager: Deleting directory" in x for x in lines[hooks[0]:]), lines[-10:]
    assert not list((tmp_path / "logs").glob(".*.pipe"))


PIPELINE = """\
    name: sigterm-test
    sources:
      - {id: src, type: file, path: input, format: jsonl, schema: {id: bigint}, max_files_per_trigger: 1}
    transforms:
      - {id: slow, type: derive, input: src, columns: {pause: "reflect('java.lang.Thread', 'sleep', cast(PAUSE AS bigint))"}}
    sinks:
      - {id: out, type: file, input: slow, path: output}
    checkpoint: state
    trigger: {interval: 200ms}
"""


def write_file(folder: Path, n: int) -> None:
    tmp = folder / f".f{n}.tmp"
    tmp.write_text("".join(json.dumps({"id": n * 10 + i}) + "\n" for i in range(10)))
    tmp.rename(folder / f"f{n:03d}.jsonl")


def ids(folder: Path) -> list[int]:
    return sorted(json.loads(x)["id"] for f in folder.glob("part-*.jsonl") for x in f.read_text().splitlines())


def test_sigterm_finishes_the_batch_exits_0_and_the_next_run_resumes(tmp_path):
    (tmp_path / "input").mkdir()
    # 200 ms a row (2 s a batch of one file): the SIGTERM comes while a batch runs
    (tmp_path / "p.yaml").write_text(textwrap.dedent(PIPELINE).replace("PAUSE", "200"))
    for n in range(3):
        write_file(tmp_path / "input", n)
    p = etl("run", "p.yaml", "--progress", "plain", cwd=tmp_path)
    out = tmp_path / "output"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (out.exists() and list(out.glob("part-*"))):
        assert p.poll() is None, p.communicate()[1][-3000:]
        time.sleep(0.1)
    for n in range(3, 8):  # more data arrives while it runs
        write_file(tmp_path / "input", n)
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err[-3000:]
    assert "finishing the current batch" in err
    first = ids(out)
    assert first and len(first) == len(set(first)) and len(first) % 10 == 0  # whole files only
    assert not list(out.glob(".*.tmp"))
    # the next run, on the same checkpoint, needs no pause (the same plan: a stateless derive's expression may
    # change between runs): the 5 or so files left cost no 10 s of sleeping
    (tmp_path / "p.yaml").write_text(textwrap.dedent(PIPELINE).replace("PAUSE", "0"))
    p2 = etl("run", "p.yaml", "--once", "--quiet", cwd=tmp_path)
    _, err2 = p2.communicate(timeout=300)
    assert p2.returncode == 0, err2[-3000:]
    assert ids(out) == list(range(80))


BUDGET_PIPELINE = """\
    name: budget
    sources:
      - {id: src, type: file, path: input, format: jsonl, schema: {cmd: string, code: bigint}}
    transforms:
      - {id: kept, type: filter, input: src, rules: [{id: slow, when: {field: cmd, regex: '{SLOW}'}},
                                                      {id: curl, when: {field: cmd, regex: '^curl'}}]}
    sinks:
      - {id: out, type: file, input: kept, path: output}
    checkpoint: state
""".replace("{SLOW}", SLOW)


@pytest.mark.parametrize("log_level", ["", "warn"])
def test_a_rule_set_past_its_step_budget_is_one_warning_not_a_lost_job(tmp_path, log_level):
    # Spark logs the stopped task as a lost job (ERROR Executor, WARN Lost task, ERROR aborting job) although
    # etl finishes the batch on Hyperscan: by default only etl's warning shows; ETL_LOG_LEVEL brings Spark's back
    (tmp_path / "input").mkdir()
    events = [{"cmd": "curl x", "code": 200}, {"cmd": EVIL, "code": 201},
              {"cmd": "run xaay", "code": 302}]
    (tmp_path / "input" / "a.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (tmp_path / "pipeline.yaml").write_text(textwrap.dedent(BUDGET_PIPELINE))
    env = {k: v for k, v in os.environ.items() if k not in ("ETL_LOG_LEVEL", "ETL_RULES_JVM")}
    if log_level:
        env["ETL_LOG_LEVEL"] = log_level
    p = etl("run", "pipeline.yaml", "--once", "--quiet", cwd=tmp_path, env=env)
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err[-3000:]
    got = sorted(json.loads(x)["code"] for f in (tmp_path / "output").glob("part-*.jsonl")
                 for x in f.read_text().splitlines())
    assert got == [200, 302]
    moved = [x for x in err.splitlines() if "leaves the JVM for the Python path" in x]
    assert len(moved) == 1 and f"pattern {SLOW!r}" in moved[0], err[-3000:]
    spark_lines = [x for x in err.splitlines() if " Executor: " in x or " TaskSetManager: " in x]
    if log_level:
        assert [x.split(" ")[1:3] for x in spark_lines] == [
            ["ERROR", "Executor:"], ["WARN", "TaskSetManager:"], ["ERROR", "TaskSetManager:"]], err[-3000:]
        assert "Exception in task" in spark_lines[0] and "aborting job" in spark_lines[2]
        assert "Lost task" in spark_lines[1] and "etl-rule-budget[" in spark_lines[1]
    else:
        assert spark_lines == [] and "ERROR" not in err, err[-3000:]


HUNG_FUNCTIONS = """\
import os
import sys
import time


def hang(s: str) -> str:
    if os.environ.get("API_TOKEN"):  # a Python worker's stderr goes to the run's log (through the JVM's)
        sys.stderr.write(f"worker sees {os.environ['API_TOKEN']}\\n")
        sys.stderr.flush()
    open(os.environ["HANG_MARK"], "w").close()
    time.sleep(3600)
    return s
"""

HUNG_PIPELINE = """\
    name: hung
    functions:
      - {name: hang, callable: "fns:hang"}
    sources:
      - {id: src, type: file, path: input, format: jsonl, schema: {name: string}}
    transforms:
      - {id: d, type: derive, input: src, columns: {h: "hang(name)"}}
    sinks:
      - {id: out, type: file, input: d, path: output}
    checkpoint: state
"""


def test_sigterm_ends_a_hung_function_call_after_the_stop_grace(tmp_path):
    # a call that never returns (its own budget: an hour) holds the batch: SIGTERM gives it ETL_STOP_GRACE_S,
    # then cancels its jobs (the Python worker is ended with them); the batch is not committed
    (tmp_path / "input").mkdir()
    (tmp_path / "input" / "a.jsonl").write_text('{"name": "a"}\n{"name": "b"}\n')
    (tmp_path / "fns.py").write_text(HUNG_FUNCTIONS)
    (tmp_path / "p.yaml").write_text(textwrap.dedent(HUNG_PIPELINE))
    mark = tmp_path / "called"
    env = {**os.environ, "HANG_MARK": str(mark), "ETL_FUNCTION_TIMEOUT_S": "3600", "ETL_STOP_GRACE_S": "1"}
    p = etl("run", "p.yaml", "--progress", "plain", cwd=tmp_path, env=env)
    deadline = time.monotonic() + 300
    while not mark.exists():
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()[1][-3000:]
        time.sleep(0.1)
    t = time.monotonic()
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    elapsed = time.monotonic() - t
    assert p.returncode == 1, err[-3000:]
    assert elapsed < 10, elapsed  # measured: 3.7 s (1 s of grace, the cancellation, Spark's stop)
    lines = err.splitlines()
    line = ("fns.py:6:1: E414 query 'src': SIGTERM: batch 0 did not finish within 1 s (ETL_STOP_GRACE_S): a call of "
            "python function 'hang' was running, its jobs were cancelled and it is not committed")
    assert line in lines, err[-3000:]
    e414 = lines.index(line)
    assert lines[e414 + 1].startswith("    hint: run again: it processes batch 0 again (the run resumes from its "
                                      "checkpoint: nothing committed is lost or written twice); full stack in logs/")
    assert "Traceback" not in err
    assert not list((tmp_path / "output").glob("part-*"))  # nothing published
    assert not (tmp_path / "state" / "src" / "commits" / "0").exists()  # Spark's commit log: batch 0 not done


def test_a_run_killed_by_sigkill_leaves_no_secret_in_its_log(tmp_path):
    # the run's log is redacted as it is written (etl.runtime.runlog): what a Python worker printed with an env()
    # value is in it, masked, while the run hangs; SIGKILL leaves no chance to rewrite it afterwards
    token = "tok-5f2c9a71e3"
    (tmp_path / "input").mkdir()
    (tmp_path / "input" / "a.jsonl").write_text('{"name": "a"}\n')
    (tmp_path / "fns.py").write_text(HUNG_FUNCTIONS)
    (tmp_path / "p.yaml").write_text(textwrap.dedent(HUNG_PIPELINE).replace(
        'columns: {h: "hang(name)"}', """columns: {h: "hang(name)", t: "'{{ env('API_TOKEN') }}'"}"""))
    mark = tmp_path / "called"
    env = {**os.environ, "HANG_MARK": str(mark), "API_TOKEN": token, "ETL_FUNCTION_TIMEOUT_S": "3600"}
    p = etl("run", "p.yaml", "--progress", "plain", cwd=tmp_path, env=env, start_new_session=True)
    deadline = time.monotonic() + 300
    while not mark.exists():
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()[1][-3000:]
        time.sleep(0.1)
    logs = tmp_path / "logs"
    said = []
    while not said and time.monotonic() < deadline:
        said = [ln for f in logs.glob("etl-run-*.log") for ln in f.read_text().splitlines() if "worker sees" in ln]
        time.sleep(0.1)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    # what a supervisor does next (systemd kills the unit's cgroup): the JVM and its Python workers, orphaned, hold
    # this test's pipes until they notice the end of their stdin, which a loaded machine can delay past a minute
    os.killpg(p.pid, signal.SIGKILL)
    p.communicate(timeout=60)
    assert said == ["worker sees ***"], said
    assert [f.name for f in logs.iterdir() if f.is_file() and token.encode() in f.read_bytes()] == []  # (not the FIFO)
