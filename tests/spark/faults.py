"""A fault-injecting sink for tests: raises TransientError on its first `fail_times` writes."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from etl.runtime.sink import AbstractSink, SinkContext, TerminalError, TransientError


class FlakySink(AbstractSink):
    def __init__(self, spec: Any, ctx: SinkContext, fail_times: int = 0, terminal: bool = False):
        super().__init__(spec, ctx)
        self.fail_times = fail_times
        self.terminal = terminal
        self.attempts = 0
        self.rows: list[dict] = []
        self.chunks: list[int] = []
        self.commits: list[int] = []

    def batch_insert(self, rows: pa.Table) -> None:
        self.attempts += 1
        if self.terminal:
            raise TerminalError("table etl.events does not exist")
        if self.attempts <= self.fail_times:
            raise TransientError(f"connection reset (injected fault {self.attempts}/{self.fail_times})")
        self.rows.extend(rows.to_pylist())
        self.chunks.append(rows.num_rows)

    def commit(self, batch_id: int) -> None:
        self.commits.append(batch_id)
