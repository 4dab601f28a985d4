"""Connector jars fetched with spark.jars.packages when java/lib has none (etl.runtime.packages): the coordinates the
components declare agree with java/pom.xml, the launch settings, and E407 when Ivy cannot fetch them."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from etl import registry, settings
from etl.runtime import packages
from etl.spec.sources import KAFKA_JARS, MYSQL_JARS
from tests.unit.helpers import check

POM = Path(__file__).resolve().parents[2] / "java" / "pom.xml"
NS = {"m": "http://maven.apache.org/POM/4.0.0"}

PIPELINE = """
name: jars
sources:
  - id: gen
    type: generator
    rate: 1
    fields: {n: {sequence: 1}}
  - id: events
    type: kafka
    bootstrap_servers: 127.0.0.1:9092
    topics: [t]
    format: text
sinks:
  - id: out
    type: print
    inputs: [events, gen]
"""


def pom_spark_coordinates() -> set[str]:
    """group:artifact:version of the `spark` profile's dependencies, a dependencyManagement pin winning."""
    root = ET.parse(POM).getroot()
    props = {p.tag.split("}")[1]: p.text for p in root.find("m:properties", NS)}
    profile = next(p for p in root.iterfind("m:profiles/m:profile", NS) if p.findtext("m:id", None, NS) == "spark")

    def coords(path: str) -> list[str]:
        out = []
        for d in profile.iterfind(path, NS):
            version = d.findtext("m:version", "", NS)
            if version.startswith("${"):
                version = props[version[2:-1]]
            out.append(f"{d.findtext('m:groupId', '', NS)}:{d.findtext('m:artifactId', '', NS)}:{version}")
        return out

    return set(coords("m:dependencies/m:dependency") + coords("m:dependencyManagement/m:dependencies/m:dependency"))


def test_declared_coordinates_are_java_pom_xmls() -> None:
    declared = {c for kind in registry.KINDS for e in registry.entries(kind).values() for c in e.spec.JARS}
    assert declared == pom_spark_coordinates() == {
        "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
        "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.0.0",
        "org.mariadb.jdbc:mariadb-java-client:3.5.11"}
    assert registry.lookup("source", "kafka").spec.JARS == KAFKA_JARS
    assert registry.lookup("source", "mysql").spec.JARS == MYSQL_JARS
    assert registry.lookup("sink", "kafka").spec.JARS == ()  # confluent-kafka, no JVM


def test_a_pipeline_needs_the_jars_of_its_components(tmp_path) -> None:
    checked = check(tmp_path, PIPELINE)
    assert not checked.report.sorted()
    assert packages.needed(checked.plan.graph) == list(KAFKA_JARS)
    assert packages.needed(check(tmp_path, PIPELINE.replace("events, gen", "gen"), "q.yaml").plan.graph) == list(
        KAFKA_JARS)  # a source is a node even when no sink reads it
    no_kafka = PIPELINE.split("  - id: events")[0] + "sinks:\n  - id: out\n    type: print\n    inputs: [gen]\n"
    assert packages.needed(check(tmp_path, no_kafka, "r.yaml").plan.graph) == []


@pytest.fixture
def ivy(tmp_path, monkeypatch):
    monkeypatch.setenv("ETL_IVY_DIR", str(tmp_path / "ivy"))
    settings.reset()
    yield tmp_path / "ivy"
    settings.reset()


def test_packages_are_fetched_only_without_local_jars_or_the_users_own(ivy) -> None:
    assert packages.launch_conf(KAFKA_JARS, {}, local_jars=True) == {}  # java/lib: today's spark.jars
    assert packages.launch_conf((), {}, local_jars=False) == {}
    assert packages.launch_conf(KAFKA_JARS, {"spark.jars.packages": "a:b:1"}, local_jars=False) == {}
    conf = packages.launch_conf(KAFKA_JARS, {}, local_jars=False)
    assert conf == {"spark.jars.packages": ",".join(KAFKA_JARS), "spark.jars.ivy": str(ivy),
                    "spark.jars.excludes": ",".join(packages.EXCLUDES)}
    assert packages.launch_conf(KAFKA_JARS, {"spark.jars.ivy": "/x"}, False)["spark.jars.ivy"] == "/x"
    assert "org.apache.hadoop:*" in packages.EXCLUDES and "org.slf4j:*" in packages.EXCLUDES


def test_a_failed_launch_is_jars_unavailable_only_when_ivy_did_not_fetch_them(tmp_path) -> None:
    launch = {"spark.jars.packages": ",".join(KAFKA_JARS), "spark.jars.ivy": str(tmp_path)}
    with pytest.raises(packages.JarsUnavailable) as e:
        packages.check_launch(launch)
    assert e.value.packages == list(KAFKA_JARS)
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "org.apache.spark_spark-sql-kafka-0-10_2.13-4.2.0.jar").write_bytes(b"PK")
    with pytest.raises(packages.JarsUnavailable) as e:
        packages.check_launch(launch)
    assert e.value.packages == [KAFKA_JARS[1]]
    # Ivy's conflict manager evicts the pinned 4.0.0 for the 4.2.0 the connector asks for: fetched all the same
    (tmp_path / "jars" / "org.apache.spark_spark-token-provider-kafka-0-10_2.13-4.2.0.jar").write_bytes(b"PK")
    packages.check_launch(launch)  # fetched: the launcher failed for another reason (raised as it was)
    packages.check_launch({})  # nothing to fetch (java/lib, or a joined session)


def test_jars_unavailable_is_one_e407_line_at_the_component(tmp_path) -> None:
    checked = check(tmp_path, PIPELINE)
    err = packages.JarsUnavailable(list(KAFKA_JARS), tmp_path / "ivy")
    assert packages.jars_fault(checked.plan.graph, err).diagnostic().render().splitlines() == [
        f"{tmp_path / 'p.yaml'}:8:11: E407 kafka source 'events': Spark could not fetch "
        f"{KAFKA_JARS[0]}, {KAFKA_JARS[1]} from Maven Central (offline, and not in the Ivy cache {tmp_path / 'ivy'})",
        f"    hint: run once where Maven Central is reachable (the jars stay in {tmp_path / 'ivy'}), or set "
        f"ETL_JAVA_LIB to a folder whose spark/ holds the jars of {KAFKA_JARS[0]}, {KAFKA_JARS[1]} "
        "(scripts/setup-java.sh), or pass --conf spark.jars.repositories=<your Maven mirror>"]
