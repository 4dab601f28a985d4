"""A sink whose batch a stop cancelled (past ETL_STOP_GRACE_S: the runner cancels the batch's Spark jobs and stops
its query, which interrupts the query's thread, where the driver's part of a write runs) does not take what that
makes fail for an I/O fault: without the runner's mark, an interrupted write of the file sink (Hadoop's
InterruptedIOException is an IOException: a TransientError) was retried after its backoff while the stop waited."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from etl.runtime.sink import AbstractSink, SinkContext, TransientError, WriteResult


def test_a_write_its_stop_cancelled_is_not_retried(tmp_path):
    slept: list[float] = []
    ctx = SinkContext("p", "out", "q", str(tmp_path), sleep=slept.append)
    sink = AbstractSink(SimpleNamespace(retry=SimpleNamespace(max_attempts=8, initial_backoff=0.5, max_backoff=5)),
                        ctx)
    calls: list[int] = []

    def write() -> int:
        calls.append(1)
        if len(calls) < 3:
            raise TransientError("java.io.InterruptedIOException: java.lang.InterruptedException")
        return 7

    assert sink._retry("write", write, WriteResult()) == 7  # an I/O fault: retried after its backoff
    assert (len(calls), slept) == (3, [0.5, 1.0])
    calls.clear()
    sink.cancelled = True
    with pytest.raises(TransientError, match="InterruptedIOException"):
        sink._retry("write", write, WriteResult())
    assert (len(calls), slept) == (1, [0.5, 1.0])  # no second attempt, no backoff
