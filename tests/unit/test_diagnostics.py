"""Diagnostic codes are catalogued; rendering and did-you-mean."""
import re
from pathlib import Path

from etl.diagnostics import CODES, Diagnostic, Report, Severity, Span, did_you_mean

ROOT = Path(__file__).resolve().parents[2]
VALIDATION_MODULES = ["etl/load", "etl/spec", "etl/graph", "etl/plan", "etl/check.py", "etl/grok.py",
                      "etl/commands/validate.py", "etl/commands/explain.py", "etl/commands/schema.py"]


def test_every_code_used_by_validation_is_catalogued():
    used = set()
    for entry in VALIDATION_MODULES:
        path = ROOT / entry
        for f in ([path] if path.is_file() else path.rglob("*.py")):
            used |= set(re.findall(r'"([EW]\d{3})"', f.read_text()))
    assert used <= set(CODES), sorted(used - set(CODES))
    assert all(re.fullmatch(r"[EW]\d{3}", c) for c in CODES)


def test_render_and_json():
    d = Diagnostic("E310", "unknown column 'x'", Span("p.yaml", 3, 7), hint="did you mean 'y'?")
    assert d.render() == "p.yaml:3:7: E310 unknown column 'x'\n    hint: did you mean 'y'?"
    w = Diagnostic("W204", "source 'a' is not used", Span("p.yaml", 1, 1), Severity.WARNING)
    assert w.render() == "p.yaml:1:1: W204 warning source 'a' is not used"
    assert d.to_json()["line"] == 3 and w.to_json()["severity"] == "warning"


def test_report_sorted_dedup_strict():
    r = Report()
    r.warning("W204", "b", Span("f", 5, 1))
    r.error("E100", "a", Span("f", 2, 3))
    r.error("E100", "a", Span("f", 2, 3))
    assert [d.code for d in r.sorted()] == ["E100", "W204"]
    assert len(r.diagnostics) == 2
    r2 = Report()
    r2.warning("W204", "b", Span("f", 5, 1))
    assert not r2.has_errors() and r2.has_errors(strict=True)


def test_did_you_mean():
    assert did_you_mean("stauts", ["status", "host"]) == "did you mean 'status'?"
    assert did_you_mean("HOST", ["host"]) == "did you mean 'host'?"
    assert did_you_mean("zzz", ["status"]) is None
