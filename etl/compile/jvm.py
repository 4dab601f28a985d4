"""etl's own JVM code: the Java sources of etl/jvm/, one jar, and calls into it from Spark plans.

Some work is cheapest in the JVM, next to the rows: the rule filters' literal
prefilter (etl/jvm/LiteralPrefilter.java) and lookups of large dimension tables
(etl/jvm/LookupTables.java). The jar is the packaged one (etl/jvm/etl-jvm.jar,
built by Maven and shipped in the wheel: etl.physical.jar) when it was built
from the installed sources against the installed pyspark: a run then needs only
a Java runtime. Otherwise (the development path: a checkout whose sources
changed) the sources are compiled with `javac` against pyspark's jars on first
use, into one jar in the on-disk cache ($ETL_CACHE_DIR, else ~/.cache/etl:
`jars/etl-jvm-<hash>.jar`, named by the sources, the pyspark version and the
JDK, so a change of any gives a new jar).

A session etl starts itself (`etl run`, `etl test`, local or on a cluster) has
the jar on the driver's class path and in `spark.jars` (executors). Plans then
call static methods of its classes directly (`static_call`: Spark's
StaticInvoke, compiled into the generated code like a built-in function: no
UDF conversion of arguments or results). Where the jar is missing -- no JDK, or
a session started by spark-submit without it -- `available` is False and every
caller keeps a path without it (the prefilter adds the jar with ADD JAR, the
lookup runs in Python workers); the reason is logged once.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from etl.diskcache import cache_root, write_atomically
from etl.physical import jar as packaged_jar
from etl.settings import switched_on
from etl.workercache import owned_by

log = logging.getLogger("etl.jvm")

SOURCES = Path(__file__).resolve().parents[1] / "jvm"
PROBE = "etl.jvm.LookupTables"  # any class of the jar: its presence on the class path means the jar's is
_LOCK = threading.Lock()
_JAR: dict[str, Path | None] = {}
_WHY: list[str] = []  # why the jar could not be built (logged once)


def switched_off(variable: str) -> bool:
    """A switch of one of etl's JVM paths that is not an engine choice (ETL_GUARD_OPTIMISTIC) set to off, 0, false
    or no. The engine switches (ETL_RULES_JVM, ETL_PREFILTER, ETL_GROK_PROGRAM, ETL_LOOKUP_JVM) are the physical
    planner's (etl.physical.target.planner_settings)."""
    return not switched_on(variable)


def sources() -> list[Path]:
    return sorted(SOURCES.glob("*.java"))


def _java_version(javac: str) -> str:
    try:
        out = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
        return (out.stdout + out.stderr).strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def jar() -> Path | None:
    """The jar of etl/jvm/*.java: the packaged one when it is theirs, else compiled once per sources, pyspark and
    JDK; None without either."""
    with _LOCK:
        if "jar" in _JAR:
            return _JAR["jar"]
        shipped, why_not = packaged_jar.packaged()  # through the module: tests replace it
        if shipped is not None:
            _JAR["jar"] = shipped
            return shipped
        log.info("compiling etl/jvm/*.java with javac (the development path): %s", why_not)
        try:
            _JAR["jar"] = _build()
        except Exception as e:  # noqa: BLE001 - no JDK, a read-only cache ...: callers keep their other path
            detail = getattr(e, "stderr", b"") or b""
            if isinstance(detail, bytes):
                detail = detail.decode(errors="replace")
            _WHY.append(f"{why_not}; {e} {detail[:800]}".strip())
            log.warning("etl's JVM functions are unavailable (rule prefilter, JVM lookups): %s", _WHY[0])
            _JAR["jar"] = None
        return _JAR["jar"]


def unavailable_reason() -> str | None:
    return _WHY[0] if _WHY else None


# every lint warning of etl's sources is an error; `path` and `classfile` are about pyspark's jars (manifest
# entries that do not exist, annotations whose classes it does not ship), not about the sources
JAVAC_FLAGS = ("-Xlint:all,-path,-classfile", "-Werror", "--release", "17", "-encoding", "UTF-8")


