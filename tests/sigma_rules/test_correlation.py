"""Sigma correlation rules in `etl validate` and `etl explain`: positioned warnings for what cannot run, the
sigma_correlation transform's checks, and the windows each correlation became."""

from __future__ import annotations

import textwrap
from pathlib import Path

from etl.check import check_file
from etl.diagnostics import Report
from etl.load.sigma_parse import parse_text
from etl.plan import build_plan
from etl.plan.explain import explain_plan

RULES = Path(__file__).resolve().parents[1] / "fixtures" / "sigma" / "correlation"

PIPELINE = """
name: corr
sources:
  - id: logs
    type: file
    path: in
    format: jsonl
    schema: {EventID: int, User: string, TargetUser: string, IpAddress: string, Computer: string, ts: timestamp}
    event_time: {field: ts, watermark: 10s}
transforms:
  - {id: alerts, type: filter, input: logs, mode: MODE, sigma: {paths: [PATHS]}}
  - {id: corr, type: sigma_correlation, input: alerts SLIDES}
sinks:
  - {id: out, type: file, input: corr, path: out}
"""


def _check(tmp_path: Path, paths: str = str(RULES), mode: str = "alerts", slides: str = "", text: str = PIPELINE):
    p = tmp_path / "p.yaml"
    p.write_text(text.replace("PATHS", paths).replace("MODE", mode).replace(" SLIDES", slides))
    return check_file(p, allow_paths=[RULES])  # the rules are read where they are (--allow-path)


def _rendered(c) -> list[str]:
    return [d.render().splitlines()[0] for d in c.report.sorted()]


def test_the_four_correlations_validate_and_explain_their_windows(tmp_path):
    c = _check(tmp_path, slides=", slides: 4")
    assert _rendered(c) == []
    text = explain_plan(build_plan(c.graph, Report(), programs=True))
    assert ("    sigma: 3 rules loaded from 2 files, 0 skipped by selection, 0 unsupported, 6 correlation rules\n"
            "    alerts of failed_logon, new_service, successful_logon: correlation input only, not emitted (no "
            "correlation rule referencing them says `generate: true`)\n") in text
    assert text[text.index("  corr (sigma"):text.index("sinks:")] == textwrap.indent(textwrap.dedent("""\
      corr (sigma_correlation) <- alerts
        windows of each correlation's timespan, 4 per timespan (sliding)
        correlation rules: 6 (of filter 'alerts')
        correlations (event_count, level high): rules failed_logon; sliding 5m windows every 1m15s by
            User; value = count of alert rows; alert when value >= 3
          state: one row per User value and open window (4 per event), dropped when the watermark passes
            the window's end: the User values of about 5m + 10s of events, however many (nothing caps
            them)
        correlations_1 (value_count, level high): rules failed_logon; sliding 5m windows every 1m15s by
            IpAddress; value = distinct values of User; alert when value > 2
          state: one row per IpAddress value and open window (4 per event), each with its distinct User
            values, dropped when the watermark passes the window's end: the IpAddress values of about 5m
            + 10s of events, however many (nothing caps them)
        correlations_2 (temporal, level medium): rules failed_logon, successful_logon; sliding 5m
            windows every 1m15s by account (failed_logon: User, successful_logon: TargetUser); value =
            distinct rules seen; alert when value >= 2
          state: one row per account value and open window (4 per event), dropped when the watermark
            passes the window's end: the account values of about 5m + 10s of events, however many
            (nothing caps them)
        correlations_3 (temporal_ordered, level critical): rules successful_logon -> new_service;
            sliding 10m windows every 2m30s by Computer; value = rules seen in order; alert when value
            >= 2
          state: one row per Computer value and open window (4 per event), dropped when the watermark
            passes the window's end: the Computer values of about 10m + 10s of events, however many
            (nothing caps them)
        correlations_4 (temporal_ordered, level high): rules failed_logon -> successful_logon ->
            new_service; sliding 10m windows every 2m30s by Computer; value = rules seen in order; alert
            when value >= 2
          state: one row per Computer value and open window (4 per event), dropped when the watermark
            passes the window's end: the Computer values of about 10m + 10s of events, however many
            (nothing caps them)
        correlations_5 (event_count, level low): rules new_service; sliding 10m windows every 2m30s;
            value = count of alert rows; alert when value <= 2
          state: one row per open window (4 per event), dropped when the watermark passes its end
        columns: rule:string, rule_id:string, rule_title:string, rule_level:string,
          rule_tags:array<string>, correlation_type:string, group:map<string,string>,
          window_start:timestamp, window_end:timestamp, value:double, rules_seen:array<string>

    """), "  ")
    assert "  corr: spark-stream - in the streaming plan (state in RocksDB)" in _physical(c)


def _physical(c) -> str:
    from etl.physical import Target, physical_plan
    from etl.physical.explain import explain_physical

    return explain_physical(physical_plan(c.plan, Target()))


