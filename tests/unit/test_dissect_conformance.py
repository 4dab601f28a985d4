"""Logstash's dissect, case by case, against etl.dissect's reference (the JVM engine is compared with it in
tests/spark/test_dissect.py, on the same CASES).

The cases are logstash-plugins/logstash-filter-dissect's (Apache-2.0): its compatibility suite
(spec/fixtures/dissect_tests.json, all 15), the examples of spec/filters/dissect_spec.rb and of its documentation
(docs/index.asciidoc), with the fields Logstash gives; then the quirks of its scan (Dissector.dissectValues),
read from its source, and etl's conversions (BigDecimal's rules)."""

from __future__ import annotations

import pytest

from etl.dissect import DissectError, apply, convert, parse, parse_mappings

TRACE = ("18-Apr-2018 06:53:20.411 INFO [http-nio-8080-exec-1] org.apache.coyote.http11.Http11Processor.service "
         "Error parsing HTTP request header\n Note: further occurrences of HTTP header parsing errors will be logged "
         "at DEBUG level.\n    at java.lang.Thread.run(Thread.java:748)")
SVC = "[25/05/16 09:10:38:425 BST] 00000001 SystemOut cpu=95.43% java.lang:type=MemoryPool,name=class storage"
SVC_MB = ("[25/05/16 09:10:38:425 BST]྿྿྿00000001྿SystemOut྿྿྿྿cpu=95.43%྿྿java.lang:type=MemoryPool,"
          "name=class storage")

