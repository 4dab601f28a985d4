"""Grok in the JVM (etl/jvm/Grok.java): its matcher program (etl/grokvm, etl/jvm/GrokProgram.java) and its regex
give exactly the captures of Spark's own regexp functions (the path of sessions without etl's jar), line for
line, on realistic, malformed and tricky lines; and the program answers every well-formed access-log line."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

from etl.grok import expand

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts.gen_access_log import lines as access_lines  # noqa: E402

SYSLOG = ["Jan 10 12:00:02 host-1 sshd[123]: Accepted password for alice from 10.0.0.1 port 22 ssh2",
          "Feb  3 04:05:06 db01 kernel: [42.000001] eth0: link up",
          "Mar 13 23:59:59 10.1.2.3 cron[9]: (root) CMD (run-parts /etc/cron.hourly)",
          "Apr  1 00:00:00 web01 nginx: GET / 200", "not a syslog line", ""]


def tricky(rnd: random.Random, base: list[str]) -> list[str]:
    """Lines that make the walker choose, give up or differ: quotes in requests, IPv6 and host names, missing
    parts, control characters, non-ASCII text, a prefix before the match."""
    out = []
    for line in base:
        k = rnd.randrange(12)
        if k == 0:
            out.append(line.replace(" HTTP/1.1", ' HTTP/1.1" x "y'))
        elif k == 1:
            out.append(line.replace(line.split(" ")[0], "2001:db8::1", 1))
        elif k == 2:
            out.append(line.replace(line.split(" ")[0], "host-7.example.com", 1))
        elif k == 3:
            out.append("prefix " + line)
        elif k == 4:
            out.append(line + "\r")
        elif k == 5:
            out.append(line.replace("Mozilla", "Mözilla"))
        elif k == 6:
            out.append(line.replace('"GET ', '"GET\t'))
        elif k == 7:
            out.append(line.replace(" - ", " bob@example.com ", 1))
        elif k == 8:
            out.append(line[: rnd.randrange(len(line) + 1)])
        elif k == 9:
            out.append(line.replace('" ', '\\" ', 1))
        else:
            out.append(line)
    return out


def captures(spark, rows, pattern, native: bool, program: bool = True):
    from pyspark.sql import functions as F

    from etl.components.transforms.grok import build as gk

    g = expand(pattern)
    df = spark.createDataFrame([(i, r) for i, r in enumerate(rows)], "i int, line string")
    if native:
        if not program:
            spec = gk.spec_bytes(g, program=False)
        else:
            spec = gk.spec_bytes(g)
            assert gk.program_of(g) is not None, gk.program_reason(g)
        from etl.compile import jvm
        from pyspark.sql.types import ArrayType, StringType

        col = jvm.static_call(spark, "etl.jvm.Grok", "captures", ArrayType(StringType()), F.col("line"),
                              F.lit(bytearray(spec)))
        out = df.select("i", col.alias("c"))
    else:
        out = gk.with_captures_sql(df, F.col("line"), g, "c").select("i", "c")
    return {r.i: (None if r.c is None else [x or None for x in r.c]) for r in out.collect()}


@pytest.mark.parametrize("pattern", ["%{COMBINEDAPACHELOG}", "%{COMMONAPACHELOG}",
                                     '%{IPORHOST:ip} %{DATA:rest}"%{DATA:req}" %{NUMBER:code}%{GREEDYDATA:tail}'])
def test_native_grok_equals_spark_regexp(spark, pattern):
    rnd = random.Random(5)
    base = list(access_lines(600, seed=3, malformed=0.1))
    rows = base + tricky(rnd, base)
    want = captures(spark, rows, pattern, native=False)
    assert captures(spark, rows, pattern, native=True, program=False) == want
    assert captures(spark, rows, pattern, native=True) == want
    assert sum(v is not None for v in want.values()) > len(rows) // 2


def test_native_syslog_equals_spark_regexp(spark):
    rows = SYSLOG * 3
    want = captures(spark, rows, "%{SYSLOGLINE}", native=False)
    assert captures(spark, rows, "%{SYSLOGLINE}", native=True) == want
    assert sum(v is not None for v in want.values()) >= 9


EVIL = "\u00e9" + "xyz" * 300  # non-ASCII: java.util.regex answers, and backtracks past its step budget
GREEDY4 = "%{{GREEDYDATA{0}}}x%{{GREEDYDATA{1}}}y%{{GREEDYDATA}}z%{{GREEDYDATA}}!$"


def test_three_answers_no_match_matched_without_captures_and_gave_up(spark):
    """Grok.java's answers are told apart by the array alone: null (no match), one element per field (matched,
    empty for a pattern without captures: `%{IPV4}` on 127.0.0.1 matches), one more (gave up); the Spark-only
    path gives the same for the first two."""
    rows = ["127.0.0.1", "INFO", "/opt/x", "- - -", EVIL, "axbyczd!"]
    for pattern, want in [
        ("%{IPV4}", {0: [], 1: None, 2: None, 3: None, 4: None, 5: None}),
        ("%{LOGLEVEL}", {0: None, 1: [], 2: None, 3: None, 4: None, 5: None}),
        ("^%{UNIXPATH}$", {0: None, 1: None, 2: [], 3: None, 4: None, 5: None}),
        ("%{IPV4:ip}", {0: ["127.0.0.1"], 1: None, 2: None, 3: None, 4: None, 5: None}),
    ]:
        for native, program in [(True, True), (True, False), (False, True)]:
            assert captures(spark, rows, pattern, native=native, program=program) == want, (pattern, native)
    for pattern, fields in [(GREEDY4.format("", ""), 0), (GREEDY4.format(":a", ":b"), 2)]:
        got = captures(spark, rows, pattern, native=True, program=False)
        assert got[4] == [None] * (fields + 1)  # gave up: one element more than there are fields
        assert got[5] == ["a", "b"][:fields] and got[3] is None


def test_the_program_answers_every_well_formed_access_line(spark):
    from etl.components.transforms.grok import build as gk
    from etl.grokvm import FALLBACK, Program, run

    g = expand("%{COMBINEDAPACHELOG}")
    prog = Program.from_bytes(gk.program_of(g))
    lines = list(access_lines(2000, seed=9))
    assert all(run(prog, line.encode()) is not FALLBACK for line in lines)
    # and so does the JVM's walker: Grok.regexLines() counts the lines it left to java.util.regex
    before = spark._jvm.etl.jvm.Grok.regexLines()
    got = captures(spark, lines + ["not an access line"], "%{COMBINEDAPACHELOG}", native=True)
    assert sum(v is not None for v in got.values()) == len(lines)
    assert spark._jvm.etl.jvm.Grok.regexLines() - before == 1  # just the line that is not one


def random_regex(rnd: random.Random, depth: int = 0) -> str:
    """A regex of constructs Python and Java read alike on ASCII text (and the program supports)."""
    def atom() -> str:
        k = rnd.randrange(10 if depth < 2 else 6)
        if k == 0:
            return rnd.choice(["a", "b", '"', "-", " ", "1"])
        if k == 1:
            return rnd.choice(["[ab]", '[^"]', "[a-b1]", r"\d", r"\w", r"\s", r"\S", "."])
        if k == 2:
            return rnd.choice([r"\b", r"(?=a)", r"(?!b)", r"(?<=a)", r"(?<![0-9])", "$", r"\Z", "^"])
        if k in (3, 4, 5):
            return rnd.choice(["ab", '"', "a b", "-"])
        inner = random_regex(rnd, depth + 1)
        return rnd.choice([f"({inner})", f"(?:{inner})", f"(?>{inner})", f"({inner}|{random_regex(rnd, depth + 1)})"])

    parts = []
    for _ in range(rnd.randint(1, 4)):
        a = atom()
        if not a.startswith(("\\b", "\\Z", "$", "^", "(?=", "(?!", "(?<")) and rnd.random() < 0.4:
            a = (f"(?:{a})" if len(a) > 1 and not a.startswith(("[", "\\", "(")) else a) + rnd.choice(
                ["*", "+", "?", "{1,3}", "*?", "+?", "??", "*+", "++"])
        parts.append(a)
    return "".join(parts)


def program_against_regex(spark, lines: list[str], regexes: list[str]) -> tuple[int, int]:
    """Asserts that Grok.java's captures with each regex's matcher program equal java.util.regex's own, group for
    group, on every line; returns (how many regexes got a program, how many (line, regex) pairs matched)."""
    import re
    from types import SimpleNamespace

    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StringType

    from etl.compile import jvm
    from etl.components.transforms.grok import build as gk

    df = spark.createDataFrame([(i, x) for i, x in enumerate(lines)], "i int, line string")
    cols, programs = [], 0
    for k, rx in enumerate(regexes):
        n = re.compile(rx).groups
        g = SimpleNamespace(java_regex=rx, python_regex=rx, fields=[SimpleNamespace(group=i) for i in range(1, n + 1)])
        programs += gk.program_of(g) is not None
        for prog in (True, False):
            spec = bytearray(gk.spec_bytes(g, program=prog))
            cols.append(jvm.static_call(spark, "etl.jvm.Grok", "captures", ArrayType(StringType()), F.col("line"),
                                        F.lit(spec)).alias(f"c{k}_{int(prog)}"))
    matched = 0
    for r in df.select("i", *cols).collect():
        for k, rx in enumerate(regexes):
            assert r[f"c{k}_1"] == r[f"c{k}_0"], (rx, lines[r.i])
            matched += r[f"c{k}_1"] is not None
    return programs, matched


def test_program_and_regex_agree_on_random_patterns(spark):
    """The strongest check of etl/jvm/GrokProgram.java and of the compiler: for random patterns, the program's
    answers equal java.util.regex's own, group for group, on random lines."""
    rnd = random.Random(int(os.environ.get("ETL_GROK_SEED", "21")))
    # \r, \n and \x1c..\x1f: where Python's and Java's readings of $, \Z and \s differ (the program leaves them)
    lines = ["".join(rnd.choice('ab"- 1\r\n\x1c\x1f\t') for _ in range(rnd.randint(0, 12))) for _ in range(150)]
    regexes = [random_regex(rnd) for _ in range(160)]
    programs, matched = program_against_regex(spark, lines, regexes)
    assert programs >= 100  # most random patterns get a program
    assert matched > len(lines) * len(regexes) // 10  # and lines match them often


