"""A hot reload of a filter's Sigma files read by a sigma_correlation logs each warning once: the filter's reload
(etl.compile.rule_programs) and the correlations' (etl.compile.sigma_reload) read the same files."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from etl.check import check_file
from etl.compile.context import CompileContext
from etl.compile.rule_programs import rule_set
from etl.compile.sigma_reload import correlation_set
from tests.sigma_rules.test_correlation_reload import PIPELINE, RULE

UNSUPPORTED = """\
title: Same User As Parent
name: same_user
logsource: {product: windows, service: security}
detection:
    selection:
        User|fieldref|startswith: Computer
    condition: selection
"""


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    st = path.stat()  # a new mtime even within the clock's resolution: the reload sees the change
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_a_broken_sigma_file_is_logged_once_per_reload(tmp_path, caplog):
    (tmp_path / "rules").mkdir()
    logons = tmp_path / "rules" / "logons.yml"
    _write(logons, RULE)
    p = tmp_path / "p.yaml"
    p.write_text(PIPELINE)
    c = check_file(p, programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    ctx = CompileContext(None, c.graph, plan=c.plan)
    rs, cs = rule_set(ctx, c.graph.node("alerts")), correlation_set(ctx, c.graph.node("corr"))
    caplog.set_level(logging.WARNING, logger="etl.rules")

    _write(logons, RULE.replace("    condition: selection\n", "    condition: [selection\n"))  # YAML error
    _write(tmp_path / "rules" / "same_user.yml", UNSUPPORTED)
    assert rs.refresh() is False and cs.refresh() is False  # the rules and correlations stay as they were
    assert rs.history == ["unchanged"] and cs.history == ["unchanged"]
    warned = [r.getMessage() for r in caplog.records if "W340" in r.getMessage()]
    assert len(warned) == 2, warned
    assert warned[0] == (f"filter 'alerts': {logons}:8:1: W340 warning changed Sigma file cannot be read, its "
                         "previous version stays in force: YAML error: while parsing a flow sequence\n"
                         "    hint: fix the file")
    assert warned[1] == (
        f"filter 'alerts': {tmp_path}/rules/same_user.yml:6:9: W340 warning Sigma rule 'Same User As Parent' "
        "skipped: fieldref with startswith, endswith or contains (field 'User' with field 'Computer') is not "
        "supported: only equality\n    hint: the filter runs without it")

    caplog.clear()  # the next change of the files: its warning again, once, by the first to reload
    _write(tmp_path / "rules" / "same_user.yml", UNSUPPORTED.replace("Same User As Parent", "Same User"))
    assert cs.refresh() is False and rs.refresh() is False
    assert [r.getMessage() for r in caplog.records if "W340" in r.getMessage()] == [
        f"sigma_correlation 'corr': {tmp_path}/rules/same_user.yml:6:9: W340 warning Sigma rule 'Same User' "
        "skipped: fieldref with startswith, endswith or contains (field 'User' with field 'Computer') is not "
        "supported: only equality\n    hint: the filter runs without it"]
