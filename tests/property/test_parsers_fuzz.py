"""Property: the SQL expression parser and grok expansion only ever return results or their own errors."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etl import grok
from etl.graph.sql import guess_type, parse

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
SQL_BITS = st.sampled_from(["a", "b.c", "`x y`", "1", "'s'", "\"t\"", "(", ")", "+", "-", "*", "/", "%", "=", "<>",
                            ">=", "AND", "OR", "NOT", "IS", "NULL", "LIKE", "IN", ",", "CASE", "WHEN", "THEN", "END",
                            "cast(", "AS", "int", "x -> x", "[", "]", "SELECT", "FROM", ";", "--", "/*", "*/", " ",
                            "lower(", "count(*)", "over (", "partition by", "1e309", "'unterminated"])


@SETTINGS
@given(st.one_of(st.text(max_size=60), st.lists(SQL_BITS, max_size=25).map(" ".join)))
def test_sql_parse_never_raises(text):
    p = parse(text)
    assert p.error is None or (p.error.line >= 1 and p.error.col >= 1 and p.error.message)
    guess_type(text, {"a": "int"})


GROK_BITS = st.sampled_from(["%{", "}", "%{IP}", "%{IP:ip}", "%{NUMBER:n:int}", "%{WORD:w:float}", "%{NOPE}",
                             "%{IP:a:b:c}", "(", ")", "(?<x>", "(?P<y>", "\\k<x>", "(?P=y)", "[", "]", "[a-z]", "{",
                             "{2}", "{,3}", "\\", "\\d", "\\h", "?", "*", "+", "|", "(?m)", "(?i)", "(?#c)", "&&",
                             "%{GREEDYDATA:msg}", " ", "a", "\\1", "(?:", "(?=", "(?<=a)", "(?>", "[[:alnum:]]",
                             "[[:^alpha:]x]", "[[ab]c]", "[:", "%{WORD:[a][b]}", "%{WORD:[a]}", "(?<[a][c]>",
                             "(?<a.b>", "%{INT:n:long}", "%{WORD:msg}"])


@SETTINGS
@given(st.lists(GROK_BITS, max_size=20).map("".join),
       st.dictionaries(st.sampled_from(["A", "B", "IP"]), st.lists(GROK_BITS, max_size=6).map("".join), max_size=2))
def test_grok_expand_only_raises_grok_error(pattern, custom):
    try:
        g = grok.expand(pattern, custom or None)
        grok.columns_of(g.outputs({"msg": "string"}))  # fields as Logstash sets them: their own errors only
    except grok.GrokError as e:
        assert e.message
        return
    assert g.regex.groups == len(g.fields)
    import re
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        java_as_python = re.compile(re.sub(r"\\[pP]\{\w+\}", "a", g.java_regex.replace("\\z", "\\Z")))
    assert java_as_python.groups == len(g.fields)  # same capturing groups, all unnamed
    assert not java_as_python.groupindex
