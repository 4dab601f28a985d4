"""Stream-stream joins (inner, left, right, full; an asymmetric bound; a condition besides the keys) against a
pure-Python join of the same events, micro-batch by micro-batch: late rows dropped, matches as soon as both rows
are there, unmatched rows of an outer side once the watermark guarantees no match can arrive any more."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, UTC

import pytest

T0 = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
DELAY = 31  # watermark delay (s); event times are odd seconds, watermarks even: no event sits on one
LOWER, UPPER = -60, 120  # within: [-1m, +2m] of right time - left time
FAR = T0 + timedelta(hours=2)  # a last batch moves the watermark past every row

PIPELINE = """\
name: join-oracle
sources:
  - {id: views, type: file, path: v, format: jsonl, schema: {k: string, ts: timestamp, v: int},
     event_time: {field: ts, watermark: 31s}}
  - {id: buys, type: file, path: b, format: jsonl, schema: {k: string, ts: timestamp, v: int},
     event_time: {field: ts, watermark: 31s}}
transforms:
  - {id: j, type: join, inputs: [views, buys], on: [k], how: HOW, within: [-1m, +2m], condition: "buys_v >= v"}
sinks:
  - {id: out, type: print, input: j}
"""


def _events(rng: random.Random, n_batches: int) -> list[dict[str, list[dict]]]:
    batches = []
    for b in range(n_batches):
        base = 90 * b
        batch: dict[str, list[dict]] = {}
        for side in ("views", "buys"):
            rows = [{"k": rng.choice("abcde"), "ts": T0 + timedelta(seconds=base + 2 * rng.randint(0, 45) + 1),
                     "v": rng.randint(0, 9)} for _ in range(6)]
            if b >= 2:  # behind the watermark: late, dropped
                rows.append({"k": rng.choice("abcde"), "ts": T0 + timedelta(seconds=base - 151), "v": 5})
            batch[side] = rows
        batches.append(batch)
    batches.append({s: [{"k": "zz", "ts": FAR, "v": 0}] for s in ("views", "buys")})
    return batches


def _matches(lrow: dict, rrow: dict) -> bool:
    d = (rrow["ts"] - lrow["ts"]).total_seconds()
    return lrow["k"] == rrow["k"] and LOWER <= d <= UPPER and rrow["v"] >= lrow["v"]


def _row(lrow: dict | None, rrow: dict | None) -> dict:
    return {"k": (lrow or rrow)["k"], "ts": lrow and lrow["ts"], "v": lrow and lrow["v"],
            "buys_ts": rrow and rrow["ts"], "buys_v": rrow and rrow["v"]}


def oracle(batches: list[dict[str, list[dict]]], how: str) -> list[list[dict]]:
    """Rows each batch emits, as Spark's symmetric hash join with one global (min) watermark does."""
    seen: dict[str, list[dict]] = {"views": [], "buys": []}
    maxes: dict[str, datetime] = {}
    matched: set[int] = set()
    wm_before = None
    out: list[list[dict]] = []
    for batch in batches:
        rows: list[dict] = []
        new = {s: [r for r in batch.get(s, []) if wm_before is None or r["ts"] > wm_before] for s in seen}
        for s in seen:
            for r in batch.get(s, []):
                maxes[s] = max(maxes.get(s, r["ts"]), r["ts"])
        old_views = {id(r) for r in seen["views"]}
        for lrow in seen["views"] + new["views"]:
            for rrow in (new["buys"] if id(lrow) in old_views else seen["buys"] + new["buys"]):
                if _matches(lrow, rrow):
                    rows.append(_row(lrow, rrow))
                    matched.update((id(lrow), id(rrow)))
        for s in seen:
            seen[s] += new[s]
        wm_after = min(maxes.values()) - timedelta(seconds=DELAY)
        for side, outer, reach in (("views", ("left", "full"), UPPER), ("buys", ("right", "full"), -LOWER)):
            if how not in outer:
                continue
            for r in seen[side]:
                end = r["ts"] + timedelta(seconds=reach)
                if id(r) not in matched and end < wm_after and (wm_before is None or end >= wm_before):
                    rows.append(_row(r, None) if side == "views" else _row(None, r))
        out.append(rows)
        wm_before = wm_after
    return out


@pytest.mark.spark
@pytest.mark.parametrize("how", ["inner", "left", "right", "full"])
def test_stream_join_matches_the_oracle_batch_by_batch(spark, tmp_path, how):
    from etl.runtime.testing import run_case
    from etl.spec.pipeline import TestCase
    from tests.spark.helpers import checked

    batches = _events(random.Random(7), 4)
    per_batch = oracle(batches, how)
    outer = sum(1 for rows in per_batch for r in rows if r["ts"] is None or r["buys_ts"] is None)
    assert outer > 0 if how != "inner" else outer == 0  # the case holds rows that never match
    assert sum(map(len, per_batch)) > 4
    def iso(rows):
        return [{k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in r.items()} for r in rows]
    case = TestCase(name=how, batches=[{"inputs": {s: iso(rows) for s, rows in b.items()},
                                        "expect": {"out": iso(exp)}} for b, exp in zip(batches, per_batch, strict=True)],
                    expect={"out": iso([r for rows in per_batch for r in rows])})
    c = checked(tmp_path, PIPELINE.replace("HOW", how))
    res = run_case(c.plan, case, spark)
    assert res.ok, res.message