# Byte sets whose runs the walker skips through 8 bytes at a time (GrokProgram.ByteSet: a set that leaves out at
# most 3 ranges of ASCII) or one byte at a time (more ranges), and the bytes on either side of their edges.
RUN_SETS = ['[^"]', r'[^\\"]', r"\S", "[^ ]", ".", "[a-z]", "[^a-z]", r"[\x00-\x1f]", r"[^\x20-\x7e]", "[ -~]",
            r"\w", r"[^\]]", r"[^\x00-\x08]", "[^aeiou\"' ]", r"\d", r"[^ \"\]]", "[A-Za-z]"]
EDGE_BYTES = "\x00\x01\x08\x09\x1f !\"#'09:@AZ[\\]^_`az{~\x7f"
RUN_TEMPLATES = ["({s}+)(.)", '"({s}*)"', "({s}+?)([ \"])", "^({s}*)$", "({s}{{8,}})({s}?)", "(?:a|({s}+)) ({s}+)",
                 r"({s}+\B)(.?)", r"({s}+)\b", "({s}+)\\1?x"]


def test_program_and_regex_agree_on_long_runs(spark):
    """The walker's skipping of runs (a DFA state that loops on a byte set, a SCAN of a set, the check for bytes the
    program is not sure about) gives java.util.regex's answers on long lines of edge bytes, group for group."""
    rnd = random.Random(5)
    lines = []
    for _ in range(120):
        run = "".join(rnd.choice(EDGE_BYTES) for _ in range(rnd.randint(0, 3)))
        body = rnd.choice(["a" * rnd.randint(0, 40), " " * rnd.randint(0, 20), "x" * rnd.randint(0, 30) + '"', ""])
        lines.append("".join(rnd.choice([run, body, rnd.choice(EDGE_BYTES)]) for _ in range(rnd.randint(0, 12))))
    regexes = [t.format(s=s) for s in RUN_SETS for t in RUN_TEMPLATES]
    programs, matched = program_against_regex(spark, lines, regexes)
    assert programs >= len(RUN_SETS) * (len(RUN_TEMPLATES) - 1)  # all but the backreference template get a program
    assert matched > len(lines) * len(regexes) // 4


