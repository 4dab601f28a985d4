"""Hypothesis strategies for random rule sets and events (shared by the optimizer tests)."""

from __future__ import annotations

import re

import pyarrow as pa
from hypothesis import strategies as st

from etl.spec.rules import Rule

SCHEMA = pa.schema([
    ("cmd", pa.string()),
    ("user", pa.string()),
    ("port", pa.int64()),
    ("ratio", pa.float64()),
    ("flag", pa.bool_()),
    ("ip", pa.string()),
    ("meta", pa.struct([("host", pa.string())])),
])
TEXT_FIELDS = ["cmd", "user", "meta.host"]
ANY_FIELDS = TEXT_FIELDS + ["port", "ratio", "flag", "ip", "absent"]

# characters where Python re and Hyperscan tend to disagree: case folding (k, s, i and
# their Unicode relatives), non-ASCII word characters, newlines, LIKE metacharacters
ALPHABET = "abkKsSiIx0 1-._|/%\\\n\t" + "é\u00c9\u017f\u212a\u0130\u0131\u00a0\u0663"

texts = st.one_of(
    st.text(alphabet=ALPHABET, max_size=10),
    st.text(max_size=6),
    st.sampled_from(["", "a", "\n", "a\n", "ab\n", "k", "K", "\u212a", "curl x | sh", " a  b ", "ak\n\n"]),
)

ATOMS = [
    "a", "b", "k", "K", "s", "i", "x", "0", "é", "\u00c9", "\u017f", "\u212a", "\u0130", " ", "-", "\\n", "\\t",
    ".", "\\.", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "[a-c]", "[^a]", "[^\\n]", "[kK]", "[\\w-]", "[^\\W\\d]",
    "[\\s\\S]", "\\|", "%", "_", "\\\\", "[0-9]", "[^k]",
]
ASSERTIONS = ["^", "$", "\\A", "\\Z", "\\b", "\\B", "(?=a)", "(?!b)", "(?<=a)", "(?<!b)", "(?=\\w)"]
QUANTS = ["*", "+", "?", "{1,2}", "*?", "+?", "{0,1}", "{2}", "{2,}"]
SPECIAL = [
    "", "a*", "^$", "(?m)^$", "$", "^", "\\b", "a$", "(?m)a$", "a\\Z", "(?m)^a", "(?m)\\n^", "(?m)a\\n^",
    "(a)\\1", "(\\w)\\1", "(?i)(a)\\1", "(a|b)\\1", "(?<=a)b", "a(?=b)", "(?<!a)b", "a(?!b)", "(?>a+)b", "a++",
    "a*+b", "(a)?(?(1)b|c)", "x{2,100000}", "(?i)k", "(?i)[a-z]", "(?i)\u00e9", "(?s)a.b", "a.b", "(?a)\\w+",
    "(?a)\\bk", "(?i:k)s", "(?i)a(?-i:k)", "\\d+", "[^\\d]", "\\W", "curl .*\\| *sh", "(?m)$", "a|", "|a",
]


def _wrap(s: str) -> str:
    return f"(?:{s})"


regex_body = st.recursive(
    st.sampled_from(ATOMS),
    lambda children: st.one_of(
        st.lists(st.one_of(children, st.sampled_from(ASSERTIONS)), min_size=1, max_size=4).map("".join),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: _wrap("|".join(xs))),
        children.map(lambda c: f"({c})"),
        st.tuples(children, st.sampled_from(QUANTS)).map(lambda t: _wrap(t[0]) + t[1]),
    ),
    max_leaves=8,
)


def _valid(rx: str) -> bool:
    try:
        re.compile(rx)
    except re.error:
        return False
    return True


regexes = st.one_of(
    st.sampled_from(SPECIAL),
    st.tuples(st.sampled_from(["", "", "", "(?i)", "(?m)", "(?s)", "(?a)"]), regex_body).map("".join),
).filter(_valid)

