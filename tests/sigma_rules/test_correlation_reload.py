"""Which changes of a running sigma_correlation's correlation rules apply at the next micro-batch and which
need a restart (etl.load.sigma_corr.needs_restart; the running query: tests/spark/test_sigma_correlation_reload.py)."""

from __future__ import annotations

from pathlib import Path

from etl.check import check_file
from etl.load.sigma_corr import needs_restart

PIPELINE = """
name: corr-reload
sources:
  - id: logs
    type: file
    path: in
    format: jsonl
    schema: {EventID: int, User: string, Computer: string, ts: timestamp}
    event_time: {field: ts, watermark: 10s}
transforms:
  - {id: alerts, type: filter, input: logs, mode: alerts, sigma: {paths: [rules]}}
  - {id: corr, type: sigma_correlation, input: alerts}
sinks:
  - {id: out, type: file, input: corr, path: out}
"""

RULE = """\
title: Failed Logon
name: failed_logon
logsource: {product: windows, service: security}
detection:
    selection:
        EventID: 4625
    condition: selection
---
title: Brute Force
name: brute_force
correlation:
    type: event_count
    rules: [failed_logon]
    group-by: [User]
    timespan: 5m
    condition: {gte: 3}
level: high
"""
SECOND = """\
---
title: Many Hosts
name: many_hosts
correlation:
    type: value_count
    rules: [failed_logon]
    timespan: 5m
    condition: {gte: 3, field: Computer}
"""


def _correlations(tmp_path: Path, text: str) -> list:
    (tmp_path / "rules").mkdir(exist_ok=True)
    (tmp_path / "rules" / "logons.yml").write_text(text)
    p = tmp_path / "p.yaml"
    p.write_text(PIPELINE)
    c = check_file(p)
    assert [d.render() for d in c.report.sorted()] == []
    return list(c.graph.sigma["alerts"].correlations)


def test_a_changed_condition_title_or_level_and_a_removed_correlation_apply(tmp_path):
    old = _correlations(tmp_path, RULE + SECOND)
    new = _correlations(tmp_path, RULE.replace("gte: 3", "gt: 10").replace("Brute Force", "Brute Force 2")
                        .replace("level: high", "level: critical"))
    assert [(c.rule, c.op, c.count, c.title, c.level) for c in new] == [("brute_force", "gt", 10, "Brute Force 2",
                                                                          "critical")]
    assert needs_restart(old, new) == []


def test_a_new_window_state_needs_a_restart_and_names_its_place(tmp_path):
    old = _correlations(tmp_path, RULE)
    f = str(tmp_path / "rules" / "logons.yml")
    assert needs_restart(old, _correlations(tmp_path, RULE.replace("timespan: 5m", "timespan: 10m"))) == [
        (f, 15, 5, "Sigma correlation rule 'Brute Force' (brute_force) changed its timespan (5m -> 10m): that "
                   "changes the windowed state and needs a restart")]
    assert needs_restart(old, _correlations(tmp_path, RULE.replace("group-by: [User]", "group-by: [Computer]"))) == [
        (f, 14, 5, "Sigma correlation rule 'Brute Force' (brute_force) changed its group-by ([User] -> [Computer]): "
                   "that changes the windowed state and needs a restart")]
    assert needs_restart(old, _correlations(tmp_path, RULE.replace("type: event_count", "type: value_count")
                                            .replace("gte: 3}", "gte: 3, field: Computer}"))) == [
        (f, 12, 5, "Sigma correlation rule 'Brute Force' (brute_force) changed its type (event_count -> "
                   "value_count): that changes the windowed state and needs a restart")]
    assert needs_restart(old, _correlations(tmp_path, RULE + SECOND)) == [
        (f, 19, 1, "Sigma correlation rule 'Many Hosts' (many_hosts) is new: a correlation added while running "
                   "needs a restart (a windowed state of its own)")]