# (name, pattern of `message`, line, options, fields set (besides message), indirect pairs, failure)
CASES: list[tuple[str, str, str, dict, dict, dict, str | None]] = [
    # dissect_tests.json
    ("complex stack trace", "%{day}-%{month}-%{year} %{hour} %{severity} [%{thread_id}] %{origin} %{message}", TRACE,
     {}, {"day": "18", "month": "Apr", "year": "2018", "hour": "06:53:20.411", "severity": "INFO",
          "thread_id": "http-nio-8080-exec-1", "origin": "org.apache.coyote.http11.Http11Processor.service",
          "message": TRACE.split("service ", 1)[1]}, {}, None),
    ("simple dissect", "%{key}", "foobar", {}, {"key": "foobar"}, {}, None),
    ("dissect two replacement", "%{key1} %{key2}", "foo bar", {}, {"key1": "foo", "key2": "bar"}, {}, None),
    ("one level dissect not end of string", "/var/%{key}/log", "/var/foobar/log", {}, {"key": "foobar"}, {}, None),
    ("one level dissect", "/var/%{key}", "/var/foobar/log", {}, {"key": "foobar/log"}, {}, None),
    ("multiple keys dissect end of string", "/var/%{key}/log/%{key1}", "/var/foobar/log/apache", {},
     {"key": "foobar", "key1": "apache"}, {}, None),
    ("multiple keys not end of string", "/var/%{key}/log/%{key1}.log", "/var/foobar/log/apache.log", {},
     {"key": "foobar", "key1": "apache"}, {}, None),
    ("simple ordered", "%{+key/3} %{+key/1} %{+key/2}", "1 2 3", {}, {"key": "2 3 1"}, {}, None),
    ("simple append", "%{key}-%{+key}-%{+key}", "1-2-3", {}, {"key": "1-2-3"}, {}, None),
    ("indirect field", "%{key} %{&key}", "hello world", {}, {"key": "hello"}, {"hello": "world"}, None),
    ("skip field", "%{} %{key}", "hello world", {}, {"key": "world"}, {}, None),
    ("named skiped field with indirect", "%{?key} %{&key}", "hello world", {}, {}, {"hello": "world"}, None),
    ("missing fields", "%{name},%{addr1},%{addr2},%{addr3},%{city},%{zip}",
     "Jane Doe,4321 Fifth Avenue,,,New York,87432", {},
     {"name": "Jane Doe", "addr1": "4321 Fifth Avenue", "addr2": "", "addr3": "", "city": "New York",
      "zip": "87432"}, {}, None),
    ("ignore right padding", "%{id} %{function->} %{server}", "00000043 ViewReceive     machine-321", {},
     {"id": "00000043", "function": "ViewReceive", "server": "machine-321"}, {}, None),
    ("ignore left padding", "%{id->} %{function} %{server}", "00000043    ViewReceive machine-321", {},
     {"id": "00000043", "function": "ViewReceive", "server": "machine-321"}, {}, None),
    # dissect_spec.rb
    ("basic dissection", "[%{occurred_at}] %{code} %{service->} %{ic} %{svc_message}",
     "[25/05/16 09:10:38:425 BST] 00000001 SystemOut     O java.lang:type=MemoryPool,name=class storage", {},
     {"occurred_at": "25/05/16 09:10:38:425 BST", "code": "00000001", "service": "SystemOut", "ic": "O",
      "svc_message": "java.lang:type=MemoryPool,name=class storage"}, {}, None),
    ("like CSV with missing fields", '[%{occurred_at}] %{code} %{service} values: "%{v1}","%{v2}","%{v3}"%{rest}',
     '[25/05/16 09:10:38:425 BST] 00000001 SystemOut values: "f1","","f3"', {},
     {"occurred_at": "25/05/16 09:10:38:425 BST", "code": "00000001", "service": "SystemOut", "v1": "f1",
      "v2": "", "v3": "f3", "rest": ""}, {}, None),
    # Logstash converts the indirect field cpu too (95.43): etl's indirect fields stay text (README "Dissect")
    ("datatype conversion", "[%{occurred_at}] %{code} %{service} %{?ic}=%{&ic}% %{svc_message}", SVC,
     {"convert_datatype": {"code": "int"}},
     {"occurred_at": "25/05/16 09:10:38:425 BST", "code": 1, "service": "SystemOut",
      "svc_message": "java.lang:type=MemoryPool,name=class storage"}, {"cpu": "95.43"}, None),
    ("multibyte delimiters", "[%{occurred_at}]྿྿྿%{code}྿%{service}྿྿྿྿%{?ic}=%{&ic}%྿྿%{svc_message}", SVC_MB,
     {"convert_datatype": {"code": "int"}},
     {"occurred_at": "25/05/16 09:10:38:425 BST", "code": 1, "service": "SystemOut",
      "svc_message": "java.lang:type=MemoryPool,name=class storage"}, {"cpu": "95.43"}, None),
    ("skip and append", "%{timestamp} %{+timestamp} %{+timestamp} %{logsource} %{} %{program}[%{pid}]: %{msg}",
     "Mar 16 00:01:25 evita skip-this postfix/smtpd[1713]: connect from camomile.cloud9.net[168.100.1.3]", {},
     {"timestamp": "Mar 16 00:01:25", "logsource": "evita", "program": "postfix/smtpd", "pid": "1713",
      "msg": "connect from camomile.cloud9.net[168.100.1.3]"}, {}, None),
    ("delimiters with braces", "{%{a}}{%{b}}%{rest}", "{foo}{bar}", {}, {"a": "foo", "b": "bar", "rest": ""}, {},
     None),
    ("empty field fails", "%{a} %{b}", "", {}, {}, {}, "field 'message' is empty"),
    # docs/index.asciidoc
    ("append order", "%{+a/2} %{+a/1} %{+a/4} %{+a/3}", "1 2 3 go", {}, {"a": "2 1 go 3"}, {}, None),
    ("append in declared order", "%{a} %{b} %{+a}", "1 2 3 go", {}, {"a": "1 3 go", "b": "2"}, {}, None),
    ("indirect from a skip field", "error: %{?err}, %{&err}", "error: some_error, some_description", {}, {},
     {"some_error": "some_description"}, None),
    ("indirect key/value", "%{?a}: %{&a}", "google: 77.98", {}, {}, {"google": "77.98"}, None),
    ("sample configuration", "%{ts} %{+ts} %{+ts} %{src} %{} %{prog}[%{pid}]: %{msg}",
     "Mar 16 00:01:25 evita skip-this postfix/smtpd[1713]: connect", {},
     {"ts": "Mar 16 00:01:25", "src": "evita", "prog": "postfix/smtpd", "pid": "1713", "msg": "connect"}, {}, None),
    ("nested field reference", "%{[a][b]} %{[a][c]} %{d}", "1 2 3", {}, {"a": {"b": "1", "c": "2"}, "d": "3"}, {},
     None),
    # the scan's quirks (Dissector.dissectValues)
    ("delimiter at the first byte", "%{a} %{b} %{c}", " x y", {}, {"a": "", "b": "", "c": " x y"}, {}, None),
    ("trailing text after the last field", "%{a} x", "1 xyz", {}, {"a": "1"}, {}, None),
    ("trailing text never found", "%{a} x", "1 y", {}, {}, {}, "no match for dissect pattern"),
    ("leading text must start the line", "[%{a}]", " [1]", {}, {}, {}, "no match for dissect pattern"),
    ("leading text at the start", "[%{a}] %{b}", "[1] 2", {}, {"a": "1", "b": "2"}, {}, None),
    ("last field empty", "%{a} %{b}", "1 ", {}, {"a": "1", "b": ""}, {}, None),
    ("the first occurrence ends a field", "%{a}, %{b}", "x, y, z", {}, {"a": "x", "b": "y, z"}, {}, None),
    ("padding skipped before the last field", "%{a->} %{b}", "1     ", {}, {"a": "1", "b": ""}, {}, None),
    ("padding of a multi-byte delimiter", "%{a->}--%{b}", "1------2", {}, {"a": "1", "b": "2"}, {}, None),
    ("no padding without ->", "%{a} %{b}", "1   2", {}, {"a": "1", "b": "  2"}, {}, None),
    ("delimiter missing", "%{a}|%{b}", "1 2", {}, {}, {}, "no match for dissect pattern"),
    ("empty indirect key sets nothing", "%{?k}=%{&k}", "=v", {}, {}, {}, None),
    ("a later indirect pair replaces an earlier", "%{?k} %{&k} %{?k2} %{&k2}", "x 1 x 2", {}, {},
     {"x": "2"}, None),
    ("append joins with a space without a delimiter before", "%{+a} %{+a}", "1 2", {}, {"a": "1 2"}, {}, None),
    ("append_separator", "%{a}:%{+a}:%{+a}", "1:2:3", {"append_separator": "/"}, {"a": "1/2/3"}, {}, None),
    ("a normal field set twice keeps the last", "%{a} %{a}", "1 2", {}, {"a": "2"}, {}, None),
    ("the line's field set again", "%{a} %{message}", "1 rest of it", {}, {"a": "1", "message": "rest of it"}, {},
     None),
    ("@metadata fields are not output", "%{[@metadata][x]} %{y}", "1 2", {}, {"@metadata": {"x": "1"}, "y": "2"},
     {}, None),
    ("conversion failure", "%{n} %{f}", "abc 1.5", {"convert_datatype": {"n": "int", "f": "float"}},
     {"n": "abc", "f": "1.5"}, {}, "field 'n': cannot convert 'abc' to int"),
    ("conversions", "%{n} %{f}", "-3.7 1e3", {"convert_datatype": {"n": "int", "f": "float"}},
     {"n": -3, "f": 1000.0}, {}, None),
]