def _build() -> Path:
    import pyspark

    javac, jar_tool = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar_tool is None:
        raise RuntimeError("javac/jar not found (install a JDK)")
    files = sources()
    h = hashlib.sha256(pyspark.__version__.encode() + _java_version(javac).encode())
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    target = cache_root() / "jars" / f"etl-jvm-{h.hexdigest()[:16]}.jar"
    if target.exists():
        return target
    jars = Path(pyspark.__file__).parent / "jars"
    with tempfile.TemporaryDirectory(prefix="etl-jvm-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        subprocess.run([javac, *JAVAC_FLAGS, "-d", str(classes),
                        "-cp", f"{jars}/*", *map(str, files)], check=True, capture_output=True, timeout=600)
        built = Path(tmp) / "etl-jvm.jar"
        subprocess.run([jar_tool, "cf", str(built), "-C", str(classes), "."], check=True, capture_output=True,
                       timeout=120)
        write_atomically(target, built.read_bytes())
    return target


def ship_text(spark: Any, kind: str, body: str) -> str:
    """A text file for etl's JVM code (a prefilter's literals, a rule program), named by its content, written
    once under the cache folder and added to the SparkContext once (executors fetch it; the JVM side opens it by
    path where it exists, else through SparkFiles); its name."""
    sc = spark.sparkContext
    data = body.encode("utf-8")
    name = f"etl-{kind}-{hashlib.sha256(data).hexdigest()[:24]}.txt"
    shipped = owned_by(sc).setdefault("jvm: files added", set())
    if name in shipped:
        return name
    path = cache_root() / kind / name
    if not path.exists():
        write_atomically(path, data)
    sc.addFile(str(path))
    shipped.add(name)
    return name


def launch_conf(conf: dict[str, str]) -> dict[str, str]:
    """Settings putting the jar on a new session's class paths (the user's own entries kept after ours)."""
    path = jar()
    if path is None:
        return {}
    out = {}
    cp = conf.get("spark.driver.extraClassPath", "")
    out["spark.driver.extraClassPath"] = f"{path}:{cp}" if cp else str(path)
    return out


def available(spark: Any) -> bool:
    """True when the jar's classes load in this session's JVM (the session was started with it)."""
    sc = spark.sparkContext
    facts = owned_by(sc)
    got = facts.get("jvm: the jar loads")
    if got is None:
        try:
            jvm = sc._jvm  # type: ignore[attr-defined]
            jvm.java.lang.Class.forName(PROBE, False, jvm.java.lang.ClassLoader.getSystemClassLoader())
            got = True
        except Exception:  # noqa: BLE001 - py4j wraps ClassNotFoundException
            got = False
        facts["jvm: the jar loads"] = got
    return got


def _seq(jvm: Any, items: list[Any]) -> Any:
    lst = jvm.java.util.ArrayList()
    for x in items:
        lst.add(x)
    return jvm.scala.jdk.javaapi.CollectionConverters.asScala(lst).toList()


def static_call(spark: Any, cls: str, method: str, data_type: Any, *args: Any, null_in_null_out: bool = True) -> Any:
    """A column calling `cls.method(args...)` (a public static Java method of the jar) in generated code.

    Arguments arrive as Spark's internal values (UTF8String for strings, int/long/double ..., InternalRow for
    structs, ArrayData for arrays); the method returns the internal value of `data_type` (a pyspark DataType).
    With `null_in_null_out` a NULL argument gives NULL without calling."""
    from pyspark.sql import Column

    jvm = spark.sparkContext._jvm
    utils = jvm.org.apache.spark.sql.classic.ExpressionUtils
    jtype = jvm.org.apache.spark.sql.types.DataType.fromJson(data_type.json())
    klass = jvm.java.lang.Class.forName(cls, True, jvm.java.lang.ClassLoader.getSystemClassLoader())
    exprs = [utils.expression(a._jc) for a in args]
    invoke = jvm.org.apache.spark.sql.catalyst.expressions.objects.StaticInvoke(
        klass, jtype, method, _seq(jvm, exprs), _seq(jvm, []), null_in_null_out, True, True, jvm.scala.Option.empty())
    return Column(utils.column(invoke))
