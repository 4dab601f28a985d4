"""Connector jars fetched the way Spark users fetch them: `spark.jars.packages`.

A component whose builder needs JVM classes declares their Maven coordinates
(`JARS` on its spec class: the kafka source, the mysql source's JDBC driver).
When java/lib/spark (ETL_JAVA_LIB) holds no connector jars, as for an
installed wheel, `etl run` hands the pipeline's coordinates to spark-submit's
Ivy: `spark.jars.packages`, cached in ETL_IVY_DIR (fetched once from Maven
Central, then used offline), with `spark.jars.excludes` naming what pyspark
already ships (java/pom.xml's exclusions). A user's own spark.jars.packages
wins. When Ivy cannot fetch them the launcher exits before Spark starts:
JarsUnavailable, reported as E407 at the first component that needs them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from collections.abc import Iterable, Mapping

from etl import settings
from etl.diskcache import cache_root
from etl.runtime.failure import Failure, field_span, pipeline_span

# groupId:artifactId (glob) of the connectors' dependencies pyspark's jars already hold (java/pom.xml, `spark`)
EXCLUDES = ("org.apache.spark:spark-tags_2.13", "org.scala-lang:*", "org.scala-lang.modules:*",
            "com.google.code.findbugs:jsr305", "org.slf4j:*", "org.xerial.snappy:*", "com.github.luben:*",
            "org.lz4:*", "at.yawk.lz4:*", "org.apache.hadoop:*")


class JarsUnavailable(RuntimeError):
    """Spark's Ivy could not fetch the connector jars (offline with an empty cache, or a repository refused)."""

    def __init__(self, packages: list[str], ivy: Path) -> None:
        super().__init__(f"Spark could not fetch {', '.join(packages)} from Maven Central (offline, and not in the "
                         f"Ivy cache {ivy})")
        self.packages = packages
        self.ivy = ivy


def needed(graph: Any) -> list[str]:
    """The Maven coordinates the pipeline's components declare (JARS), each once, in node order."""
    return list(dict.fromkeys(c for node in graph.nodes.values() for c in type(node.spec).JARS))


def ivy_dir() -> Path:
    return Path(settings.current().ivy_dir or cache_root() / "ivy")


def launch_conf(packages: Iterable[str], conf: Mapping[str, str], local_jars: bool) -> dict[str, str]:
    """The spark-submit settings that fetch `packages`: none when java/lib has connector jars (`local_jars`), or
    the user chose packages themselves."""
    packages = list(packages)
    if not packages or local_jars or conf.get("spark.jars.packages"):
        return {}
    return {"spark.jars.packages": ",".join(packages), "spark.jars.ivy": conf.get("spark.jars.ivy") or str(ivy_dir()),
            "spark.jars.excludes": ",".join(EXCLUDES)}


def fetched(coordinate: str, ivy: Path) -> bool:
    """Ivy resolved `coordinate` into the cache (spark-submit copies each jar to <ivy>/jars/<group>_<artifact>-<v>),
    at any version: Ivy's conflict manager takes the latest one asked for (the kafka connector 4.2.0 asks for its
    token provider 4.2.0, which evicts the 4.0.0 java/pom.xml pins)."""
    group, artifact, _ = coordinate.split(":")
    return any((ivy / "jars").glob(f"{group}_{artifact}-*.jar"))


def check_launch(launch: Mapping[str, str]) -> None:
    """After the JVM failed to start: raise JarsUnavailable when the packages it was to fetch are not all there."""
    packages = [p for p in launch.get("spark.jars.packages", "").split(",") if p]
    ivy = Path(launch.get("spark.jars.ivy", ""))
    missing = [p for p in packages if not fetched(p, ivy)]
    if missing:
        raise JarsUnavailable(missing, ivy)


def jars_fault(graph: Any, err: JarsUnavailable) -> Any:
    """E407 at the first component that needs a jar Ivy could not fetch."""
    node = next((n for n in graph.nodes.values() if set(type(n.spec).JARS) & set(err.packages)), None)
    what = f"{node.type} {node.kind} '{node.id}'" if node is not None else f"pipeline '{graph.name}'"
    span = field_span(graph, node, "type") if node is not None else pipeline_span(graph)
    return Failure("E407", what, f"{err}", span,
                   f"run once where Maven Central is reachable (the jars stay in {err.ivy}), or set ETL_JAVA_LIB to "
                   f"a folder whose spark/ holds the jars of {', '.join(err.packages)} (scripts/setup-java.sh), or "
                   "pass --conf spark.jars.repositories=<your Maven mirror>")
