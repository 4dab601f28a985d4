"""etl.compile.bounds through RowCall (etl.compile.functions), without Spark: a pipeline's Python function call is
bounded in time (its module's import too), memory and value, and a call that ended its worker is answered from the
dead worker's journal on the retry."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from etl.compile import bounds
from etl.compile.functions import Limits, RowCall, Shipped

SOURCE = textwrap.dedent('''\
    import os

    def f(s):
        if s == "hang":
            while True:
                pass
        if s == "crash":
            os._exit(3)
        if s == "surrogate":
            return "ok\\udc80"
        if s == "big":
            return "é" * 600
        return s.upper()
''')


def types(ddl: str):
    from pyspark.sql import types as T

    if ddl == "string":
        return T.StringType()
    kinds = {"string": T.StringType(), "int": T.IntegerType()}
    return T.StructType([T.StructField(n, kinds[t]) for n, t in (c.split(" ") for c in ddl.split(", "))])


def call(source: str = SOURCE, **limits) -> RowCall:
    return RowCall(Shipped("udfs:f", source, "udfs.py"), False, types("string"), "f", Limits(**limits))


@pytest.fixture
def in_a_task(monkeypatch):
    """A Spark task's worker (pyspark's TaskContext set): the time budget applies; its timer stopped after."""
    from pyspark import TaskContext

    monkeypatch.setattr(TaskContext, "_taskContext", FakeTask(1, None, streaming=False))
    monkeypatch.setitem(bounds._STATE, "memory", 0)  # never limit this process's memory (a JVM started later...)
    bounds._STATE.pop("timer", None)  # a call outside a task before (None: no timer) is not this task's
    yield
    bounds.stop_timer()


def test_a_call_past_its_budget_is_the_rows_error_and_the_next_call_runs(in_a_task) -> None:
    c = call(timeout_s=0.3)
    t = time.monotonic()
    assert c("hang") == (None, "did not return within 0.3 s (ETL_FUNCTION_TIMEOUT_S)")
    assert time.monotonic() - t < 2
    assert c("next") == ("NEXT", None)


def test_a_module_that_loops_at_import_is_every_rows_error_once(in_a_task) -> None:
    c = call("while True:\n    pass\n\ndef f(s):\n    return s\n", timeout_s=0.3)
    want = (None, "importing udfs:f did not return within 0.3 s (ETL_FUNCTION_TIMEOUT_S)")
    assert c("a") == want
    t = time.monotonic()
    assert c("b") == want  # not imported again
    assert time.monotonic() - t < 0.1


def test_values_no_sink_can_take() -> None:
    c = call(max_bytes=1000)
    assert c("surrogate") == (None, "returned a str that is not valid Unicode (a lone surrogate U+DC80 at index 2): "
                                    "UTF-8 cannot encode it")
    assert c("big") == (None, "returned a str of 1200 bytes, over the maximum record size of 1000 bytes "
                              "(ETL_MAX_RECORD_MB)")
    assert c("x" * 999) == ("X" * 999, None)


def test_a_table_functions_column_too() -> None:
    src = "def f(s):\n    yield (s, 1)\n    yield ('\\ud800', 2)\n"
    c = RowCall(Shipped("udfs:f", src, "udfs.py"), True, types("w string, n int"), "f", Limits())
    assert c("a") == (None, "row 2: column 'w' returned a str that is not valid Unicode (a lone surrogate U+D800 "
                            "at index 0): UTF-8 cannot encode it")


MEMORY = textwrap.dedent('''\
    import sys, tempfile
    tempfile.tempdir = sys.argv[1]
    sys.path.insert(0, sys.argv[2])
    from test_function_bounds import FakeTask
    from pyspark import TaskContext
    TaskContext._taskContext = FakeTask(1)  # a Spark task's worker: the limit applies
    from etl.compile.functions import Limits, RowCall, Shipped
    from pyspark.sql.types import StringType
    src = "def f(n):\\n    return str(len(bytearray(n)))\\n"
    c = RowCall(Shipped("udfs:f", src, "udfs.py"), False, StringType(), "f", Limits(memory_mb=256))
    print(c(1024 * 1024 * 1024))
    print(c(10 * 1024 * 1024))
''')


def test_a_call_over_the_workers_memory_is_a_memory_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", MEMORY, str(tmp_path), str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines() == [
        "(None, 'MemoryError (more memory than its worker may have: ETL_FUNCTION_MEMORY_MB=256)')",
        "('10485760', None)"], done.stderr


class FakeTask:
    """pyspark's TaskContext as a streaming batch's task sees it."""

    def __init__(self, attempt: int, crashed: str | None = None, streaming: bool = True):
        self.attempt, self.crashed, self.streaming = attempt, crashed, streaming

    def taskAttemptId(self) -> int:  # noqa: N802 - pyspark's name
        return self.attempt

    def partitionId(self) -> int:  # noqa: N802
        return 0

    def getLocalProperty(self, key: str) -> str | None:  # noqa: N802
        if not self.streaming:
            return None
        return {"sql.streaming.queryId": "q-1", "streaming.sql.batchId": "7", bounds.CRASHED_TASKS: self.crashed}[key]


CRASH = textwrap.dedent('''\
    import sys, tempfile
    tempfile.tempdir = sys.argv[1]
    sys.path.insert(0, sys.argv[2])
    from test_function_bounds import FakeTask, call
    from etl.compile import bounds
    c = call()
    c("one")
    bounds.journal("f").context = type("Ctx", (), {"get": staticmethod(lambda: FakeTask(1))})
    for s in ("a", "b", "crash", "c"):
        print(c(s), flush=True)
''')


def test_a_call_that_ended_its_worker_is_answered_from_its_journal(tmp_path: Path, monkeypatch) -> None:
    done = subprocess.run([sys.executable, "-c", CRASH, str(tmp_path), str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3 and done.stdout.splitlines() == ["('A', None)", "('B', None)"], done.stderr
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(bounds, "_STATE", {})
    # what the driver reads after a stop cancelled a batch: which function's call was running in it
    assert (bounds.running_calls("q-1", 7), bounds.running_calls("q-1", 8), bounds.running_calls("q-2", 7)) == (
        ("f",), (), ())
    c = call()
    c("warm")
    # the retry of another task attempt than the one that crashed (Spark killed that worker): nothing to answer
    bounds.journal("f").context = type("Ctx", (), {"get": staticmethod(lambda: FakeTask(2, "5"))})
    assert [c(s) for s in ("a", "b", "x")] == [("A", None), ("B", None), ("X", None)]
    bounds.journal("f").context = type("Ctx", (), {"get": staticmethod(lambda: FakeTask(3, "1,5"))})
    assert [c(s) for s in ("a", "b", "crash", "c")] == [
        ("A", None), ("B", None),
        (None, "its Python worker ended during this call (os._exit, a crash or a signal such as the OOM killer's); "
               "the call was not made again"),
        ("C", None)]
    # another batch of the query is not concerned
    bounds.journal("f").context = type("Ctx", (), {"get": staticmethod(lambda: OtherBatch(4, "1"))})
    assert [c(s) for s in ("a", "b", "x")] == [("A", None), ("B", None), ("X", None)]


class OtherBatch(FakeTask):
    def getLocalProperty(self, key: str) -> str | None:  # noqa: N802
        return {"sql.streaming.queryId": "q-1", "streaming.sql.batchId": "8", bounds.CRASHED_TASKS: self.crashed}[key]


LOST = ("Job aborted due to stage failure: Task 3 in stage 1.0 failed 1 times, most recent failure: Lost task 3.0 in "
        "stage 1.0 (TID 7) (localhost executor driver): org.apache.spark.SparkException: Python worker exited "
        "unexpectedly (crashed). Consider setting ...")


@pytest.mark.parametrize(("text", "tids"), [
    (LOST, {7}),
    (LOST.replace("TID 7", "TID 12").replace("Python worker exited unexpectedly", "[PYTHON_EXCEPTION] x"), set())])
def test_the_task_attempts_whose_worker_crashed(text: str, tids: set[int]) -> None:
    try:
        try:
            raise RuntimeError(text)
        except RuntimeError as inner:
            raise ValueError("batch failed") from inner
    except ValueError as e:
        assert bounds.crashed_tasks(e) == tids


STOPPED = """\
name: hung
functions:
  - {name: Hang, callable: "fns:hang"}
