"""Sigma correlation rules over numbers (value_sum, value_avg, value_percentile, value_median) and `generate`:
the referenced rules of correlations with `generate: false` (Sigma's default) feed the correlations but leave
no alert (nor tag); `generate: true` keeps them. Rows written out by hand and checked against the event-time
oracle (tests/sigma_rules/correlation_oracle.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from etl.runtime.testing import canon
from tests.sigma_rules.correlation_oracle import Corr, correlate
from tests.spark.helpers import run_events

pytestmark = pytest.mark.spark

RULES = Path(__file__).resolve().parents[1] / "fixtures" / "sigma" / "correlation_values"
EVENT_ID = {"transfer": 1, "login": 2, "other": 3}
BASE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp()

PIPELINE = f"""
    name: t-sigma-corr-values
    sources:
      - {{id: logs, type: file, path: in, format: jsonl, event_time: {{field: ts, watermark: 0s}},
         schema: {{EventID: int, User: string, Bytes: string, ts: timestamp}}}}
    transforms:
      - {{id: alerts, type: filter, input: logs, mode: alerts, sigma: {{paths: ['{RULES}']}}}}
      - {{id: tagged, type: filter, input: logs, mode: tag, tag_details: false, sigma: {{paths: ['{RULES}']}}}}
      - {{id: corr, type: sigma_correlation, input: alerts}}
    sinks:
      - {{id: out, type: file, input: corr, path: out}}
      - {{id: alerts_out, type: file, input: alerts, path: alerts}}
      - {{id: tags_out, type: file, input: tagged, path: tags}}
"""

# (seconds after 2026-01-01T00:00:00Z, rule, fields); Bytes is text: "n/a" is no number and left out
ALERTS = [
    (10, "transfer", {"User": "alice", "Bytes": "100"}),
    (20, "transfer", {"User": "alice", "Bytes": "900"}),
    (30, "transfer", {"User": "alice", "Bytes": "n/a"}),
    (40, "transfer", {"User": "alice", "Bytes": "50"}),
    (50, "login", {"User": "alice"}),
    (60, "login", {"User": "alice"}),
    (70, "login", {"User": "bob"}),
    (80, "other", {"User": "zed"}),
    (100, "transfer", {"User": "bob", "Bytes": "200"}),
    (110, "transfer", {"User": "bob", "Bytes": "101"}),  # mean 150.5: not > 150.5
    (400, "transfer", {"User": "carol", "Bytes": "300"}),
    (410, "transfer", {"User": "carol", "Bytes": "700"}),  # sum 1000: >= 1000
    (420, "transfer", {"User": "dave", "Bytes": "n/a"}),  # no number: no value, no row
    (700, "transfer", {"User": "erin", "Bytes": "500"}),
]
CLOSER = {"EventID": 9, "ts": "2026-01-01T02:00:00Z"}  # matches no rule; moves the watermark past every window

CORRS = [  # tests/fixtures/sigma/correlation_values/rules.yml, as the oracle reads it
    Corr("big_upload", "value_sum", ("transfer",), 300, {"User": {"transfer": "User"}}, "gte", 1000, "Bytes"),
    Corr("average_upload", "value_avg", ("transfer",), 300, {"User": {"transfer": "User"}}, "gt", 150.5, "Bytes"),
    Corr("upload_p90", "value_percentile", ("transfer",), 300, {"User": {"transfer": "User"}}, "gte", 400, "Bytes",
         90),
    Corr("median_upload", "value_median", ("transfer",), 600, {}, "lt", 300, "Bytes"),
    Corr("logins", "event_count", ("login",), 300, {"User": {"login": "User"}}, "gte", 2),
]


def _ts(t: float) -> str:
    return dt.datetime.fromtimestamp(BASE + t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _events() -> list[dict]:
    return [{"EventID": EVENT_ID[rule], **fields, "ts": _ts(t)} for t, rule, fields in ALERTS] + [CLOSER]


@pytest.fixture(scope="module")
def outputs(spark, tmp_path_factory):
    return run_events(spark, tmp_path_factory.mktemp("values"), PIPELINE, {"logs": _events()}, allow_paths=(RULES,))


def test_numeric_correlations_sum_average_and_percentiles_exactly(outputs):
    got = sorted(({k: canon(r[k]) for k in ("rule", "correlation_type", "group", "window_start", "value",
                                             "rules_seen")} for r in outputs["out"]),
                 key=lambda r: (r["rule"], r["window_start"], sorted(r["group"].items())))
    w0, w5, w10 = _ts(0), _ts(300), _ts(600)
    assert got == [
        {"rule": "average_upload", "correlation_type": "value_avg", "group": {"User": "alice"}, "window_start": w0,
         "value": 350.0, "rules_seen": ["transfer"]},
        {"rule": "average_upload", "correlation_type": "value_avg", "group": {"User": "carol"}, "window_start": w5,
         "value": 500.0, "rules_seen": ["transfer"]},
        {"rule": "average_upload", "correlation_type": "value_avg", "group": {"User": "erin"}, "window_start": w10,
         "value": 500.0, "rules_seen": ["transfer"]},
        {"rule": "big_upload", "correlation_type": "value_sum", "group": {"User": "alice"}, "window_start": w0,
         "value": 1050.0, "rules_seen": ["transfer"]},
        {"rule": "big_upload", "correlation_type": "value_sum", "group": {"User": "carol"}, "window_start": w5,
         "value": 1000.0, "rules_seen": ["transfer"]},
        {"rule": "logins", "correlation_type": "event_count", "group": {"User": "alice"}, "window_start": w0,
         "value": 2.0, "rules_seen": ["login"]},
        {"rule": "median_upload", "correlation_type": "value_median", "group": {}, "window_start": w0,
         "value": 200.0, "rules_seen": ["transfer"]},  # 50 100 101 [200] 300 700 900
        {"rule": "upload_p90", "correlation_type": "value_percentile", "group": {"User": "alice"},
         "window_start": w0, "value": 740.0, "rules_seen": ["transfer"]},  # 50 100 900: 100 + 0.8 x 800
        {"rule": "upload_p90", "correlation_type": "value_percentile", "group": {"User": "carol"},
         "window_start": w5, "value": 660.0, "rules_seen": ["transfer"]},
        {"rule": "upload_p90", "correlation_type": "value_percentile", "group": {"User": "erin"},
         "window_start": w10, "value": 500.0, "rules_seen": ["transfer"]},
    ]
    oracle = correlate([(BASE + t, r, f) for t, r, f in ALERTS], CORRS)
    assert [{k: r[k] for k in ("rule", "group", "window_start", "value")} for r in got] == \
        [{k: r[k] for k in ("rule", "group", "window_start", "value")} for r in oracle]


def test_rules_only_generate_false_correlations_reference_emit_no_alert_nor_tag(outputs):
    # transfer: only correlations with generate: false reference it; login: `Logins` says generate: true
    alerts = sorted((canon(r["ts"]), r["rule"], r["User"]) for r in outputs["alerts_out"])
    assert alerts == [(_ts(50), "login", "alice"), (_ts(60), "login", "alice"), (_ts(70), "login", "bob"),
                      (_ts(80), "other", "zed")]
    tags = sorted((canon(r["ts"]), r["EventID"], list(r["matched_rules"])) for r in outputs["tags_out"])
    assert tags == sorted([(_ts(t), EVENT_ID[rule], [] if rule == "transfer" else [rule]) for t, rule, _ in ALERTS]
                          + [(canon(CLOSER["ts"]), 9, [])])
