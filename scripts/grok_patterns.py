#!/usr/bin/env python3
"""Bring Logstash's grok pattern libraries into etl, reproducibly: etl/grok_patterns/{legacy,ecs-v1}/.

    .venv/bin/python scripts/grok_patterns.py            # resolve the jar with mvn (java/pom.xml, profile grok)
    .venv/bin/python scripts/grok_patterns.py --check    # exit 1 if etl/grok_patterns differs from the jar

The libraries come from Maven Central's org.elasticsearch:elasticsearch-grok (its version is java/pom.xml's
`elasticsearch.grok.version`), which ships logstash-plugins/logstash-patterns-core's pattern files (Apache-2.0)
as patterns/legacy/* and patterns/ecs-v1/*. The text files are committed (etl reads them without a JVM);
tests/unit/test_grok_library.py checks that they are the jar's.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POM = ROOT / "java" / "pom.xml"
OUT = ROOT / "etl" / "grok_patterns"
LIBRARIES = ("legacy", "ecs-v1")
ARTIFACT = "org.elasticsearch:elasticsearch-grok"
# Where Elasticsearch's copy of ecs-v1 garbled Logstash's field references when it rewrote [a][b] as a.b, the
# text Logstash's own file means (logstash-patterns-core, patterns/ecs-v1): (file, as in the jar, fixed, count)
FIXUPS = (
    ("ecs-v1/firewalls", r"\%{DATA:[@metadata.cisco.asa.hashcode1}", r"\[%{DATA:@metadata.cisco.asa.hashcode1}", 3),
    ("ecs-v1/firewalls", "%{DATA:source.user.name?}", "%{DATA:source.user.name}", 1),
    ("ecs-v1/firewalls", r"\\s*%{DATA:[cisco.asa.burst.object}", r"\[\s*%{DATA:cisco.asa.burst.object}", 1),
    ("ecs-v1/httpd", "%{POSINT:apache.error.proxy.error.code?}", "%{POSINT:apache.error.proxy.error.code}", 1),
    # and where the rewrite took a bracket expression's or an escaped bracket's [ ] for a field reference's
    # (found by tests/fixtures/grok/pattern_cases.yaml: joni rejects S3_ACCESS_LOG and EXIM; the others matched
    # other lines than Logstash's: [^@]* read as ^@*, [A-Fa-f0-9]{2} as the text A-Fa-f0-9, [\s,] as \s,)
    ("ecs-v1/aws", "(?::^@*)?@", "(?::[^@]*)?@", 1),
    ("ecs-v1/aws", r"\%{HTTPDATE:timestamp}\ ", r"\[%{HTTPDATE:timestamp}\] ", 1),
    ("ecs-v1/exim", r"\%{IP:source.ip}\]", r"\[%{IP:source.ip}\]", 1),
    ("ecs-v1/firewalls", "(?::A-Fa-f0-9{2}:A-Fa-f0-9{2})?", "(?::[A-Fa-f0-9]{2}:[A-Fa-f0-9]{2})?", 1),
    ("ecs-v1/zeek", r"(?:\s,%{IP})+", r"(?:[\s,]%{IP})+", 2),
)
NOTICE = ("Grok pattern files of logstash-plugins/logstash-patterns-core (Apache License 2.0,\n"
          "https://github.com/logstash-plugins/logstash-patterns-core), as shipped in {artifact}:{version}\n"
          "(Maven Central: patterns/legacy/*, patterns/ecs-v1/*), extracted by scripts/grok_patterns.py, which\n"
          "restores 12 places of ecs-v1 that Elasticsearch's copy garbled (its FIXUPS).\n")


def version() -> str:
    m = re.search(r"<elasticsearch\.grok\.version>([^<]+)<", POM.read_text())
    if m is None:
        raise SystemExit(f"{POM}: no elasticsearch.grok.version property")
    return m.group(1)


def jar_path(v: str | None = None) -> Path:
    """Where Maven keeps the jar (MAVEN_OPTS=-Dmaven.repo.local=DIR moves the repository, as in setup-java.sh)."""
    v = v or version()
    m = re.search(r"-Dmaven\.repo\.local=(\S+)", os.environ.get("MAVEN_OPTS", ""))
    repo = Path(m.group(1)) if m else Path.home() / ".m2" / "repository"
    return repo / "org" / "elasticsearch" / "elasticsearch-grok" / v / f"elasticsearch-grok-{v}.jar"


def resolve() -> Path:
    jar = jar_path()
    if not jar.is_file():
        subprocess.run(["mvn", "-q", "-B", "-s", str(ROOT / "java" / "settings.xml"), "-f", str(POM), "-P", "grok",
                        "dependency:resolve"], check=True)
    return jar


def files_in(jar: Path) -> dict[str, bytes]:
    """'<library>/<file>' -> content, for every pattern file of both libraries in the jar."""
    out: dict[str, bytes] = {}
    with zipfile.ZipFile(jar) as zf:
        for name in zf.namelist():
            parts = name.split("/")
            if len(parts) == 3 and parts[0] == "patterns" and parts[1] in LIBRARIES and parts[2]:
                out[f"{parts[1]}/{parts[2]}"] = zf.read(name)
    return out


def expected(jar: Path) -> dict[str, bytes]:
    """Every file etl/grok_patterns should hold, relative path -> content."""
    v = version()
    out = files_in(jar)
    for rel, old, new, count in FIXUPS:
        text = out[rel].decode("utf-8")
        if text.count(old) != count:
            raise SystemExit(f"{rel}: expected {count} x {old!r}, found {text.count(old)} (a new version: review FIXUPS)")
        out[rel] = text.replace(old, new).encode("utf-8")
    out["VERSION"] = f"{ARTIFACT}:{v}\n".encode()
    out["NOTICE"] = NOTICE.format(artifact=ARTIFACT, version=v).encode()
    return out


def present() -> dict[str, bytes]:
    return {str(p.relative_to(OUT)): p.read_bytes() for p in sorted(OUT.rglob("*")) if p.is_file()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare only")
    args = ap.parse_args()
    want = expected(resolve())
    if args.check:
        have = present()
        bad = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
        for k in bad:
            print(f"differs: etl/grok_patterns/{k}", file=sys.stderr)
        return 1 if bad else 0
    shutil.rmtree(OUT, ignore_errors=True)
    for rel, data in want.items():
        (OUT / rel).parent.mkdir(parents=True, exist_ok=True)
        (OUT / rel).write_bytes(data)
    print(f"{len(want) - 2} pattern files of {ARTIFACT}:{version()} in {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
