"""The drain of a run (`etl run --drain`, `etl drain PIPELINE`, SIGUSR1): see etl/compile/drain.py.

Pass 1 processes what is available (the queries restarted with AvailableNow, exactly `--once`);
pass 2, once they ended, feeds the sentinel and runs them again to the end; then the drain is
recorded in the checkpoint. A drain asked for while the run is continuous first stops the queries
after their batch in flight.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from etl.compile import drain as files
from etl.compile.windows.native import choose_timers
from etl.runtime.errors import RunFailed
from etl.runtime.failure import Failure

log = logging.getLogger("etl.run")


class Drain:
    def __init__(self, run: Any, on: bool):
        self.run = run
        self.pass_ = 1 if on else 0  # 0: not draining, 1: what is available, 2: the sentinel's pass, 3: done
        self.asked: str | None = None  # who asked for a drain while running (SIGUSR1, etl drain)
        self.how = "etl run --drain"
        self.nonce = files.new_nonce()  # the sentinel this run writes carries it (etl/compile/drain.py)
        self._warned: set[str] = set()
        self._looked = -1e9

    def _processing_timers(self) -> bool:
        trigger = self.run.compiler.ctx.trigger
        return any("window" in n.spec.engine_aspects() and choose_timers(n.spec, trigger) == "processing"
                   for n in self.run.graph.of_kind("transform"))

    def _all_flushed(self) -> None:
        """A drain that leaves windows in state (event times at or past the drain's watermark, which only an
        `event_time` declared on a transform lets through: a source's are bounded by the horizon) is not recorded:
        RunFailed naming the query's stateful component, exit 1."""
        left = left_in_state(self.run)
        if not left:
            return
        q, rows = left[0]
        node = _stateful(self.run, q)
        cause = (f"the drain left {rows} row(s) in the state of query '{q.name}' (windows, dedupe keys or join "
                 f"buffers whose event time is at or past the drain's watermark, {files.SENTINEL_TIME[:10]} minus "
                 f"the delay): they were not written")
        failure = Failure("E401", f"{node.type} '{node.id}'", cause, node.span,
                          "declare event_time on the source instead (event times beyond its horizon are dead "
                          "letters there), or filter such events out before this component")
        raise RunFailed(failure.diagnostic().message, failure)

    def step(self) -> bool:
        """Called while running (pass 0: was a drain asked for?) and when every query ended (passes 1, 2):
        True when queries were (re)started."""
        run, ck = self.run, self.run.checkpoint
        if self.pass_ == 0:
            if time.monotonic() - self._looked > 5:  # a stray file dropped while running: said, not read
                self._looked = -1e9
                self._warned = files.warn_strays(ck, self._warned)
            if not (self.asked or files.requested(ck)):
                return False
            self.how = self.asked or "etl drain"
            self.asked = None
            if self._processing_timers():
                log.warning("etl: drain refused: a window with `emit.timers: processing` never ends on AvailableNow; "
                            "stop the run, set `timers: event` and run `etl run --drain`")
                files.clear_request(ck)
                return False
            if any(s.isActive for s in run.streams):
                run._graceful_stop()
                run._stopping = False
            self.pass_ = 1
            run._start_streams(True)
            return True
        if any(s.isActive for s in run.streams):
            return False
        if self.pass_ == 1:
            self._warned = files.warn_strays(ck, self._warned)
            files.write_sentinel(ck, self.nonce)
            self.pass_ = 2
            run._start_streams(True)
            return True
        if self.pass_ == 2:
            self._all_flushed()
            files.mark_drained(ck, self.how, self.nonce)
            files.clear_request(ck)
            self.pass_ = 3
        return False


# Spark's operators whose state the drain's watermark empties: windows (aggregations, sessions), dedupes, stream
# joins. The state engine's (transformWithState) also holds continuous aggregates' keys, which no drain ends.
FLUSHED_BY_WATERMARK = ("stateStoreSave", "sessionWindowStateStoreSaveExec", "dedupe", "dedupeWithinWatermark",
                        "symmetricHashJoin")


def left_in_state(run: Any) -> list[tuple[Any, int]]:
    """(query, rows) of every query whose watermark-bound state still holds rows after its last batch."""
    left = []
    for q, s in zip(run.queries, run.streams, strict=False):
        rows = sum(int(op.get("numRowsTotal") or 0) for op in (s.lastProgress or {}).get("stateOperators", [])
                   if op.get("operatorName") in FLUSHED_BY_WATERMARK)
        if rows:
            left.append((q, rows))
    return left


def _stateful(run: Any, q: Any) -> Any:
    ids = [q.root] + list(q.nodes)
    nodes = [run.graph.node(i) for i in ids if i in run.graph.nodes]
    return next((n for n in nodes if n.spec.WATERMARK_STATE), nodes[0])