literals = st.one_of(st.text(alphabet=ALPHABET, max_size=4), st.sampled_from(["k", "K", "\u212a", "a\n", "%", "_", "\\"]))
like_patterns = st.text(alphabet="ak K%_\\\n\u017f\u212a", max_size=6)
derivations = st.lists(st.sampled_from(["lower", "upper", "trim", "collapse_ws"]), max_size=2)
scalars = st.one_of(
    texts, st.integers(-3, 3), st.sampled_from([0.5, -0.0, 1.0, 2.0, float("nan")]), st.booleans(),
)
IPS = ["10.1.2.3", "192.168.0.1", "::1", "fe80::1", "bad", "10.0.0.256", " 10.1.1.1", "10.255.255.255"]
NETS = ["10.0.0.0/8", "192.168.0.0/16", "::/0", "fe80::/10", "10.1.2.0/24"]


@st.composite
def predicates(draw) -> dict:
    kind = draw(st.sampled_from(["regex", "regex", "regex", "like", "contains", "starts_with", "ends_with",
                                 "eq", "ne", "in", "cmp", "null", "cidr"]))
    field = draw(st.sampled_from(TEXT_FIELDS) if kind in ("like", "contains", "starts_with", "ends_with")
                 and draw(st.booleans()) else st.sampled_from(ANY_FIELDS))
    p: dict = {"field": field}
    if draw(st.booleans()):
        p["apply"] = draw(derivations)
    if kind in ("regex", "like", "contains", "starts_with", "ends_with", "eq", "ne", "in") and draw(st.booleans()):
        p["caseless"] = True
    if kind == "regex":
        p["regex"] = draw(regexes)
    elif kind == "like":
        p["like"] = draw(like_patterns)
    elif kind in ("contains", "starts_with", "ends_with"):
        p[kind] = draw(literals)
    elif kind in ("eq", "ne"):
        p[kind] = draw(scalars)
    elif kind == "in":
        p["in"] = draw(st.lists(scalars, max_size=3))
    elif kind == "cmp":
        p[draw(st.sampled_from(["gt", "ge", "lt", "le"]))] = draw(
            st.one_of(st.sampled_from([-1.0, 0.0, 0.5, 2.0]), texts))
    elif kind == "null":
        p[draw(st.sampled_from(["is_null", "not_null"]))] = True
    else:
        p["field"] = draw(st.sampled_from(["ip", "cmd"]))
        p["cidr"] = draw(st.one_of(st.sampled_from(NETS), st.lists(st.sampled_from(NETS), min_size=1, max_size=2)))
    return p


def trees_of(leaves: st.SearchStrategy, max_leaves: int) -> st.SearchStrategy:
    """Rule trees (all / any / not) over the given predicates."""
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, min_size=1, max_size=3).map(lambda xs: {"all": xs}),
            st.lists(children, min_size=1, max_size=3).map(lambda xs: {"any": xs}),
            children.map(lambda c: {"not": c}),
        ),
        max_leaves=max_leaves,
    )


trees = trees_of(predicates(), 5)


@st.composite
def rule_sets(draw, max_rules: int = 5) -> list[Rule]:
    whens = draw(st.lists(trees, min_size=1, max_size=max_rules))
    return [Rule.model_validate({"id": f"r{i}", "when": w}) for i, w in enumerate(whens)]


@st.composite
def events(draw) -> dict:
    def maybe(s):
        return draw(st.one_of(st.none(), s))

    host = maybe(texts)
    return {
        "cmd": maybe(texts),
        "user": maybe(texts),
        "port": maybe(st.integers(-3, 3)),
        "ratio": maybe(st.sampled_from([0.5, -0.0, 1.0, 2.0, float("nan"), float("inf")])),
        "flag": maybe(st.booleans()),
        "ip": maybe(st.sampled_from(IPS)),
        "meta": None if draw(st.booleans()) and host is None else {"host": host},
    }


def to_batch(evs: list[dict]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(evs, schema=SCHEMA)
