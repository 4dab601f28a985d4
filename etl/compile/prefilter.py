"""A JVM prefilter for keep-mode rule filters: rows that cannot match never travel to Python.

Moving a row from the JVM to a Python worker and back (Arrow conversion, the
socket, pyspark's worker loop) costs more than matching it: about 3 us per
row of CPU against about 0.6 us for a 1,000-rule Hyperscan match. When a
program can only match rows whose text contains one of a few literals
(`etl.optimize.literals.program_literals`: every rule needs one of its
patterns, every pattern needs one of its literals), a keep filter first runs

    where(etl_literal_prefilter(cast(field AS binary), '<literal file>') OR ...)

in the JVM: an Aho-Corasick automaton over the lower-cased ASCII bytes of the
field. Rows with a non-ASCII byte always pass (case folding and derivations
are only simple on ASCII; the matcher decides them), NULL values never match
through their field. What passes goes to the matcher as before, so the
result is the same row for row; only the work changes.

The UDF is one small Java class (`JAVA_SOURCE`), compiled with `javac` against
pyspark's jars on first use into the on-disk cache ($ETL_CACHE_DIR or
~/.cache/etl/jars), added to the session with `ADD JAR` (Spark ships it to the
executors) and registered as a temporary function. The literal sets go to the
executors with `SparkContext.addFile`, one file per set (named by its SHA-256,
so a reloaded program gets a new file), loaded once per executor JVM. Without
`javac` (or when any of this fails) filters run without the prefilter: the
reason is logged once (`etl.rules`, WARNING). `ETL_PREFILTER=off` switches it off.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger("etl.rules")

FUNCTION = "etl_literal_prefilter"
CLASS = "etl.udf.LiteralPrefilter"

JAVA_SOURCE = r"""
package etl.udf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.SparkFiles;
import org.apache.spark.sql.api.java.UDF2;

/** True when the bytes hold a non-ASCII byte or, lower-cased, contain one of the literals of the set file. */
public final class LiteralPrefilter implements UDF2<byte[], String, Boolean> {
    private static final ConcurrentHashMap<String, Automaton> SETS = new ConcurrentHashMap<>();

    @Override
    public Boolean call(byte[] value, String setFile) throws IOException {
        if (value == null) {
            return Boolean.FALSE;
        }
        Automaton a = SETS.get(setFile);
        if (a == null) {
            a = SETS.computeIfAbsent(setFile, LiteralPrefilter::load);
        }
        return a.matches(value);
    }