def test_logstash_spec_cases_through_the_jvm(spark):
    """The cases of Logstash's own pattern tests (tests/fixtures/grok/logstash_spec_cases.yaml): every case's
    pattern on every case's line, in the JVM (Grok.java, java.util.regex) gives the reference's groups
    (Python re, which the fast conformance test checks against Logstash) on ASCII lines, and Logstash's answer
    on the non-ASCII line where the Python reference cannot (POSIX brackets are Unicode there)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StringType
    from ruamel.yaml import YAML

    from etl.compile import jvm
    from etl.components.transforms.grok import build as gk

    cases = YAML(typ="safe").load(ROOT / "tests" / "fixtures" / "grok" / "logstash_spec_cases.yaml")
    lines = [c["line"] for c in cases]
    pats = []
    for c in cases:
        p = c.get("grok") or ("^%{" + c["pattern"] + "}$" if c.get("exact") else "%{" + c["pattern"] + "}")
        pats.append(expand(p, library=c.get("library", "legacy")))
    df = spark.createDataFrame(list(enumerate(lines)), "i int, line string")
    cols = [jvm.static_call(spark, "etl.jvm.Grok", "captures", ArrayType(StringType()), F.col("line"),
                            F.lit(bytearray(gk.spec_bytes(g, program=False)))).alias(f"c{k}")
            for k, g in enumerate(pats)]  # java.util.regex (the programs' agreement with it: the tests above)
    rows = {r.i: r for r in df.select("i", *cols).collect()}
    compared = matched = 0
    for k, g in enumerate(pats):
        for i, line in enumerate(lines):
            got = rows[i][f"c{k}"]
            if not line.isascii():
                continue
            m = g.regex.search(line)
            assert got == (None if m is None else [m.group(f.group) for f in g.fields]), (g.pattern, line)
            compared += 1
            matched += m is not None
    assert compared == 45 * 43 and matched > 45  # 2 lines are not ASCII
    k = next(k for k, c in enumerate(cases) if c.get("jvm"))
    assert rows[k][f"c{k}"] == ["/opt/Čierný_Peter/.中"]  # Logstash's answer (core_spec.rb)
