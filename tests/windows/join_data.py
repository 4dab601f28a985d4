"""Two event streams for stream-stream join tests: out of order within the watermark, duplicates,
right events inside and outside the time bound; nothing arrives behind the watermark."""

from __future__ import annotations

import random

LEFT_SCHEMA = "k string, lid bigint, ts bigint"
RIGHT_SCHEMA = "k string, rid bigint, ts bigint"
STEP_MS, DELAY_S, WITHIN_S = 2000, 6, 5
T0 = 100_000


def make_streams(seed: int = 3, n_batches: int = 8, per_batch: int = 5) -> tuple[list[list[dict]], list[list[dict]]]:
    rnd = random.Random(seed)
    left: list[list[dict]] = [[] for _ in range(n_batches + 2)]
    right: list[list[dict]] = [[] for _ in range(n_batches + 2)]

    def place(stream: list[list[dict]], ev: dict) -> None:
        b = (ev["ts"] - T0) // STEP_MS + rnd.randint(0, 1)  # arrives up to one batch late: never behind the watermark
        b = max(0, min(b, n_batches - 1))
        stream[b].append(ev)
        if rnd.random() < 0.1:
            stream[b].append(dict(ev))  # duplicate

    rid = 0
    for i in range(n_batches * per_batch):
        lt = T0 + rnd.randint(0, (n_batches - 2) * STEP_MS)
        ev = {"k": rnd.choice("abcdefghij"), "lid": i, "ts": lt}
        place(left, ev)
        for _ in range(rnd.choice([0, 0, 1, 1, 2])):
            rid += 1
            place(right, {"k": ev["k"], "rid": rid, "ts": max(T0, lt + rnd.randint(-12000, 12000))})
    for _ in range(n_batches):  # right events of other keys / times
        rid += 1
        place(right, {"k": rnd.choice("abcde"), "rid": rid, "ts": T0 + rnd.randint(0, (n_batches - 2) * STEP_MS)})
    far = T0 + 1_000_000  # closes everything: the watermark passes every real row's bound
    left[n_batches].append({"k": "zz", "lid": -1, "ts": far})
    right[n_batches].append({"k": "zz", "rid": -1, "ts": far})
    left[n_batches + 1].append({"k": "zz", "lid": -2, "ts": far + 1})
    right[n_batches + 1].append({"k": "zz", "rid": -2, "ts": far + 1})
    return left, right


def oracle_join(left: list[list[dict]], right: list[list[dict]], how: str, within_ms: int) -> list[dict]:
    L = [e for b in left for e in b]
    R = [e for b in right for e in b]
    out = []
    for l in L:
        matched = [r for r in R if r["k"] == l["k"] and abs(r["ts"] - l["ts"]) <= within_ms]
        for r in matched:
            out.append({"k": l["k"], "lid": l["lid"], "ts": l["ts"], "rid": r["rid"], "right_ts": r["ts"]})
        if not matched and how == "left" and l["lid"] != -2:  # the last row is never resolved
            out.append({"k": l["k"], "lid": l["lid"], "ts": l["ts"], "rid": None, "right_ts": None})
    return out
