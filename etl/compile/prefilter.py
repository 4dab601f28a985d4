"""A JVM prefilter for rule filters: rows that cannot match never travel to Python (keep mode) or
travel as NULLs (drop and tag modes: the matcher answers "no rule" for them at once).

Moving a row from the JVM to a Python worker and back (Arrow conversion, the
socket, pyspark's worker loop) costs more than matching it: about 3 us per
row of CPU against about 0.6 us for a 1,000-rule Hyperscan match. When a
program can only match rows whose text contains one of a few literals
(`etl.optimize.literals.program_literal_groups`: every rule needs one of its
patterns, every pattern needs one literal of each of a few sets), a keep filter first runs

    where(etl_literal_prefilter(cast(field AS binary), X'<literal file name>') OR ...)

in the JVM: one pass over the lower-cased ASCII bytes of the field looking for
each pattern's most selective need, one bit test per byte in a table that stays
in the CPU's caches (exact tables are read on a hit only), so its cost hardly
grows with the number of literals; a pattern's other needs (up to
PREFILTER_NEEDS in all, literals of 2 characters or more: ``ssh\\s+-R`` needs
"ssh" and "-r") are checked only on a hit of its first one. Rows with a
non-ASCII byte always pass (case folding and derivations are only simple on
ASCII; the matcher decides them), NULL values never match
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

from etl.optimize.diskcache import cache_root, write_atomically

log = logging.getLogger("etl.rules")

FUNCTION = "etl_literal_prefilter"
CLASS = "etl.udf.LiteralPrefilter"

JAVA_SOURCE = r"""
package etl.udf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.SparkFiles;
import org.apache.spark.sql.api.java.UDF2;

/** True when the bytes hold a non-ASCII byte or, lower-cased, contain one of the literals of the set file. */
public final class LiteralPrefilter implements UDF2<byte[], byte[], Boolean> {
    private static final ConcurrentHashMap<String, Grams> SETS = new ConcurrentHashMap<>();

    private static final class Last {
        final byte[] name;
        final Grams grams;

        Last(byte[] name, Grams grams) {
            this.name = name;
            this.grams = grams;
        }
    }

    private transient volatile Last last;  // the set of the previous row (one set per call site)

    /** setFile: the set file's name as UTF-8 bytes (a binary literal: Spark hands the same array to every
     *  row of a task, unconverted, so the usual check is one reference comparison). */
    @Override
    public Boolean call(byte[] value, byte[] setFile) {
        if (value == null) {
            return Boolean.FALSE;
        }
        Last l = last;
        if (l == null || (l.name != setFile && !Arrays.equals(l.name, setFile))) {
            l = new Last(setFile, SETS.computeIfAbsent(new String(setFile, StandardCharsets.UTF_8),
                                                       LiteralPrefilter::load));
            last = l;
        }
        return l.grams.matches(value);
    }

    private static Grams load(String setFile) {
        String path = Files.exists(Paths.get(setFile)) ? setFile : SparkFiles.get(setFile);
        try {
            List<byte[][][]> groups = new ArrayList<>();
            for (String line : Files.readAllLines(Paths.get(path), StandardCharsets.US_ASCII)) {
                if (line.isEmpty()) continue;
                String[] needs = line.split(" ");
                byte[][][] group = new byte[needs.length][][];
                for (int k = 0; k < needs.length; k++) {
                    String[] alts = needs[k].split(",");
                    group[k] = new byte[alts.length][];
                    for (int j = 0; j < alts.length; j++) group[k][j] = unhex(alts[j]);
                }
                groups.add(group);
            }
            return new Grams(groups);
        } catch (IOException e) {
            throw new RuntimeException("etl: cannot read the prefilter literals " + path, e);
        }
    }