sources:
  - {id: src, type: file, path: input, format: jsonl, schema: {name: string}}
transforms:
  - {id: d, type: derive, input: src, columns: {h: "Hang(name)"}}
sinks:
  - {id: out, type: file, input: d, path: output}
"""


def test_a_batch_a_stop_cancelled_is_one_line_at_the_function_whose_call_ran(tmp_path: Path, monkeypatch) -> None:
    from etl.check import check_file
    from etl.runtime.failure import stop_cancelled
    from etl.runtime.runner import Cancelled

    (tmp_path / "fns.py").write_text("import time\n\n\ndef hang(s: str) -> str:\n    time.sleep(3600)\n    return s\n")
    (tmp_path / "p.yaml").write_text(STOPPED)
    monkeypatch.chdir(tmp_path)
    graph = check_file("p.yaml").graph
    assert stop_cancelled(graph, Cancelled("src", "src", 4, ("Hang",)), 5, "SIGTERM").diagnostic().render() == (
        "fns.py:4:1: E414 query 'src': SIGTERM: batch 4 did not finish within 5 s (ETL_STOP_GRACE_S): a call of "
        "python function 'Hang' was running, its jobs were cancelled and it is not committed\n"
        "    hint: run again: it processes batch 4 again (the run resumes from its checkpoint: nothing committed is "
        "lost or written twice)")
    # no journal says (a cluster's executors): the query's source
    assert stop_cancelled(graph, Cancelled("src", "src", 4, ()), 0.5, "SIGINT").diagnostic().render().splitlines()[0] == (
        "p.yaml:5:5: E414 query 'src': SIGINT: batch 4 did not finish within 0.5 s (ETL_STOP_GRACE_S): its jobs were "
        "cancelled and it is not committed")


GROUPED = """\
name: grouped
functions:
  - {name: Spread, callable: "fns:spread"}
