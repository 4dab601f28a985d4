"""etl.grok: expansion, field/group numbers, python/java regex parity (structural)."""
import re

import pytest

from etl import grok
from etl.grok import GrokError, GrokField, expand

APACHE = ('127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 '
          '"http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"')


def _java_as_python(java: str) -> str:
    """Undo the Java-only spellings so Python can run the java_regex and compare groups."""
    for k, bound in grok._BOUNDS_JAVA.items():  # Logstash's \b spelled out (Unicode on any Java)
        java = java.replace(bound, "\\" + k)
    return re.sub(r"\(\?:\\(\d+)\)", r"(?:\\\1)", java.replace("\\z", "\\Z"))


def test_combined_apache_fields_and_groups():
    g = expand("%{COMBINEDAPACHELOG}")
    names = ["clientip", "ident", "auth", "timestamp", "verb", "request", "httpversion",
             "rawrequest", "response", "bytes", "referrer", "agent"]
    assert g.fields == tuple(GrokField(n, "string", i + 1) for i, n in enumerate(names))
    assert re.compile(g.python_regex).groups == 12
    assert re.compile(_java_as_python(g.java_regex)).groups == 12
    assert g.match(APACHE) == {
        "clientip": "127.0.0.1", "ident": "-", "auth": "frank", "timestamp": "10/Oct/2000:13:55:36 -0700",
        "verb": "GET", "request": "/apache_pb.gif", "httpversion": "1.0", "rawrequest": None,
        "response": "200", "bytes": "2326", "referrer": '"http://www.example.com/start.html"',
        "agent": '"Mozilla/4.08 [en] (Win98; I ;Nav)"'}


def test_java_regex_has_no_named_groups_and_matches_same():
    g = expand("%{COMBINEDAPACHELOG}")
    assert "(?P<" not in g.java_regex and "(?<clientip>" not in g.java_regex
    assert "(?P<clientip>" in g.python_regex
    py = re.compile(g.python_regex).search(APACHE)
    jv = re.compile(_java_as_python(g.java_regex)).search(APACHE)
    assert py.groups() == jv.groups()


def test_types_and_match_conversion():
    g = expand("%{IP:ip} %{NUMBER:n:int} %{NUMBER:f:float} %{WORD:w}")
    assert g.fields == (GrokField("ip", "string", 1), GrokField("n", "int", 2),
                        GrokField("f", "float", 3), GrokField("w", "string", 4))
    assert g.captures == (("ip", "string"), ("n", "int"), ("f", "float"), ("w", "string"))
    assert g.match("x 10.0.0.1 42 3.5 hello") == {"ip": "10.0.0.1", "n": 42, "f": 3.5, "w": "hello"}
    assert g.match("nothing here") is None


def test_uncaptured_reference_has_no_group_but_nested_captures_do():
    g = expand("%{SYSLOGBASE} %{GREEDYDATA:message}")
    assert [f.name for f in g.fields] == ["timestamp", "facility", "priority", "logsource", "program", "pid", "message"]
    assert [f.group for f in g.fields] == [1, 2, 3, 4, 5, 6, 7]
    assert g.match("Mar  7 12:01:02 host1 sshd[1234]: Accepted password for bob") == {
        "timestamp": "Mar  7 12:01:02", "facility": None, "priority": None, "logsource": "host1",
        "program": "sshd", "pid": "1234", "message": "Accepted password for bob"}


def test_no_fields_when_nothing_named():
    g = expand("%{IP} %{WORD}")
    assert g.fields == ()
    assert re.compile(g.python_regex).groups == 0
    assert g.match("1.2.3.4 abc") == {}


def test_duplicate_field_names_across_alternatives():
    g = expand("%{HTTPD_ERRORLOG}")
    ts = [f.group for f in g.fields if f.name == "timestamp"]
    assert len(ts) == 2 and ts[0] == 1
    assert "(?P<timestamp__2>" in g.python_regex
    row = g.match("[Wed Oct 11 14:32:52 2000] [error] [client 127.0.0.1] client denied")
    assert row["timestamp"] == "Wed Oct 11 14:32:52 2000"
    assert row["loglevel"] == "error" and row["clientip"] == "127.0.0.1"
    assert row["message"] == "client denied"  # errormsg before logstash-patterns-core 4.2
    row = g.match("[Wed Oct 11 14:32:52 2000] [core:warn] [pid 12:tid 34] AH001: boom")
    assert row["timestamp"] == "Wed Oct 11 14:32:52 2000" and row["loglevel"] == "warn"
    assert row["module"] == "core" and row["message"] == "boom"
    assert [c for c, _ in g.captures].count("timestamp") == 1


def test_oniguruma_named_groups_and_backrefs():
    g = expand(r"(?<a>\w+)-\k<a> %{INT:n:int}")
    assert g.fields == (GrokField("a", "string", 1), GrokField("n", "int", 2))
    assert g.python_regex.startswith("(?P<a>")
    assert "(?P=a)" in g.python_regex
    assert g.java_regex.startswith("(\\w+)-(?:\\1) (")
    assert g.match("foo-foo 12") == {"a": "foo", "n": 12}
    assert g.match("foo-bar 12") is None


def test_python_named_groups_in_custom_pattern_become_fields():
    g = expand("%{PAIR}", {"PAIR": r"(?P<k>[a-z]+)=(?P=k)"})
    assert g.fields == (GrokField("k", "string", 1),)
    assert g.java_regex == r"(?:([a-z]+)=(?:\1))"
    assert g.match("ab=ab") == {"k": "ab"}


