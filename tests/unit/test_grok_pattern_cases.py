"""Every named pattern of both grok libraries, as Logstash's grok filter answers it (tests/fixtures/grok/
pattern_cases.yaml, built by scripts/grok_cases.py: spec lines of logstash-patterns-core where they exist, the
answers a peer's -- joni over Elasticsearch's grok expansion with Logstash's field rules -- never etl's): the
line matches with exactly those fields (names, nesting, types), the near miss does not match. Fast lane: etl's
pure-Python reference (etl.grok.GrokPattern.match); tests/spark/test_grok_pattern_cases.py runs a sample through
the JVM matcher."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from etl.grok import LIBRARIES, bundled_patterns, expand

CASES: dict[str, dict[str, dict]] = YAML(typ="safe").load(
    Path(__file__).resolve().parents[1] / "fixtures" / "grok" / "pattern_cases.yaml")

# Where etl's answer is not Logstash's on purpose (README, grok: "Differences from Logstash"): (library, name) ->
# the reason. The test asserts that the answer does differ, so a fix shows here.
_INT32 = ("the thread id 140169587934976 is past 32 bits: Logstash's :int is Ruby's to_i (any integer), etl's :int "
          "is a Spark INT, so the line is a dead letter (a value that does not convert; :long takes it)")
DIFFERS: dict[tuple[str, str], str] = {
    ("ecs-v1", "EXIM_INTERFACE"): "the port '+.5' is not an integer: Logstash's :int is Ruby's to_i (0), etl makes "
                                  "the line a dead letter (a value that does not convert)",
    ("ecs-v1", "HTTPD24_ERRORLOG"): _INT32,
    ("ecs-v1", "HTTPD_ERRORLOG"): _INT32,
}


def as_logstash(g, out: dict | None) -> dict | None:
    """etl's row as Logstash's event: fields without a value are absent, and a field the pattern may capture
    more than once is a list in etl (its column's type is fixed) where Logstash has a string when it took one."""
    if out is None:
        return None
    arrays = {leaf.path for leaf in g.outputs() if leaf.mode == "array"}

    def walk(node: dict, path: tuple[str, ...]) -> dict:
        res = {}
        for k, v in node.items():
            p = (*path, k)
            if isinstance(v, dict):
                v = walk(v, p)
            elif p in arrays and isinstance(v, list) and len(v) == 1:
                v = v[0]
            if v not in (None, {}):
                res[k] = v
        return res

    return walk(out, ())


@pytest.mark.parametrize("library", LIBRARIES)
def test_every_pattern_of_the_library_has_a_case(library):
    """A library update (scripts/grok_patterns.py) with a new or renamed pattern fails here until
    scripts/grok_cases.py has given it a case."""
    assert sorted(CASES[library]) == sorted(bundled_patterns(library))
    assert len(CASES[library]) == {"legacy": 318, "ecs-v1": 361}[library]


def _ids():
    return [(lib, name) for lib in LIBRARIES for name in CASES[lib]]


@pytest.mark.parametrize("library, name", _ids(), ids=[f"{lib}:{n}" for lib, n in _ids()])
def test_pattern_case(library, name):
    case = CASES[library][name]
    g = expand(case["grok"], library=library)
    got = as_logstash(g, g.match(case["line"]))
    miss = None if case["miss"] is None else g.match(case["miss"])
    right = got == case["fields"] and miss is None
    if (library, name) in DIFFERS:
        assert not right, f"now as Logstash: remove DIFFERS[{library!r}, {name!r}]"
    else:
        assert got == case["fields"], case["line"]
        assert miss is None, (case["miss"], miss)


# Multi-line messages and Unicode word boundaries as Logstash reads grok (Ruby's Regexp::MULTILINE, Onigmo's
# Unicode \b; README, Grok): (pattern, line, the fields' groups in order, None when it does not match).
# tests/spark/test_grok_pattern_cases.py runs them through the JVM matcher.
LOGSTASH_LINES: list[tuple[str, str, list[str | None] | None]] = [
    ("^%{WORD:w}$", "a\nb", ["a"]),  # ^ $ are line anchors
    ("%{GREEDYDATA:x}", "a\nb", ["a\nb"]),  # '.' takes a newline
    ("^%{WORD:w}$", "a b\nc", ["c"]),  # ^ after a \n
    ("^(?<x>%{WORD})?$", "", [None]),  # ^ on an empty line (java.util.regex's multi-line ^ alone fails there)
    ("(?<x>a)\\n^", "a\n", None),  # no ^ after a \n that ends the text
    ("%{WORD:w}\\Z", "ab\n", ["ab"]),  # \Z: before a last \n
    ("%{WORD:w}\\z", "ab\n", None),  # \z: the very end
    ("%{WORD:w}$", "ab\r\n", None),  # only \n ends a line
    ("%{INT:n}", "x\n12", ["12"]),
    ("%{WORD:w}", "20\u00e99 x", ["x"]),  # é is a word character for \b (not for \w)
    ("%{WORD:w}", "e\u0301t x", ["x"]),  # a mark is a word character
    ("%{WORD:w}", "\u2160x y", ["y"]),  # so is a letter number (Ⅰ: Alphabetic)
    ("%{WORD:w}", "x\u203fy z", ["z"]),  # and a connector punctuation
    ("%{WORD:w}", "\U0001d400x y", ["y"]),  # and a letter past the BMP
    ("%{WORD:w}", "x\u00b2 y", ["x"]),  # an other number (²) is not
    ("(?<x>a)\\B", "a\u00e9", ["a"]),
]


@pytest.mark.parametrize("pattern, line, groups", LOGSTASH_LINES)
def test_multi_line_and_unicode_boundaries_as_logstash(pattern, line, groups):
    g = expand(pattern)
    m = g.search(line)
    assert (None if m is None else [m.group(f.group) for f in g.fields]) == groups
    assert (g.match(line) is None) == (groups is None)
