"""Pattern level: a regex predicate run through Hyperscan (and its fallbacks) means re.search."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etl.matching.matcher import Matcher
from etl.optimize import compile_rules, hyperscan_rejects
from etl.regexes.hsregex import like_regex, translate
from etl.spec.rules import Rule
from tests.optimize.strategies import ALPHABET, regexes


def _run(regex: str, caseless: bool, values: list[str | None]) -> list[bool]:
    rule = Rule.model_validate({"id": "r", "when": {"field": "v", "regex": regex, "caseless": caseless}})
    program = compile_rules([rule])
    batch = pa.RecordBatch.from_pydict({"v": pa.array(values, pa.string())})
    return [bool(ids) for ids in Matcher(program, cache=False).match(batch).matched_ids()]


@st.composite
def pattern_and_values(draw):
    rx = draw(regexes)
    chars = "".join(sorted({c for c in rx if c not in "\\()[]{}?*+|^$"})) or "a"
    alphabet = ALPHABET + chars
    base = draw(st.lists(st.text(alphabet=alphabet, max_size=7), min_size=10, max_size=25))
    values = base + [v + "\n" for v in base[:8]] + ["\u00e9" + v + "\u00e9" for v in base[:6]]
    return rx, draw(st.booleans()), values


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern_and_values())
def test_regex_predicate_means_re_search(case):
    rx, caseless, values = case
    flags = re.IGNORECASE if caseless else 0
    want = [re.search(rx, v, flags) is not None for v in values]
    assert _run(rx, caseless, values) == want


# pattern, value, whether re.search finds it: corners where PCRE/Hyperscan and Python differ
CORNERS = [
    ("a\\Z", "a\n", False),  # Python \Z is the very end (Hyperscan's \Z allows a final newline)
    ("a$", "a\n", True),  # $ allows one final newline in both
    ("a$", "a\n\n", False),
    ("(?m)^$", "a\n", True),  # Python: empty line after the final newline
    ("(?m)^b", "a\nb", True),
    ("\\bk", "\u00e9k", False),  # é is a word character for Python
    ("\\Bk", "\u00e9k", True),
    ("(?a)\\bk", "\u00e9k", True),
    ("\\bnc", "\u00e9nc", False),
    ("\\bnc", "\u00e9 nc", True),
    ("\\b\u00e9", " \u00e9", True),  # Hyperscan sees no boundary between two non-ASCII-word characters
    ("x \\b", "x \u00e9", True),
    ("k", "\u212a", False),
    ("(?i)k", "\u212a", True),  # Kelvin sign folds to k
    ("(?i)s", "\u017f", True),  # long s folds to s
    ("(?i)i", "\u0130", True),  # dotted capital I lowercases to i
    ("(?i)\u00e9", "\u00c9", True),
    ("\\d", "\u0663", True),  # Arabic-Indic digit three
    ("(?a)\\d", "\u0663", False),
    ("\\s", "\x1c", True),  # Python whitespace includes \x1c-\x1f
    ("\\w", "\u00e9", True),
    ("a.b", "a\nb", False),
    ("(?s)a.b", "a\nb", True),
    ("a.b", "a\u00e9b", True),  # . is one code point, not one byte
    ("(a)\\1", "aa", True),
    ("(a)\\1", "a a", False),
    ("(?<=a)b", "cb", False),
    ("(?<=a)b", "ab", True),
    ("a(?!b)", "ab", False),
    ("a(?!b)", "ac", True),
    ("x{2,100000}", "xx", True),
    ("", "", True),
    ("^$", "", True),
    ("^$", "\n", True),
    ("^$", "a", False),
    ("a*", "zzz", True),
]


@pytest.mark.parametrize("rx,value,found", CORNERS)
def test_corner_cases(rx, value, found):
    assert (re.search(rx, value) is not None) == found  # the table itself is right
    assert _run(rx, False, [value, None]) == [found, False]


def test_translation_of_typical_patterns():
    assert translate("curl .*\\| *sh").expression == "curl .*\\| *sh"
    assert translate("a\\Z").expression == "a\\z"
    assert translate("wget", re.IGNORECASE).expression == "wget"
    assert translate("kill", re.IGNORECASE).expression == "(?-i:[Kk\\x{212a}])(?-i:[Ii\\x{130}-\\x{131}])ll"
    t = translate("\\bnc\\b")  # next to ASCII word characters: a superset on non-ASCII values
    assert (t.expression, t.ascii_rows, t.other_rows) == ("\\bnc\\b", "exact", "confirm")
    t = translate("x \\b")
    assert (t.expression, t.ascii_rows, t.other_rows) == ("x \\b", "exact", "python")
    t = translate("(a)\\1")
    assert (t.expression, t.ascii_rows, t.other_rows) == ("a(?:a)", "confirm", "confirm")
    assert translate("").always and translate("a*").always
    assert translate("^$").expression is None


def test_hyperscan_rejects():
    assert hyperscan_rejects("curl .*\\| *sh", False) is None
    assert hyperscan_rejects("\\bwget\\b", True) is None
    assert hyperscan_rejects("(a)\\1", False) == "backreference: a Hyperscan superset confirmed by Python re"
    assert hyperscan_rejects("(?<=x)y", False) == "lookbehind: a Hyperscan superset confirmed by Python re"
    assert hyperscan_rejects("x{2,100000}", False) == (
        "Hyperscan rejects the exact form (Bounded repeat is too large): a Hyperscan superset confirmed by Python re")
    assert hyperscan_rejects("^$", False) == "can match an empty string at some positions only"
    assert hyperscan_rejects("(", False).startswith("invalid regular expression")


def test_like_regex():
    assert like_regex("%nc -e%") == "(?s)nc\\ \\-e"
    assert like_regex("a_c") == "(?s)\\Aa.c\\Z"
    assert like_regex("100\\%") == "(?s)\\A100%\\Z"
    assert like_regex("%") == "(?s)"
    assert like_regex("a\\") == "(?s)\\Aa\\\\\\Z"