def test_plain_groups_become_non_capturing():
    g = expand("%{HOSTNAME:h}")  # HOSTNAME contains a plain (\.?|\b) group
    assert g.fields == (GrokField("h", "string", 1),)
    assert re.compile(g.python_regex).groups == 1
    assert re.compile(_java_as_python(g.java_regex)).groups == 1


def test_literal_braces_are_escaped_for_java_and_quantifiers_kept():
    g = expand("%{WORD:k} {%{INT:v}} x{2} y{,3}")
    assert "\\{" in g.java_regex and "\\}" in g.java_regex
    assert "x{2}" in g.java_regex and "y{0,3}" in g.java_regex
    assert g.match("key {5} xx yy") == {"k": "key", "v": "5"}


def test_java_character_class_escapes():
    g = expand("%{X:x}", {"X": r"[a\[b||c]+"})
    assert g.java_regex == r"([a\[b\|\|c]+)"
    assert g.match("a[b|c") == {"x": "a[b|c"}


def test_nested_classes_are_unions_and_posix_brackets_unicode_in_java():
    # logstash-patterns-core's ecs-v1 UNIXPATH: [[:alnum:]] inside a class is a union, as in Oniguruma
    g = expand("^%{UNIXPATH:p}$", library="ecs-v1")
    assert "[a-zA-Z0-9_%!$@:.,+~-]" in g.python_regex
    assert r"[\p{IsAlphabetic}\p{IsDigit}_%!$@:.,+~-]" in g.java_regex  # Unicode-aware, as in Logstash
    assert g.match("/opt/Cierny_Peter/.x") == {"p": "/opt/Cierny_Peter/.x"}
    assert expand("%{X:x}", {"X": "[a[bc]]+"}).match("-cab-") == {"x": "cab"}
    neg = expand("%{X:x}", {"X": "[[:^alpha:]]+"})
    assert neg.match("ab12-c") == {"x": "12-"} and "[[^\\p{IsAlphabetic}]]" in neg.java_regex
    with pytest.raises(GrokError, match="intersection"):
        expand("%{X:x}", {"X": "[a[b&&c]]"})
    with pytest.raises(GrokError, match="unterminated"):
        expand("%{X:x}", {"X": "[a[b]+"})  # Oniguruma: the outer class is not closed


def test_oniguruma_hex_and_mid_pattern_flags():
    g = expand("%{RUUID:id}")
    assert "\\h" not in g.java_regex and "[0-9a-fA-F]{32}" in g.java_regex
    g = expand("%{RAILS3HEAD}")  # contains (?m) in the middle: hoisted to the start
    assert g.python_regex.startswith("(?m)") and g.java_regex.startswith("(?m)")
    assert [f.name for f in g.fields] == ["verb", "request", "clientip", "timestamp"]
    row = g.match('Started GET "/x?y=1" for 1.2.3.4 at 2024-01-02 03:04:05 +0000')
    assert row == {"verb": "GET", "request": "/x?y=1", "clientip": "1.2.3.4", "timestamp": "2024-01-02 03:04:05 +0000"}


def test_every_bundled_pattern_expands_and_compiles():
    names = grok.pattern_names()
    assert len(names) > 250 and "COMBINEDAPACHELOG" in names
    for n in names:
        g = expand("%{" + n + "}")
        assert re.compile(g.python_regex).groups == len(g.fields)
        assert "(?P" not in g.java_regex and "(?<" not in g.java_regex.replace("(?<=", "").replace("(?<!", "")


def test_unknown_pattern_name_suggests():
    with pytest.raises(GrokError) as ei:
        expand("%{IPV44:ip}")
    assert ei.value.name == "IPV44"
    assert "IPV4" in ei.value.suggestions
    assert "did you mean" in str(ei.value)
    with pytest.raises(GrokError) as ei:
        expand("%{combinedapachelog}")
    assert ei.value.suggestions == ("COMBINEDAPACHELOG",)


@pytest.mark.parametrize("pattern,custom,fragment", [
    ("%{INT:n:integer}", None, "unknown type 'integer'"),
    ("%{INT:a b}", None, "invalid field name"),
    ("%{A:x:y:z}", None, "too many"),
    ("%{LOOP}", {"LOOP": "a%{LOOP}"}, "recursive"),
    ("%{X}", {"X": "(unclosed"}, "does not compile"),
    (r"(\w)\1", None, "numbered backreference"),
    ("%{X}", {"X": "[abc"}, "unterminated character class"),
])
def test_errors(pattern, custom, fragment):
    with pytest.raises(GrokError) as ei:
        expand(pattern, custom)
    assert fragment in str(ei.value)


def test_custom_patterns_override_and_cache():
    g1 = expand("%{MYNUM:n:int}", {"MYNUM": r"\d+"})
    g2 = expand("%{MYNUM:n:int}", {"MYNUM": r"\d+"})
    assert g1 is g2
    assert g1.match("abc 123") == {"n": 123}
    assert expand("%{WORD:w}", {"WORD": "[a-c]+"}).match("xyz abc") == {"w": "abc"}


def test_bundled_patterns_read_once(monkeypatch):
    grok.bundled_patterns()
    calls = []
    monkeypatch.setattr("builtins.open", lambda *a, **k: calls.append(a) or (_ for _ in ()).throw(AssertionError))
    grok.bundled_patterns()
    expand("%{IPV4:never_seen_before_field}")
    assert calls == []


def test_does_not_import_pygrok():
    import subprocess
    import sys
    code = "import sys, etl.grok as g; g.expand('%{COMBINEDAPACHELOG}'); print('pygrok' in sys.modules, 'regex' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