    private static byte[] unhex(String h) {
        byte[] out = new byte[h.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    /**
     * Groups of needs (a group: every need holds; a need: the value contains one of its literals). Only a
     * group's first need (its most selective, of literals of 3 characters or more) is searched for in the
     * pass, one bit test per byte: the 3 characters ending at the byte, hashed into a small bitset (2^18 bits,
     * 32 KB: it stays in the L1/L2 caches) that holds every 3-character literal and the characters 2 to 4 of
     * every longer one. Only on a hit (a few percent of the bytes) are the exact tables read: 3-character
     * literals in a bitset of 3-grams (2^21 bits), longer ones in a bitset of their first 4 characters, hashed
     * (2^20 bits), compared on a hit. A hit on a literal that alone makes a group hold ends the pass; a hit on
     * another group's first need checks that group's other needs by a direct search of the value (rare: the
     * first need is the selective one).
     */
    static final class Grams {
        private static final int HASH_BITS = 20;
        private final long[] near = new long[1 << 12];  // 2^18 bits: hashed 3-grams ending a literal's head
        private final long[] three = new long[1 << 15];
        private final long[] four = new long[1 << (HASH_BITS - 6)];
        private final Map<Integer, Integer> threeIds = new HashMap<>();
        private final Map<Integer, byte[][]> heads = new HashMap<>();
        private final Map<Integer, int[]> headIds = new HashMap<>();
        private final int[][] anchors;  // first-need literal id -> the groups whose first need it is in
        private final boolean[] alone;  // first-need literal id -> makes a group hold by itself
        private final byte[][][][] rest;  // group -> its other needs -> their literals (lower case)

        Grams(List<byte[][][]> groups) {
            Map<String, Integer> ids = new HashMap<>();
            Map<Integer, List<byte[]>> byHead = new HashMap<>();
            Map<Integer, List<Integer>> byHeadIds = new HashMap<>();
            List<List<Integer>> members = new ArrayList<>();
            List<Boolean> single = new ArrayList<>();
            rest = new byte[groups.size()][][][];
            for (int g = 0; g < groups.size(); g++) {
                byte[][][] needs = groups.get(g);
                rest[g] = new byte[needs.length - 1][][];
                for (int k = 1; k < needs.length; k++) {
                    rest[g][k - 1] = new byte[needs[k].length][];
                    for (int j = 0; j < needs[k].length; j++) rest[g][k - 1][j] = lowered(needs[k][j], 1);
                }
                for (byte[] raw : needs[0]) {
                    byte[] lit = lowered(raw, 3);
                    String key = new String(lit, StandardCharsets.ISO_8859_1);
                    Integer id = ids.get(key);
                    if (id == null) {
                        id = ids.size();
                        ids.put(key, id);
                        members.add(new ArrayList<>());
                        single.add(Boolean.FALSE);
                        int n3 = lit.length == 3 ? 0 : 1;  // where the 3 characters of the pass's key start
                        int k = near((lit[n3] << 14) | (lit[n3 + 1] << 7) | lit[n3 + 2]);
                        near[k >>> 6] |= 1L << (k & 63);
                        if (lit.length == 3) {
                            int t = (lit[0] << 14) | (lit[1] << 7) | lit[2];
                            three[t >>> 6] |= 1L << (t & 63);
                            threeIds.put(t, id);
                        } else {
                            int h = hash((lit[0] << 24) | (lit[1] << 16) | (lit[2] << 8) | lit[3]);
                            four[h >>> 6] |= 1L << (h & 63);
                            byHead.computeIfAbsent(h, x -> new ArrayList<>()).add(lit);
                            byHeadIds.computeIfAbsent(h, x -> new ArrayList<>()).add(id);
                        }
                    }
                    members.get(id).add(g);
                    if (needs.length == 1) single.set(id, Boolean.TRUE);
                }
            }
            for (Map.Entry<Integer, List<byte[]>> e : byHead.entrySet()) {
                heads.put(e.getKey(), e.getValue().toArray(new byte[0][]));
                headIds.put(e.getKey(), byHeadIds.get(e.getKey()).stream().mapToInt(Integer::intValue).toArray());
            }
            anchors = new int[members.size()][];
            alone = new boolean[members.size()];
            for (int id = 0; id < anchors.length; id++) {
                anchors[id] = members.get(id).stream().mapToInt(Integer::intValue).toArray();
                alone[id] = single.get(id);
            }
        }

        private static byte[] lowered(byte[] raw, int min) {
            if (raw.length < min) throw new IllegalArgumentException("etl: prefilter literal shorter than " + min);
            byte[] lit = new byte[raw.length];
            for (int i = 0; i < raw.length; i++) lit[i] = (byte) lower(raw[i]);
            return lit;
        }

        private static int lower(byte b) {
            return (b >= 'A' && b <= 'Z') ? b + 32 : b;
        }

        private static int near(int t) {
            return (t * 0x9E3779B1) >>> 14;
        }

        private static int hash(int g) {
            return (g * 0x9E3779B1) >>> (32 - HASH_BITS);
        }

        private static final byte[] LOW = new byte[128];  // ASCII lower-casing, without a branch per byte

        static {
            for (int c = 0; c < 128; c++) LOW[c] = (byte) ((c >= 'A' && c <= 'Z') ? c + 32 : c);
        }

        boolean matches(byte[] v) {
            int t = 0;  // the last 3 characters, lower-cased, 7 bits each (kept up to date, not rebuilt)
            final long[] nr = near;
            for (int i = 0; i < v.length; i++) {
                int b = v[i];
                if (b < 0) return true;  // non-ASCII: the matcher decides
                t = ((t << 7) | LOW[b]) & 0x1FFFFF;
                if (i < 2) continue;
                int k = near(t);
                if ((nr[k >>> 6] & (1L << (k & 63))) == 0) continue;
                if ((three[t >>> 6] & (1L << (t & 63))) != 0 && hit(v, threeIds.get(t))) return true;
                if (i < 3) continue;
                int h = hash((LOW[v[i - 3]] << 24) | ((t >>> 14) << 16) | (((t >>> 7) & 0x7f) << 8) | (t & 0x7f));
                if ((four[h >>> 6] & (1L << (h & 63))) != 0) {
                    byte[][] lits = heads.get(h);
                    int[] lids = headIds.get(h);
                    for (int j = 0; j < lits.length; j++) {
                        if (equalAt(v, i - 3, lits[j]) && hit(v, lids[j])) return true;
                    }
                }
            }
            return false;
        }

        /** A first-need literal was found in v: does one of the groups it anchors hold? */
        private boolean hit(byte[] v, int id) {
            if (alone[id]) return true;
            for (int grp : anchors[id]) {
                if (holds(v, rest[grp])) return true;
            }
            return false;
        }

        private static boolean holds(byte[] v, byte[][][] needs) {
            for (byte[][] need : needs) {
                boolean any = false;
                for (byte[] lit : need) {
                    if (indexOf(v, lit)) {
                        any = true;
                        break;
                    }
                }
                if (!any) return false;
            }
            return true;
        }

        private static boolean indexOf(byte[] v, byte[] lit) {
            for (int s = 0; s + lit.length <= v.length; s++) {
                if (lower(v[s]) == lit[0] && equalAt(v, s, lit)) return true;
            }
            return false;
        }

        private static boolean equalAt(byte[] v, int start, byte[] lit) {
            if (start + lit.length > v.length) return false;
            for (int k = lit.length - 1; k >= 0; k--) {
                if (lower(v[start + k]) != lit[k]) return false;
            }
            return true;
        }
    }
}
"""

_LOCK = threading.Lock()
_JAR: list[Path] = []  # the built jar (once per process)
PREFILTER_NEEDS = 3
_LITERALS: dict[str, Any] = {}  # program digest -> its literal condition (a few kept)
_FILES: set[tuple[int, str]] = set()  # (SparkContext, file) pairs already added
_BROKEN: list[str] = []  # why the prefilter is unavailable in this process (logged once)


def build_jar() -> Path:
    """The UDF's jar, compiled once per source and Spark version (raises when javac is missing or fails)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    key = hashlib.sha256((JAVA_SOURCE + pyspark.__version__).encode()).hexdigest()[:16]
    target = cache_root() / "jars" / f"etl-udf-{key}.jar"
    if target.exists():
        return target
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None:
        raise RuntimeError("javac/jar not found (install a JDK to enable the JVM prefilter)")
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
        write_atomically(target, built.read_bytes())
    return target


def _register(spark: Any) -> bool:
    """The UDF in this session (a streaming query's micro-batches run in a clone of the session it started
    from, so a function first needed after a hot reload is registered in the batch's own session)."""
    if _BROKEN:
        return False
    with _LOCK:
        try:
            if spark.catalog.functionExists(FUNCTION):
                return True
            from pyspark.sql.types import BooleanType

            if not _JAR:
                _JAR.append(build_jar())
            spark.sql(f"ADD JAR '{_JAR[0]}'")
            spark.udf.registerJavaFunction(FUNCTION, CLASS, BooleanType())
        except Exception as e:  # noqa: BLE001 - no JDK, no permission, ...: the filter still works without it
            detail = getattr(e, "stderr", b"") or b""
            _BROKEN.append(f"{e} {detail.decode(errors='replace')[:500]}".strip())
            log.warning("rule filters run without the JVM prefilter: %s", _BROKEN[0])
            return False
        return True


def _literal_file(spark: Any, groups: tuple) -> str:
    """The field's groups in a file (a line per group: its needs separated by spaces, a need's literals by
    commas, each hex-encoded), added to the SparkContext; its name."""
    body = "".join(" ".join(",".join(lit.encode("ascii").hex() for lit in sorted(need)) for need in group) + "\n"
                   for group in groups)
    name = f"etl-literals-{hashlib.sha256(body.encode()).hexdigest()[:24]}.txt"
    path = cache_root() / "prefilter" / name
    if not path.exists():
        write_atomically(path, body.encode("ascii"))
    sc = spark.sparkContext
    if (id(sc), name) not in _FILES:
        sc.addFile(str(path))
        _FILES.add((id(sc), name))
    return name


def literal_test(spark: Any, column: Any, groups: tuple) -> Any:
    """The UDF's call on a string `column` for a field's literal groups (the session must have it registered).
    The set file's name goes as a binary literal: the JVM gets the same array for every row, unconverted."""
    from pyspark.sql import functions as F

    return F.call_function(FUNCTION, column.cast("binary"), F.lit(bytearray(_literal_file(spark, groups).encode())))


def prefilter_condition(program: Any, df: Any) -> Any:
    """The JVM condition every row the program can match satisfies, or None (no literal condition, a field
    that is not a string column, or no prefilter available)."""
    from etl.optimize.literals import program_literal_groups

    if os.environ.get("ETL_PREFILTER", "").strip().lower() in ("off", "0", "false", "no"):
        return None
    key = getattr(program, "digest", None)
    if key and key in _LITERALS:
        lits = _LITERALS[key]
    else:
        # three needs per pattern: bench/filter.py --rules 1000 lets 2.7 % of the rows through instead of 10.5 %
        # (the other needs are checked only when the first one is found: the pass costs the same).
        # A tenth of a second for 10,000 rules: once per program, not per batch.
        lits = program_literal_groups(program, max_needs=PREFILTER_NEEDS)
        if key:
            _LITERALS[key] = lits
            while len(_LITERALS) > 16:
                _LITERALS.pop(next(iter(_LITERALS)))
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
    spark = df.sparkSession  # in a micro-batch: the query's clone of the session, where the UDF must be
    if not _register(spark):
        return None
    cond = None
    for field, ls in sorted(lits.items()):
        c = literal_test(spark, F.col(field), ls)
        cond = c if cond is None else cond | c
    return cond
