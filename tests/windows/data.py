"""Deterministic event-time test data: out-of-order, late and duplicate events, in micro-batches."""

from __future__ import annotations

import random

SCHEMA = "k string, v bigint, x double, s string, ts bigint"


def make_batches(seed: int = 7, n_batches: int = 5, per_batch: int = 16, step_ms: int = 4000,
                 jitter_ms: int = 7000, late_every: int = 5, keys: str = "abc") -> list[list[dict]]:
    """Event time advances `step_ms` per batch; each event is up to `jitter_ms` out of order;
    every `late_every`-th event is far behind (late); a few events are repeated (duplicates),
    some in the same batch and some in the next one. Values include nulls."""
    rnd = random.Random(seed)
    batches: list[list[dict]] = []
    carry: list[dict] = []
    i = 0
    for b in range(n_batches):
        base = 10_000 + b * step_ms
        batch = list(carry)
        carry = []
        for _ in range(per_batch):
            i += 1
            ts = base + rnd.randint(-jitter_ms, jitter_ms)
            if i % late_every == 0:
                ts = base - rnd.randint(12_000, 30_000)
            ev = {"k": rnd.choice(keys), "v": None if rnd.random() < 0.12 else rnd.randint(0, 9),
                  "x": None if rnd.random() < 0.1 else round(rnd.uniform(-5, 5), 3),
                  "s": rnd.choice(["GET", "PUT", "POST", None]), "ts": max(ts, 0)}
            batch.append(ev)
            r = rnd.random()
            if r < 0.08:
                batch.append(dict(ev))
            elif r < 0.14:
                carry.append(dict(ev))
        batches.append(batch)
    # a last batch far ahead closes every window opened by the data above
    batches.append([{"k": "a", "v": 1, "x": 0.0, "s": "GET", "ts": 10_000 + (n_batches + 20) * step_ms}])
    return batches
