"""`etl run` without java/lib's connector jars has Spark's Ivy fetch them (spark.jars.packages): offline with an
empty Ivy cache, the run stops with one E407 line at the kafka source, no JVM stack (etl.runtime.packages). The
launcher exits while resolving: no Spark session starts (about 3 s)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from etl.spec.sources import KAFKA_JARS

pytestmark = pytest.mark.spark

PIPELINE = """\
name: fetch
sources:
  - id: events
    type: kafka
    bootstrap_servers: 127.0.0.1:9
    topics: [t]
    format: text
sinks:
  - {id: out, type: print, inputs: [events]}
"""
# one resolver, a closed port on this machine: neither Maven Central nor ~/.m2 (the default chain) is asked
IVY_SETTINGS = """\
<ivysettings>
  <settings defaultResolver="dead"/>
  <resolvers><ibiblio name="dead" m2compatible="true" root="http://127.0.0.1:9/maven2/"/></resolvers>
</ivysettings>
"""


def test_offline_with_an_empty_ivy_cache_is_one_e407_line_at_the_kafka_source(tmp_path) -> None:
    (tmp_path / "p.yaml").write_text(PIPELINE)
    (tmp_path / "ivysettings.xml").write_text(IVY_SETTINGS)
    env = {k: v for k, v in os.environ.items() if k != "ETL_NO_SPARK"}
    env.update(ETL_JAVA_LIB=str(tmp_path / "no-lib"), ETL_IVY_DIR=str(tmp_path / "ivy"))
    r = subprocess.run([sys.executable, "-m", "etl", "run", "p.yaml", "--once", "--checkpoint", "ck",
                        "--conf", f"spark.jars.ivySettings={tmp_path / 'ivysettings.xml'}"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    coords, ivy = ", ".join(KAFKA_JARS), tmp_path / "ivy"
    # Ivy's own first line goes to the launcher's stdout (spark-submit --packages prints it too)
    assert (r.returncode, r.stdout) == (1, f":: loading settings :: file = {tmp_path / 'ivysettings.xml'}\n")
    assert r.stderr.splitlines() == [
        f"p.yaml:4:11: E407 kafka source 'events': Spark could not fetch {coords} from Maven Central (offline, and "
        f"not in the Ivy cache {ivy})",
        f"    hint: run once where Maven Central is reachable (the jars stay in {ivy}), or set ETL_JAVA_LIB to a "
        f"folder whose spark/ holds the jars of {coords} (scripts/setup-java.sh), or pass --conf "
        "spark.jars.repositories=<your Maven mirror>"]
