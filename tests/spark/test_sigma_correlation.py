"""Sigma correlation rules on event-time windows: each of the four types, tumbling and sliding, against the
event-time oracle (tests/sigma_rules/correlation_oracle.py) and against rows written out by hand."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from etl.runtime.testing import canon
from tests.sigma_rules.correlation_oracle import Corr, correlate
from tests.spark.helpers import run_events

pytestmark = pytest.mark.spark

RULES = Path(__file__).resolve().parents[1] / "fixtures" / "sigma" / "correlation"
EVENT_ID = {"failed_logon": 4625, "successful_logon": 4624, "new_service": 7045}
BASE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp()

PIPELINE = f"""
    name: t-sigma-corr
    sources:
      - {{id: logs, type: file, path: in, format: jsonl, event_time: {{field: ts, watermark: 0s}},
         schema: {{EventID: int, User: string, TargetUser: string, IpAddress: string, Computer: string,
                   ts: timestamp}}}}
    transforms:
      - {{id: alerts, type: filter, input: logs, mode: alerts, sigma: {{paths: ['{RULES}']}}}}
      - {{id: corr, type: sigma_correlation, input: alerts, slides: SLIDES}}
    sinks:
      - {{id: out, type: file, input: corr, path: out}}
"""

# (seconds after 2026-01-01T00:00:00Z, rule, fields)
ALERTS = [
    (10, "failed_logon", {"User": "alice", "IpAddress": "10.0.0.1", "Computer": "DC1"}),
    (20, "failed_logon", {"User": "alice", "IpAddress": "10.0.0.1", "Computer": "DC1"}),
    (40, "failed_logon", {"User": "alice", "IpAddress": "10.0.0.1", "Computer": "DC1"}),
    (60, "successful_logon", {"TargetUser": "alice", "Computer": "WS1"}),
    (100, "failed_logon", {"User": "carol", "IpAddress": "10.0.0.9", "Computer": "DC1"}),
    (110, "failed_logon", {"User": "dave", "IpAddress": "10.0.0.9", "Computer": "DC1"}),
    (100, "new_service", {"Computer": "WS2"}),
    (120, "failed_logon", {"User": "erin", "IpAddress": "10.0.0.9", "Computer": "DC1"}),
    (130, "failed_logon", {"User": "carol", "IpAddress": "10.0.0.9", "Computer": "DC1"}),
    (200, "new_service", {"Computer": "WS1"}),
    (280, "failed_logon", {"User": "bob", "IpAddress": "10.0.0.2", "Computer": "DC1"}),
    (300, "successful_logon", {"TargetUser": "dave", "Computer": "WS2"}),
    (310, "failed_logon", {"User": "bob", "IpAddress": "10.0.0.2", "Computer": "DC1"}),
    (320, "failed_logon", {"User": "bob", "IpAddress": "10.0.0.2", "Computer": "DC1"}),
    (400, "successful_logon", {"TargetUser": "carol", "Computer": "WS4"}),
    (500, "successful_logon", {"TargetUser": "erin", "Computer": "WS3"}),
    (500, "new_service", {"Computer": "WS3"}),  # same instant as the logon: not after it
    # failure -> logon -> service on WS5 only when each is the earliest after the one before (not the earliest)
    (650, "successful_logon", {"TargetUser": "t5", "Computer": "WS5"}),
    (700, "failed_logon", {"User": "u5", "IpAddress": "10.0.0.5", "Computer": "WS5"}),
    (750, "new_service", {"Computer": "WS5"}),
    (800, "successful_logon", {"TargetUser": "t5", "Computer": "WS5"}),
    (900, "new_service", {"Computer": "WS5"}),
    (1300, "failed_logon", {"User": "u6", "IpAddress": "10.0.0.6", "Computer": "WS6"}),
    (1350, "new_service", {"Computer": "WS6"}),  # no logon between: 1 rule in order
    (1250, "failed_logon", {"User": "u7", "IpAddress": "10.0.0.7", "Computer": "WS7"}),
    (1260, "successful_logon", {"TargetUser": "t7", "Computer": "WS7"}),  # 2 of 3 in order: gte 2 holds
]
CLOSER = {"EventID": 1, "ts": "2026-01-01T02:00:00Z"}  # matches no rule; moves the watermark past every window

CORRS = [  # tests/fixtures/sigma/correlation/correlations.yml, as the oracle reads it
    Corr("correlations", "event_count", ("failed_logon",), 300, {"User": {"failed_logon": "User"}}, "gte", 3),
    Corr("correlations_1", "value_count", ("failed_logon",), 300, {"IpAddress": {"failed_logon": "IpAddress"}},
         "gt", 2, "User"),
    Corr("correlations_2", "temporal", ("failed_logon", "successful_logon"), 300,
         {"account": {"failed_logon": "User", "successful_logon": "TargetUser"}}, "gte", 2),
    Corr("correlations_3", "temporal_ordered", ("successful_logon", "new_service"), 600,
         {"Computer": {"successful_logon": "Computer", "new_service": "Computer"}}, "gte", 2),
    Corr("correlations_4", "temporal_ordered", ("failed_logon", "successful_logon", "new_service"), 600,
         {"Computer": {r: "Computer" for r in EVENT_ID}}, "gte", 2),
    Corr("correlations_5", "event_count", ("new_service",), 600, {}, "lte", 2),  # no group-by: one group
]


def _events() -> list[dict]:
    out = []
    for t, rule, fields in ALERTS:
        ts = dt.datetime.fromtimestamp(BASE + t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        out.append({"EventID": EVENT_ID[rule], **fields, "ts": ts})
    return out + [CLOSER]


def _run(spark, tmp_path, slides: int) -> list[dict]:
    out = run_events(spark, tmp_path, PIPELINE.replace("SLIDES", str(slides)), {"logs": _events()},
                     allow_paths=(RULES,))
    rows = [{k: canon(r[k]) for k in ("rule", "group", "window_start", "window_end", "value", "rules_seen")}
            for r in out["out"]]
    return sorted(rows, key=lambda r: (r["rule"], r["window_start"], sorted(r["group"].items(), key=str)))


def _oracle(slides: int) -> list[dict]:
    return correlate([(BASE + t, r, f) for t, r, f in ALERTS], CORRS, slides)


def test_each_correlation_type_fires_once_per_satisfied_group_and_tumbling_window(spark, tmp_path):
    got = _run(spark, tmp_path, 1)
    t0, t5, t10, t20 = ("2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z",
                        "2026-01-01T00:20:00Z")
    assert got == [
        {"rule": "correlations", "group": {"User": "alice"}, "window_start": t0, "window_end": t5, "value": 3,
         "rules_seen": ["failed_logon"]},
        {"rule": "correlations_1", "group": {"IpAddress": "10.0.0.9"}, "window_start": t0, "window_end": t5,
         "value": 3, "rules_seen": ["failed_logon"]},
        {"rule": "correlations_2", "group": {"account": "alice"}, "window_start": t0, "window_end": t5, "value": 2,
         "rules_seen": ["failed_logon", "successful_logon"]},
        {"rule": "correlations_3", "group": {"Computer": "WS1"}, "window_start": t0, "window_end": t10,
         "value": 2, "rules_seen": ["new_service", "successful_logon"]},
        {"rule": "correlations_3", "group": {"Computer": "WS5"}, "window_start": t10, "window_end": t20,
         "value": 2, "rules_seen": ["new_service", "successful_logon"]},
        {"rule": "correlations_4", "group": {"Computer": "WS5"}, "window_start": t10, "window_end": t20,
         "value": 3, "rules_seen": ["failed_logon", "new_service", "successful_logon"]},
        {"rule": "correlations_4", "group": {"Computer": "WS7"}, "window_start": t20,
         "window_end": "2026-01-01T00:30:00Z", "value": 2, "rules_seen": ["failed_logon", "successful_logon"]},
        {"rule": "correlations_5", "group": {}, "window_start": t10, "window_end": t20, "value": 2,
         "rules_seen": ["new_service"]},  # 00:00-00:10 holds 3 services
        {"rule": "correlations_5", "group": {}, "window_start": t20, "window_end": "2026-01-01T00:30:00Z",
         "value": 1, "rules_seen": ["new_service"]},
    ]
    assert got == _oracle(1)


def test_sliding_windows_catch_a_burst_across_a_tumbling_boundary(spark, tmp_path):
    got = _run(spark, tmp_path, 2)  # 5m windows every 2m30s: bob's 3 failures (4:40, 5:10, 5:20) fall in one
    assert {"rule": "correlations", "group": {"User": "bob"}, "window_start": "2026-01-01T00:02:30Z",
            "window_end": "2026-01-01T00:07:30Z", "value": 3, "rules_seen": ["failed_logon"]} in got
    assert got == _oracle(2)
    assert len(got) == 20
