"""Fair turns for the micro-batches of `etl serve`'s jobs, so that every job progresses in proportion to its weight.

Spark's FAIR scheduler alone does not: it offers a free task slot to the pool with the fewest running tasks over its
weight and breaks ties by pool name (FairSchedulingAlgorithm), so when the set asks for more than its task slots
(one under `--profile light`) every waiting pool has none running and the pool whose name sorts first takes each
free slot: with 30 jobs on one slot, 21-23 never committed a batch in 7-10 minutes.

So a job's micro-batch waits for a turn before it runs (foreachBatch: its Spark jobs, its sinks' writes), and at
most as many batches hold one as the set has task slots. A freed turn goes to the waiting batch of the job with the
least virtual time, ties to the batch that asked first; a job's virtual time grows by 1/weight with each turn it is
granted, so while they all have batches waiting, the jobs run batches in proportion to their weights whatever their
names (weight 2: two batches for each of a weight-1 job's). Turns count batches, not seconds: a batch's wall time on
a shared machine says more about the machine than about the job (a job charged for the 14 s of a batch slowed by
the others' start waited 100 s for its next turn). A job that asks again after ETL_SERVE_TURN_S with nothing to do
(no batch: no new data) starts level with the set, not with credit for its idle time. A freed turn never waits:
when the only batches waiting are other jobs', one of them takes it (a job's next batch is planned after its
previous one ended, so two busy jobs on one slot alternate whatever their weights; three or more share by weight).

Isolation: a batch holding its turn longer than ETL_SERVE_TURN_S no longer counts against the slots (a slow or
stuck batch lets the others run beside it); a sink waiting between retries gives its turn back (`pause`) and waits
for another, not counted again; a batch waiting for a turn gives up when its job stops (the batch runs again on
restart, as a batch started after a stop does). Pure Python: the unit tests drive it with a fake clock.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

POLL_S = 0.2  # how often a waiting batch looks at its give-up condition and at turns held past their slice


@dataclass
class Ticket:
    job: str
    seq: int  # the order of asking: ties of virtual time go to the first
    counted: bool = True  # it counts in its job's virtual time (not a batch's turn again after a sink's backoff)
    since: float | None = None  # the clock when granted (None: waiting)


class Turns:
    def __init__(self, slots: int = 1, weights: dict[str, int] | None = None, turn_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic):
        self.slots = max(1, slots)
        self.weights = dict(weights or {})
        self.turn_s = turn_s
        self._clock = clock
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._vtime: dict[str, float] = {}  # job -> the turns it was granted, over its weight
        self._now = 0.0  # the set's virtual time: the least of the jobs' when the last turn was granted
        self._waiting: list[Ticket] = []
        self._held: list[Ticket] = []
        self._asking: Counter[str] = Counter()  # job -> its batches waiting or holding a turn
        self._ended: dict[str, float] = {}  # job -> the clock when its last batch ended (none asking since)

    # ------------------------------------------------------------ the queue
    def ask(self, job: str, counted: bool = True) -> Ticket:
        """A batch of `job` asks for a turn (granted at once when one is free and no one is before it)."""
        with self._cond:
            if not self._asking[job] and (job not in self._ended or
                                          self._clock() - self._ended[job] >= self.turn_s):
                self._vtime[job] = max(self._vtime.get(job, self._now), self._now)  # no credit for idle time
            self._asking[job] += 1
            ticket = Ticket(job, next(self._seq), counted)
            self._waiting.append(ticket)
            self._grant()
            return ticket

    def done(self, ticket: Ticket) -> None:
        """The batch ends (or gives up waiting): its turn, if it held one, goes to the next."""
        with self._cond:
            if ticket.since is None:
                self._waiting.remove(ticket)
            else:
                self._held.remove(ticket)
            self._asking[ticket.job] -= 1
            if not self._asking[ticket.job]:
                del self._asking[ticket.job]
                self._ended[ticket.job] = self._clock()
            self._grant()

    def wait(self, ticket: Ticket, give_up: Callable[[], bool]) -> bool:
        """Until `ticket` holds a turn (True) or `give_up()` (False: it is still to be given back with `done`)."""
        with self._cond:
            while True:
                self._grant()  # (a turn held past its slice frees a place)
                if ticket.since is not None:
                    return True
                if give_up():
                    return False
                self._cond.wait(POLL_S)

    def resize(self, slots: int) -> None:
        """The set's task slots now (a cluster's executors come and go)."""
        with self._cond:
            self.slots = max(1, slots)
            self._grant()

    def _grant(self) -> None:
        now = self._clock()
        busy = sum(1 for t in self._held if t.since is not None and now - t.since < self.turn_s)
        while busy < self.slots and self._waiting:
            ticket = min(self._waiting, key=lambda t: (self._vtime[t.job], t.seq))
            self._waiting.remove(ticket)
            ticket.since = now
            self._held.append(ticket)
            self._now = max(self._now, self._vtime[ticket.job])
            if ticket.counted:
                self._vtime[ticket.job] += 1 / max(1, self.weights.get(ticket.job, 1))
            busy += 1
            self._cond.notify_all()

    # ------------------------------------------------------ a batch's turn
    @contextlib.contextmanager
    def turn(self, job: str, give_up: Callable[[], bool]) -> Iterator[None]:
        """The body runs once `job`'s batch holds a turn, or once `give_up()` (the caller checks why)."""
        held = _Held(self, give_up, self.ask(job))
        try:
            self.wait(held.ticket, give_up)
            _local.held = held
            yield
        finally:
            _local.held = None
            self.done(held.ticket)


@dataclass
class _Held:
    turns: Turns
    give_up: Callable[[], bool]
    ticket: Ticket


_local = threading.local()


def pause(seconds: float) -> None:
    """Sleep `seconds`; a batch holding a turn in this thread gives it back meanwhile and waits for a new one (a
    sink's backoff between retries holds no turn)."""
    held: _Held | None = getattr(_local, "held", None)
    if held is None:
        time.sleep(seconds)
        return
    held.turns.done(held.ticket)
    time.sleep(seconds)
    held.ticket = held.turns.ask(held.ticket.job, counted=False)  # the same batch: counted once
    held.turns.wait(held.ticket, held.give_up)  # (a stop: the batch goes on without, to its end)
