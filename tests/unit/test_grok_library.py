"""The grok pattern libraries etl ships (etl/grok_patterns) are exactly Logstash's, as Maven Central's
elasticsearch-grok jar holds them (scripts/grok_patterns.py extracts them; `make setup-java` resolves the jar)."""

from __future__ import annotations

import sys
from pathlib import Path

from etl.grok import LIBRARIES, bundled_patterns, expand, library_version

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts import grok_patterns  # noqa: E402


def test_shipped_libraries_are_the_jars():
    jar = grok_patterns.jar_path()
    assert jar.is_file(), f"{jar} is missing: run `make setup-java` (java/pom.xml, profile grok)"
    want = grok_patterns.expected(jar)
    assert grok_patterns.present() == want
    assert sum(k.startswith("legacy/") for k in want) == 21 and sum(k.startswith("ecs-v1/") for k in want) == 22
    assert library_version() == f"org.elasticsearch:elasticsearch-grok:{grok_patterns.version()}"


def test_libraries_hold_the_current_names():
    legacy, ecs = bundled_patterns("legacy"), bundled_patterns("ecs-v1")
    for name in ("URN", "MAVEN_VERSION", "EXIM_MSGID", "SFW2", "SQUID3", "REDISMONLOG", "HTTPD_COMBINEDLOG", "BIND9",
                 "CLOUDFRONT_ACCESS_LOG", "CISCOFW304001"):
        assert name in legacy and name in ecs, name
    assert len(legacy) == 318 and len(ecs) == 361
    assert set(LIBRARIES) == {"legacy", "ecs-v1"}


def test_library_selection_changes_the_fields():
    assert [c for c, _ in expand("%{SYSLOGBASE}").captures] == ["timestamp", "facility", "priority", "logsource",
                                                                "program", "pid"]
    assert [c for c, _ in expand("%{SYSLOGPROG}", library="ecs-v1").captures] == ["process.name", "process.pid"]


def test_pipeline_default_library_and_per_transform_choice(tmp_path):
    from etl.check import check_file

    f = tmp_path / "p.yaml"
    f.write_text("""
name: gp
grok_patterns: ecs-v1
sources:
  - {id: logs, type: file, path: data/logs, format: text}
transforms:
  - {id: a, type: grok, input: logs, field: line, pattern: "%{SYSLOGPROG}"}
  - {id: b, type: grok, input: logs, field: line, pattern: "%{SYSLOGPROG}", patterns: legacy}
sinks:
  - {id: out, type: print, input: a}
  - {id: out2, type: print, input: b}
""")
    c = check_file(f, environ={})
    assert not c.report.errors
    a, b = (n for n in c.pipeline.transforms if n.id in ("a", "b"))
    assert (a.patterns, b.patterns) == ("ecs-v1", "legacy")
    assert a.explain_lines()[1] == "patterns: ecs-v1 (org.elasticsearch:elasticsearch-grok:8.17.0)"
    assert [c for c, _ in expand("%{SYSLOGPROG}", library=b.patterns).captures] == ["program", "pid"]