@pytest.mark.parametrize("name,pattern,line,opts,fields,pairs,error", CASES, ids=[c[0] for c in CASES])
def test_logstash_case(name, pattern, line, opts, fields, pairs, error):
    r = apply(parse_mappings({"message": pattern}), {"message": line}, opts.get("convert_datatype"),
              opts.get("append_separator"))
    assert r.error == error
    if error is None or error.startswith("field 'n'"):
        assert r.event == {"message": line, **fields}
        assert r.pairs == pairs


def test_mappings_run_in_order_and_a_later_one_reads_an_earlier_ones_field():
    # docs: "A later dissection can be done on values from a previous dissection"
    mappings = parse_mappings({"message": '"%{field1}" "%{field2}"\n "%{description}"',
                               "description": "%{field3} %{field4} %{field5}"})
    r = apply(mappings, {"message": '"a" "b"\n "x y z"'})
    assert r.error is None
    assert r.event == {"message": '"a" "b"\n "x y z"', "field1": "a", "field2": "b", "description": "x y z",
                       "field3": "x", "field4": "y", "field5": "z"}


def test_append_to_a_column_the_event_has():
    r = apply(parse_mappings({"message": "%{+a} %{b}"}), {"message": "x y", "a": "old"})
    assert (r.error, r.event["a"], r.event["b"]) == (None, "old x", "y")  # joined by a space (no delimiter before)
    r = apply(parse_mappings({"message": "%{+a} %{b}"}), {"message": "x y", "a": None})
    assert r.event["a"] == "x"  # a NULL column is no value


