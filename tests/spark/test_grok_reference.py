"""The grok transform's build in the JVM (etl/jvm/Grok.java, its matcher program and java.util.regex, then the
field rules of etl/components/transforms/grok/build.py) against the pure-Python reference (etl.grok's GrokPattern.match):
on lines Hypothesis builds from the patterns' pieces plus mutations, every pattern on every line, the same answer:
no match, or the same fields, lists, nested structs and typed values. One DataFrame per example: each pattern's
grok (with `target`, so that a line that does not match is a NULL struct, told apart from a match without values)
adds its column, both engines (grok-program, java-regex), and one collect answers them all."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from etl.grok import combine, expand
from etl.components.transforms.grok.spec import GrokTransform

pytestmark = pytest.mark.spark

# (pattern(s), options): typed fields, an optional part, a field captured twice (a list), alternatives (one
# value), a nested [a][b], several patterns both ways, empty captures kept, the ecs-v1 library's nested names
PATTERNS = [
    ("%{IP:client} %{WORD:verb} %{INT:n:int}(?: %{NUMBER:f:float})?", {}),
    (r"^%{WORD:w} %{WORD:w}(?: \[%{INT:[a][b]:int}\])? (?:%{INT:t}|%{WORD:t})$", {}),
    (["%{INT:n:int}", "x=%{WORD:w}", "%{WORD:w}"], {"break_on_match": False}),
    (["v=%{INT:v:long}", "%{IP:ip}", "%{WORD:v2}"], {}),
    ("^%{WORD:a}:(?<b>[a-z]*):(?<c>x)?", {"keep_empty_captures": True}),
    ("%{SYSLOGPROG}: %{NUMBER:d:double}", {"patterns": "ecs-v1"}),
]
ENGINES = ("grok-program", "java-regex")

words = st.text("abcxyzXZ_09", min_size=1, max_size=5)
ints = st.integers(-10**11, 10**11).map(str)
numbers = st.tuples(st.integers(0, 999), st.integers(0, 99)).map(lambda t: f"{t[0]}.{t[1]}")
ips = st.ip_addresses(v=4).map(str)
pieces = st.one_of(words, ints, numbers, ips, st.sampled_from(["x=", "v=", "[", "]", ":", "sshd[12]", "é", "Ω", "\t"]))
seps = st.sampled_from([" ", " ", ":", "", "=", " ["])


@st.composite
def lines(draw) -> str:
    parts = draw(st.lists(st.tuples(pieces, seps), min_size=1, max_size=7))
    line = "".join(p + s for p, s in parts)
    k = draw(st.integers(0, 5))
    if k == 0 and line:  # delete a character
        i = draw(st.integers(0, len(line) - 1))
        line = line[:i] + line[i + 1:]
    elif k == 1:  # insert one, ASCII or not, or a newline (a multi-line message)
        i = draw(st.integers(0, len(line)))
        line = line[:i] + draw(st.sampled_from(["-", "1", "a", " ", "\u00e9", "\u4e2d", "]", "\n"])) + line[i:]
    return line


def _f32(v: object) -> object:
    return struct.unpack("f", struct.pack("f", v))[0] if isinstance(v, float) else v


def _reference(k: int, line: str) -> object:
    pattern, opts = PATTERNS[k]
    g = expand(combine(pattern, opts.get("break_on_match", True)), None, opts.get("patterns", "legacy"))
    got = g.match(line, {}, (), opts.get("keep_empty_captures", False))
    if got is None:
        return None
    floats = {f.path[0] for f in g.fields if f.type == "float"}  # a Spark float is 32 bits
    return {name: _f32(v) if name in floats else v for name, v in got.items()}


def _plain(v: object) -> object:
    return v.asDict(recursive=True) if hasattr(v, "asDict") else v


@settings(max_examples=2, deadline=None, phases=[Phase.explicit, Phase.generate],  # shrinking: minutes of Spark jobs
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(lines(), min_size=60, max_size=80))
def test_jvm_grok_equals_the_reference(spark, batch):
    from etl.components.transforms.grok import build as gk

    df = spark.createDataFrame([(i, x) for i, x in enumerate(batch)], "i int, line string")
    for k, (pattern, opts) in enumerate(PATTERNS):
        for engine in ENGINES:
            spec = GrokTransform.model_validate({"id": f"g{k}", "type": "grok", "inputs": ["src"], "field": "line",
                                                 "pattern": pattern, "target": f"t{k}_{engine[0]}",
                                                 "on_error": "keep", **opts})
            ctx = SimpleNamespace(pipeline="p", built_with=lambda node, aspect, e=engine: e)
            df = gk.build(ctx, SimpleNamespace(id=spec.id, spec=spec), [df]).out
    rows = sorted(df.collect(), key=lambda r: r.i)
    wrong = [(k, engine, r.line, _plain(r[f"t{k}_{engine[0]}"]), _reference(k, r.line)) for r in rows
             for k in range(len(PATTERNS)) for engine in ENGINES
             if _plain(r[f"t{k}_{engine[0]}"]) != _reference(k, r.line)]
    assert wrong == [], "\n".join(f"pattern {k} {engine} {line!r}: JVM {a!r}, reference {b!r}"
                                   for k, engine, line, a, b in wrong[:10])