sources:
  - {id: src, type: file, path: input, format: jsonl, schema: {g: string, v: double}}
transforms:
  - {id: w, type: aggregate, input: src, group_by: [g], aggregates: [{fn: Spread, field: v, as: s}]}
sinks:
  - {id: out, type: file, input: w, path: output}
"""


def test_a_bound_hit_by_a_batch_group_by_s_aggregate_is_one_line_at_its_def(tmp_path: Path, monkeypatch) -> None:
    # the pandas aggregate fails its task (etl.compile.functions._series: no row to make a dead letter of); the
    # query's failure, as Spark words it, is one line at the function's def, not E401 at the pipeline's first line
    from etl.check import check_file
    from etl.runtime.failure import query_failure

    (tmp_path / "fns.py").write_text("import pandas as pd\n\n\ndef spread(v: pd.Series) -> float:\n"
                                     "    return float(v.max() - v.min())\n")
    (tmp_path / "p.yaml").write_text(GROUPED)
    monkeypatch.chdir(tmp_path)
    graph = check_file("p.yaml").graph
    full = ("[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Job aborted due to stage failure: "
            "Task 0 in stage 3.0 failed 1 times, most recent failure: Lost task 0.0 in stage 3.0 (TID 3): "
            "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
            '  File "/x/etl/compile/functions.py", line 280, in aggregate\n'
            "etl.compile.windows.state.AggregateFailed: python function 'Spread' failed: did not return within 1 s "
            "(ETL_FUNCTION_TIMEOUT_S)\n\n\tat org.apache.spark.api.python.BasePythonRunner...")
    d = query_failure(graph, ["src"], "AggregateFailed: python function 'Spread' failed: ...", full, "").diagnostic()
    assert d.render() == (
        "fns.py:4:1: E401 python function 'Spread': failed in a batch group-by: did not return within 1 s "
        "(ETL_FUNCTION_TIMEOUT_S)\n"
        "    hint: a batch group-by's aggregate has no row to make a dead letter of, so its query stops: fix the "
        "function, or raise the bound its reason names (etl settings), then run again: the run resumes from its "
        "checkpoint: nothing committed is lost or written twice")
    # any other failure of the query stays the pipeline's
    assert query_failure(graph, ["src"], "boom", "ValueError: boom", "").diagnostic().render().splitlines()[0] == (
        "p.yaml:1:1: E401 pipeline 'grouped': boom")


AGGREGATE = textwrap.dedent('''\
    def spread(v):
        if v.iloc[0] == -1:
            while True:
                pass
        if v.iloc[0] == -2:
            raise ValueError("a negative value")
        if v.iloc[0] == -3:
            return "wide"
        return float(v.max() - v.min())
''')


def test_an_aggregate_function_is_bounded_as_a_scalar_one(in_a_task) -> None:
    # the window's state engine calls it through the same RowCall: its time budget, its errors, its declared type
    from pyspark.sql.types import DoubleType

    from etl.compile.windows.state import AggregateFailed, PythonAggregate

    agg = PythonAggregate("spread", RowCall(Shipped("aggs:spread", AGGREGATE, "aggs.py"), False, DoubleType(),
                                            "spread", Limits(timeout_s=0.3)))
    assert agg.result([3, 10, 4]) == 7.0
    for values, error in (([-1, 5], "did not return within 0.3 s (ETL_FUNCTION_TIMEOUT_S)"),
                          ([-2], "ValueError: a negative value"),
                          ([-3], "returned a str ('wide') where its declared type is double")):
        t = time.monotonic()
        with pytest.raises(AggregateFailed) as e:
            agg.result(values)
        assert str(e.value) == f"python function 'spread' failed: {error}"
        assert time.monotonic() - t < 2
    assert agg.result([1, 2]) == 1.0  # the next window's call runs