def test_indirect_key_from_a_column_the_event_has():
    r = apply(parse_mappings({"message": "%{&k}"}), {"message": "v", "k": "name"})
    assert r.pairs == {"name": "v"}


def test_a_null_field_fails():
    assert apply(parse_mappings({"message": "%{a}"}), {"message": None}).error == "field 'message' is null"


@pytest.mark.parametrize("pattern,message,offset", [
    ("%{+&timestamp}", "field %{+&timestamp} cannot prefix with both append and indirect (+&)", 0),
    ("x %{&+timestamp}", "field %{&+timestamp} cannot prefix with both append and indirect (&+)", 2),
    ("%{a} %{+}", "field %{+} is a prefix without a name", 5),
    ("%{a} %{&/2}", "field %{&/2} has a prefix and a suffix but no name", 5),
    ("%{a}%{b} %{c}", "fields %{a} and the one after it have no delimiter between them: the pattern never "
     "matches (in Logstash either)", 4),
    ("no field here", "a dissect pattern needs at least one field %{...}", 0),
    ("", "a dissect pattern cannot be empty", 0),
])
def test_patterns_logstash_refuses(pattern, message, offset):
    with pytest.raises(DissectError) as e:
        parse(pattern)
    assert (e.value.message, e.value.offset) == (message, offset)


def test_valid_field_formats():  # dissect_spec.rb: "valid field format handling"
    d = parse("%{+timestamp/2} %{+timestamp/1} %{?no_name} %{&no_name} %{} %{program}[%{pid}]: %{msg}")
    assert [(f.kind, f.name, f.ordinal) for f in d.fields] == [
        ("append", "timestamp", 102), ("append", "timestamp", 101), ("skip", "no_name", 0),
        ("indirect", "no_name", 1000), ("skip", "", 0), ("normal", "program", 1), ("normal", "pid", 1),
        ("normal", "msg", 1)]


def test_trailing_text_with_a_brace_is_cut_after_it():  # Logstash's FINAL_DELIMITER_PATTERN [^}]+$
    d = parse("%{a} x}y")
    assert [f.next for f in d.fields] == ["y", None]


@pytest.mark.parametrize("text,to,expected", [
    ("1", "int", 1), ("00000001", "int", 1), ("+7", "int", 7), ("-3.7", "int", -3), ("3.99999999999999999999", "int", 3),
    (".5", "int", 0), ("1e3", "int", 1000), ("1E+2", "int", 100), ("9223372036854775807", "int", 9223372036854775807),
    ("43947404257507186289", "int", None), ("9223372036854775808", "int", None), ("1e999999999", "int", None),
    ("1e-9999999999", "int", None), (" 3", "int", None), ("3 ", "int", None), ("0x10", "int", None), ("", "int", None),
    ("1_000", "int", None), ("NaN", "float", None), ("Infinity", "float", None), ("95.43", "float", 95.43),
    ("-0", "float", 0.0), ("1e400", "float", None), ("1e-400", "float", 0.0), ("5.", "float", 5.0),
])
def test_conversions_follow_bigdecimal(text, to, expected):
    got = convert(text, to)
    assert got == expected and type(got) is type(expected)