BAD = """\
title: Unknown Rule
correlation:
    type: event_count
    rules:
        - failed_logon
        - no_such_rule
    timespan: 5m
    condition:
        gte: 3
---
title: Boolean Condition
correlation:
    type: temporal
    rules: [failed_logon, successful_logon]
    timespan: 5m
    condition: failed_logon and not successful_logon
---
title: Percentile
correlation:
    type: value_percentile
    rules: [failed_logon]
    timespan: 5m
    condition: {gte: 3, field: User}
---
title: No Timespan
correlation:
    type: event_count
    rules: [failed_logon]
    condition: {gte: 3}
---
title: Half Alias
correlation:
    type: temporal
    rules: [failed_logon, successful_logon]
    group-by: [account]
    aliases:
        account:
            failed_logon: User
    timespan: 5m
---
title: Skipped Rule
correlation:
    type: event_count
    rules: [new_service]
    timespan: 5m
    condition: {gte: 1}
---
title: Too Long
correlation:
    type: event_count
    rules: [failed_logon]
    timespan: 400d
    condition: {gte: 1}
---
title: Absent Field
correlation:
    type: event_count
    rules: [failed_logon]
    group-by: [Workstation]
    timespan: 5m
    condition: {gte: 1}
"""


def test_bad_correlations_are_named_at_their_place_in_the_rule_file(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(BAD)
    p = tmp_path / "p.yaml"
    p.write_text(PIPELINE.replace("PATHS", f"'{RULES}/logons.yml', '{bad}'").replace("MODE", "alerts")
                 .replace(" SLIDES", "").replace("sigma: {", "sigma: {select: {service: security}, "))
    c = check_file(p, allow_paths=[RULES])
    assert _rendered(c) == [
        f"{bad}:6:11: W340 warning Sigma correlation rule 'Unknown Rule' skipped: referenced rule 'no_such_rule' "
        "is not among the filter's Sigma rules (a rule's `id` or `name`)",
        f"{bad}:16:5: W340 warning Sigma correlation rule 'Boolean Condition' skipped: an extended (boolean) "
        "correlation condition is not supported: only gt, gte, lt, lte, eq, neq with a count",
        f"{bad}:23:5: W340 warning Sigma correlation rule 'Percentile' skipped: value_percentile needs a "
        "`percentile` from 0 to 100 in its condition (e.g. percentile: 95)",
        f"{bad}:26:1: W340 warning Sigma correlation rule 'No Timespan' skipped: pySigma cannot read the "
        "correlation rule: Sigma correlation rule without timespan",
        f"{bad}:37:9: W340 warning Sigma correlation rule 'Half Alias' skipped: alias 'account' names no field "
        "for rule 'successful_logon'",
        f"{bad}:44:13: W340 warning Sigma correlation rule 'Skipped Rule' skipped: referenced rule 'new_service' "
        "is not loaded: skipped by `select`",
        f"{bad}:52:5: W340 warning Sigma correlation rule 'Too Long' skipped: timespan 400d is longer than etl's "
        "windows take (at most 365d)",
        f"{bad}:59:16: W341 warning Sigma correlation rule 'Absent Field' (sigma_correlation 'corr') reads "
        "'Workstation' that the events do not have: it is left out",
    ]
    stats = c.graph.sigma["alerts"]
    assert (stats.loaded, stats.skipped, stats.unsupported) == (2, 1, 7)
    assert stats.correlations == []  # the one that resolved reads an absent column


def test_a_correlation_reads_the_alerts_of_a_sigma_filter_with_event_time(tmp_path):
    c = _check(tmp_path, mode="tag")
    assert _rendered(c) == [f"{tmp_path}/p.yaml:12:48: E203 sigma_correlation 'corr' reads 'alerts', which is "
                            "not a filter with `sigma` in alerts mode"]
    c = _check(tmp_path, text=PIPELINE.replace("    event_time: {field: ts, watermark: 10s}\n", ""))
    assert _rendered(c) == [f"{tmp_path}/p.yaml:11:5: E320 sigma_correlation 'corr' uses event time, but no "
                            "event time is defined upstream"]


def test_each_document_of_a_file_has_its_own_positions_and_names_give_rule_ids():
    entries = parse_text((RULES / "logons.yml").read_text(), "logons.yml")
    assert [(e.line, e.name, e.positions[1]) for e in entries] == [
        (1, "failed_logon", (("selection", "EventID"), 8, 9)),
        (12, "successful_logon", (("selection", "EventID"), 19, 9)),
        (23, "new_service", (("selection", "EventID"), 30, 9)),
    ]


def test_correlations_of_a_filter_no_sigma_correlation_reads_are_named(tmp_path):
    text = PIPELINE.replace("  - {id: corr, type: sigma_correlation, input: alerts SLIDES}\n", "")
    c = _check(tmp_path, text=text.replace("input: corr", "input: alerts"))
    assert _rendered(c) == [
        f"{RULES}/correlations.yml:{line}:1: W340 warning Sigma correlation rule '{title}' does not run: no "
        "sigma_correlation transform reads filter 'alerts'"
        for line, title in ((1, "Brute Force"), (16, "Password Spraying"), (29, "Logon After Failures"),
                            (46, "Service After Logon"), (59, "Failure Logon Service"),
                            (71, "Few Services"))]


def test_an_alert_column_named_like_a_working_column_is_refused(tmp_path):
    """sigma_correlation computes with _g0.., _t0.., _field ...: an input column of such a name would be replaced
    (a silently different group or value), so validate refuses it at the input."""
    text = PIPELINE.replace("ts: timestamp}", "ts: timestamp, _g0: string, _Field: string}")
    c = _check(tmp_path, text=text)
    assert [(d.code, d.span.line, d.span.col) for d in c.report.errors] == [("E102", 12, 48), ("E102", 12, 48)]
    assert sorted(d.message for d in c.report.errors) == [
        f"column '{name}' of the alerts sigma_correlation 'corr' reads is a name it computes with (_g0.., _t0.., "
        "_field, _value, _values, _seen): its value would be replaced" for name in ("_Field", "_g0")]