    private static Automaton load(String setFile) {
        String path = Files.exists(Paths.get(setFile)) ? setFile : SparkFiles.get(setFile);
        try {
            List<byte[]> literals = new ArrayList<>();
            for (String line : Files.readAllLines(Paths.get(path), StandardCharsets.US_ASCII)) {
                if (line.isEmpty()) continue;
                byte[] lit = new byte[line.length() / 2];
                for (int i = 0; i < lit.length; i++) {
                    lit[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
                }
                literals.add(lit);
            }
            return new Automaton(literals);
        } catch (IOException e) {
            throw new RuntimeException("etl: cannot read the prefilter literals " + path, e);
        }
    }

    /** Aho-Corasick over byte classes, as a full transition table. */
    static final class Automaton {
        private final int[] cls = new int[128];
        private final int classes;
        private final int[] next;
        private final boolean[] out;

        Automaton(List<byte[]> literals) {
            int c = 1;
            for (byte[] lit : literals) {
                for (byte b : lit) {
                    int lo = lower(b);
                    if (cls[lo] == 0) cls[lo] = c++;
                }
            }
            for (int b = 'A'; b <= 'Z'; b++) cls[b] = cls[b + 32];
            classes = c;
            List<int[]> go = new ArrayList<>();
            List<Boolean> term = new ArrayList<>();
            go.add(new int[classes]);
            term.add(Boolean.FALSE);
            for (byte[] lit : literals) {
                int s = 0;
                for (byte b : lit) {
                    int k = cls[lower(b)];
                    if (go.get(s)[k] == 0) {
                        go.get(s)[k] = go.size();
                        go.add(new int[classes]);
                        term.add(Boolean.FALSE);
                    }
                    s = go.get(s)[k];
                }
                term.set(s, Boolean.TRUE);
            }
            int n = go.size();
            next = new int[n * classes];
            out = new boolean[n];
            int[] fail = new int[n];
            ArrayDeque<Integer> queue = new ArrayDeque<>();
            out[0] = term.get(0);
            for (int k = 0; k < classes; k++) {
                int t = go.get(0)[k];
                next[k] = t;
                if (t != 0) {
                    fail[t] = 0;
                    queue.add(t);
                }
            }
            next[0] = 0;  // class 0: a byte in no literal
            while (!queue.isEmpty()) {
                int s = queue.poll();
                out[s] = term.get(s) || out[fail[s]];
                for (int k = 0; k < classes; k++) {
                    int t = go.get(s)[k];
                    if (t != 0 && k != 0) {
                        fail[t] = next[fail[s] * classes + k];
                        next[s * classes + k] = t;
                        queue.add(t);
                    } else {
                        next[s * classes + k] = next[fail[s] * classes + k];
                    }
                }
            }
        }

        private static int lower(byte b) {
            return (b >= 'A' && b <= 'Z') ? b + 32 : b;
        }

        boolean matches(byte[] v) {
            int s = 0;
            final int[] t = next;
            final int n = classes;
            for (byte b : v) {
                if (b < 0) return true;  // non-ASCII: the matcher decides
                s = t[s * n + cls[b]];
                if (out[s]) return true;
            }
            return false;
        }
    }
}
"""

_LOCK = threading.Lock()
_SESSIONS: set[int] = set()  # sessions the function is registered in
_FILES: set[tuple[int, str]] = set()  # (SparkContext, file) pairs already added
_BROKEN: list[str] = []  # why the prefilter is unavailable in this process (logged once)


def _cache_root() -> Path:
    from etl.optimize.diskcache import cache_dir

    return cache_dir() or Path(tempfile.gettempdir()) / f"etl-cache-{os.getuid() if hasattr(os, 'getuid') else 0}"


def build_jar() -> Path:
    """The UDF's jar, compiled once per source and Spark version (raises when javac is missing or fails)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    key = hashlib.sha256((JAVA_SOURCE + pyspark.__version__).encode()).hexdigest()[:16]
    target = _cache_root() / "jars" / f"etl-udf-{key}.jar"
    if target.exists():
        return target
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None:
        raise RuntimeError("javac/jar not found (install a JDK to enable the JVM prefilter)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="etl-udf-") as tmp:
        src = Path(tmp) / "src" / "etl" / "udf"
        src.mkdir(parents=True)
        (src / "LiteralPrefilter.java").write_text(JAVA_SOURCE)
        classes = Path(tmp) / "classes"
        classes.mkdir()
        subprocess.run([javac, "-nowarn", "--release", "17", "-d", str(classes), "-cp", f"{jars}/*",
                        str(src / "LiteralPrefilter.java")], check=True, capture_output=True, timeout=300)
        built = Path(tmp) / "etl-udf.jar"
        subprocess.run([jar, "cf", str(built), "-C", str(classes), "."], check=True, capture_output=True, timeout=120)
        fd, part = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        os.close(fd)
        shutil.copyfile(built, part)
        os.replace(part, target)
    return target


def _register(spark: Any) -> bool:
    if _BROKEN:
        return False
    key = id(spark)
    if key in _SESSIONS:
        return True
    with _LOCK:
        if key in _SESSIONS:
            return True
        try:
            from pyspark.sql.types import BooleanType

            path = build_jar()
            spark.sql(f"ADD JAR '{path}'")
            spark.udf.registerJavaFunction(FUNCTION, CLASS, BooleanType())
        except Exception as e:  # noqa: BLE001 - no JDK, no permission, ...: the filter still works without it
            detail = getattr(e, "stderr", b"") or b""
            _BROKEN.append(f"{e} {detail.decode(errors='replace')[:500]}".strip())
            log.warning("rule filters run without the JVM prefilter: %s", _BROKEN[0])
            return False
        _SESSIONS.add(key)
        return True


def _literal_file(spark: Any, literals: frozenset[str]) -> str:
    """The set's file (one hex-encoded literal a line), added to the SparkContext; its name."""
    body = "".join(lit.encode("ascii").hex() + "\n" for lit in sorted(literals))
    name = f"etl-literals-{hashlib.sha256(body.encode()).hexdigest()[:24]}.txt"
    folder = _cache_root() / "prefilter"
    path = folder / name
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        fd, part = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "w") as fh:
            fh.write(body)
        os.replace(part, path)
    sc = spark.sparkContext
    if (id(sc), name) not in _FILES:
        sc.addFile(str(path))
        _FILES.add((id(sc), name))
    return name


def prefilter_condition(spark: Any, program: Any, df: Any) -> Any:
    """The JVM condition every row the program can match satisfies, or None (no literal condition, a field
    that is not a string column, or no prefilter available)."""
    from etl.optimize.literals import program_literals

    if os.environ.get("ETL_PREFILTER", "").strip().lower() in ("off", "0", "false", "no"):
        return None
    lits = program_literals(program)
    if not lits:
        return None
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    for field in lits:
        try:
            dtype = df.select(F.col(field)).schema.fields[0].dataType
        except Exception:  # noqa: BLE001 - a field the frame does not have: the matcher reads it as null
            return None
        if not isinstance(dtype, StringType):
            return None
    if not _register(spark):
        return None
    cond = None
    for field, ls in sorted(lits.items()):
        c = F.call_function(FUNCTION, F.col(field).cast("binary"), F.lit(_literal_file(spark, ls)))
        cond = c if cond is None else cond | c
    return cond
