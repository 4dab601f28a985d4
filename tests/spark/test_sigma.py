"""Sigma rules in a Spark pipeline: tag mode with rule metadata, alerts mode routed by level."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spark.helpers import run_events

pytestmark = pytest.mark.spark

RULES = Path(__file__).resolve().parents[1] / "fixtures" / "sigma" / "rules"

PIPELINE = f"""
    name: t-sigma
    sources: [{{id: procs, type: file, path: in, format: jsonl,
               schema: {{host: string, Image: string, CommandLine: string, ParentImage: string, User: string}}}}]
    transforms:
      - id: tagged
        type: filter
        input: procs
        mode: tag
        sigma: {{paths: ['{RULES}'], select: {{product: windows, category: process_creation}}}}
      - id: alerts
        type: filter
        input: procs
        mode: alerts
        sigma: {{paths: ['{RULES}/whoami.yml', '{RULES}/encoded_powershell.yml']}}
      - id: by_level
        type: route
        input: alerts
        routes: {{critical: "rule_level = 'critical'"}}
        default: other
    sinks:
      - {{id: tagged_out, type: file, input: tagged, path: o1}}
      - {{id: critical_out, type: file, input: by_level.critical, path: o2}}
      - {{id: other_out, type: file, input: by_level.other, path: o3}}
"""

EVENTS = [
    {"host": "h1", "Image": "C:\\Windows\\System32\\WHOAMI.EXE", "CommandLine": "whoami /all",
     "ParentImage": "C:\\Windows\\System32\\cmd.exe", "User": "CORP\\bob"},
    {"host": "h2", "Image": "C:\\Windows\\powershell.exe", "CommandLine": "PowerShell -NoP -Enc SQBFAFgA",
     "ParentImage": "C:\\Office\\WINWORD.EXE", "User": "CORP\\bob"},
    {"host": "h3", "Image": "C:\\Windows\\powershell.exe", "CommandLine": "powershell -enc SQBFAFgA",
     "ParentImage": "C:\\Office\\WINWORD.EXE", "User": "corp\\ADMIN"},  # the filter_admin exclusion (caseless)
    {"host": "h4", "Image": "C:\\Windows\\notepad.exe", "CommandLine": "notepad a.txt",
     "ParentImage": "C:\\Windows\\explorer.exe", "User": "CORP\\bob"},
]

WHOAMI = {"rule": "whoami", "id": "0e6a6f11-0000-4000-8000-000000000001", "title": "Whoami Execution",
          "level": "high", "tags": ["attack.discovery", "attack.t1033"]}
ENCODED = {"rule": "encoded_powershell", "id": "0e6a6f11-0000-4000-8000-000000000002",
           "title": "Encoded PowerShell From Office's Apps \\ Macros", "level": "critical",
           "tags": ["attack.execution"]}


@pytest.mark.parametrize("rules_jvm", ["on", "off"])
def test_sigma_rules_tag_events_and_alerts_route_by_level(spark, tmp_path, monkeypatch, rules_jvm):
    monkeypatch.setenv("ETL_RULES_JVM", rules_jvm)
    out = run_events(spark, tmp_path, PIPELINE, {"procs": EVENTS}, allow_paths=(RULES,))
    tagged = {r["host"]: r["matched_rules"] for r in out["tagged_out"]}
    assert tagged == {"h1": [WHOAMI], "h2": [ENCODED], "h3": [], "h4": []}
    alert_cols = {"rule", "rule_id", "rule_title", "rule_level", "rule_tags"}
    assert [(r["host"], r["rule"], r["rule_id"], r["rule_title"], r["rule_level"], r["rule_tags"])
            for r in out["critical_out"]] == [("h2", "encoded_powershell", ENCODED["id"], ENCODED["title"],
                                               "critical", ["attack.execution"])]
    assert [(r["host"], r["rule"], r["rule_level"]) for r in out["other_out"]] == [("h1", "whoami", "high")]
    assert set(out["other_out"][0]) == {"host", "Image", "CommandLine", "ParentImage", "User"} | alert_cols
