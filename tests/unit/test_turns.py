"""etl serve's fair turns (etl.runtime.turns) without a JVM: which job's micro-batch runs next for given weights,
times and names, on a fake clock."""

from __future__ import annotations

import threading
import time

from etl.runtime import turns as turns_module
from etl.runtime.turns import Turns


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def run(turns: Turns, clock: Clock, jobs: list[str], grants: int, seconds: dict[str, float] | None = None) -> list[str]:
    """Every job always has a batch waiting (asked in the order of `jobs`); the batch granted holds its turn
    `seconds[job]` (1) then asks again: the jobs in the order their batches ran."""
    waiting = {j: turns.ask(j) for j in jobs}
    order: list[str] = []
    while len(order) < grants:
        held = [t for t in waiting.values() if t.since is not None]
        assert len(held) == 1, held  # one slot: one batch at a time
        ticket = held[0]
        order.append(ticket.job)
        clock.t += (seconds or {}).get(ticket.job, 1.0)
        turns.done(ticket)
        waiting[ticket.job] = turns.ask(ticket.job)
    return order


def test_one_slot_is_shared_by_weight_whatever_the_names():
    """The starvation of Spark's FAIR pools on one slot: ties go to the pool whose name sorts first. Turns go by
    virtual time (turns granted over weight), ties to the batch that asked first: 'zz' is not last, 'b' (weight 2)
    runs every other batch once the three are under way (a job's next batch asks after its previous one ended: a
    freed turn goes to another job's batch waiting, so no job runs twice in a row)."""
    clock = Clock()
    order = run(Turns(1, {"b": 2}, clock=clock), clock, ["zz", "b", "a"], 16)
    assert order == ["zz", "b", "a", "b", "zz", "a", "b", "zz", "b", "a", "b", "zz", "b", "a", "b", "zz"]
    many = run(Turns(1, {"b": 2}, clock=clock), clock, ["zz", "b", "a"], 400)
    assert {j: many.count(j) for j in ("zz", "b", "a")} == {"zz": 101, "b": 199, "a": 100}
    many = run(Turns(1, {"b": 3}, clock=clock), clock, ["zz", "b", "a", "c"], 400)
    assert {j: many.count(j) for j in ("zz", "b", "a", "c")} == {"zz": 67, "b": 199, "a": 67, "c": 67}
    # two busy jobs on one slot alternate whatever their weights: a freed turn never waits for the next batch
    assert run(Turns(1, {"b": 2}, clock=clock), clock, ["a", "b"], 6) == ["a", "b"] * 3


def test_thirty_jobs_on_one_slot_each_run_in_every_round():
    """The bench's 30 jobs on one slot: every job runs once in each 30 turns (none waits for another twice)."""
    clock = Clock()
    names = [f"rules-{i:02d}" for i in range(30)]
    order = run(Turns(1, clock=clock), clock, names[::-1], 300)
    for r in range(10):
        assert sorted(order[30 * r:30 * (r + 1)]) == names


def test_turns_count_batches_not_seconds():
    """A batch's wall time on a shared machine says more about the machine than about its job: a job of 3 s batches
    runs as many as the 1 s jobs beside it, weight 2 twice as many."""
    clock = Clock()
    jobs = ["heavy", "light", "l2"]
    order = run(Turns(1, clock=clock), clock, jobs, 400, {"heavy": 3.0})
    assert [order.count(j) for j in jobs] == [134, 133, 133]
    order = run(Turns(1, {"heavy": 2}, clock=clock), clock, jobs, 400, {"heavy": 3.0})
    assert [order.count(j) for j in jobs] == [199, 101, 100]


def test_a_job_back_from_idle_has_no_credit_for_its_idle_time():
    clock = Clock()
    turns = Turns(1, turn_s=10.0, clock=clock)
    c = turns.ask("c")  # c runs a batch, then has nothing to do while a and b run 20 (20 s)
    turns.done(c)
    assert run(turns, clock, ["a", "b"], 20) == ["a", "b"] * 10
    for t in [*turns._held, *turns._waiting]:  # (run's last tickets)
        turns.done(t)
    # c, 9 turns behind and idle for 20 s, and 'new' start level with a and b: one turn each in every round,
    # not 9 in a row
    assert run(turns, clock, ["a", "b", "c", "new"], 8) == ["a", "b", "c", "new"] * 2


def test_slots_a_batch_past_its_slice_and_giving_up():
    clock = Clock()
    turns = Turns(2, turn_s=10.0, clock=clock)
    a, b, c = (turns.ask(j) for j in "abc")
    assert [t.since is not None for t in (a, b, c)] == [True, True, False]  # two slots: two batches at once
    assert turns.wait(c, give_up=lambda: True) is False  # its job stops while it waits: it runs without a turn
    turns.done(c)
    d = turns.ask("d")
    clock.t += 10.0  # a and b held their turns for ETL_SERVE_TURN_S: they no longer hold d back
    assert turns.wait(d, give_up=lambda: False) is True and d.since == clock.t
    for t in (a, b, d):
        turns.done(t)
    assert turns._held == turns._waiting == [] and not turns._asking
    turns.resize(0)  # a cluster without executors yet: still one
    assert turns.slots == 1


def test_a_sink_waiting_between_retries_gives_its_turn_back():
    """turns.pause (SinkContext.sleep): another job's batch runs while a batch's sink waits to retry."""
    turns = Turns(1)
    ran: list[str] = []
    with turns.turn("a", give_up=lambda: False):
        ran.append("a")
        b = threading.Thread(target=lambda: _batch(turns, "b", ran))
        b.start()
        time.sleep(0.05)
        assert ran == ["a"]  # b waits for a's turn
        turns_module.pause(0.3)  # a's sink backs off: b runs meanwhile; a waits for a turn again after
        ran.append("a again")
        b.join()
    assert ran == ["a", "b", "a again"]
    assert turns._held == turns._waiting == []
    turns_module.pause(0.0)  # outside a turn: a plain sleep


def _batch(turns: Turns, job: str, ran: list[str]) -> None:
    with turns.turn(job, give_up=lambda: False):
        ran.append(job)
