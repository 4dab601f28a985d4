"""Every Sigma value modifier and condition form, with a matching event and a near miss each.

Expected verdicts are the Sigma specification's meaning (case-insensitive strings, wildcards, OR of list
values, `all`, ...); each is checked through the reference interpreter and the optimized matcher."""

from __future__ import annotations

import base64

import pytest

from etl.load.sigma_map import Unsupported
from tests.sigma_rules.helpers import matches, sigma_rule


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


CASES = [
    # (name, detection, matching event, near miss)
    ("plain string, case-insensitive", "sel: {Image: 'C:\\Windows\\cmd.exe'}\ncondition: sel",
     {"Image": "c:\\windows\\CMD.EXE"}, {"Image": "C:\\Windows\\cmd.exe2"}),
    ("contains", "sel: {CommandLine|contains: mimikatz}\ncondition: sel",
     {"CommandLine": "run MimiKatz now"}, {"CommandLine": "mimikat z"}),
    ("startswith", "sel: {CommandLine|startswith: 'net user'}\ncondition: sel",
     {"CommandLine": "NET USER x /add"}, {"CommandLine": " net user"}),
    ("endswith", "sel: {Image|endswith: '\\whoami.exe'}\ncondition: sel",
     {"Image": "C:\\x\\WhoAmI.exe"}, {"Image": "C:\\x\\whoami.exe.bak"}),
    ("list of values is OR", "sel: {Image|endswith: ['\\a.exe', '\\b.exe']}\ncondition: sel",
     {"Image": "C:\\b.exe"}, {"Image": "C:\\c.exe"}),
    ("contains|all", "sel: {CommandLine|contains|all: [' -w hidden', ' -enc']}\ncondition: sel",
     {"CommandLine": "ps -W Hidden -Enc AAA"}, {"CommandLine": "ps -w hidden AAA"}),
    ("* wildcard inside (\\\\ before it is one backslash)", "sel: {Image: 'C:\\\\*\\cmd.exe'}\ncondition: sel",
     {"Image": "C:\\Windows\\System32\\cmd.exe"}, {"Image": "D:\\Windows\\cmd.exe"}),
    ("? wildcard", "sel: {Name: 'a?c'}\ncondition: sel", {"Name": "aXc"}, {"Name": "abbc"}),
    ("escaped ? is literal", "sel: {Name: 'what\\?'}\ncondition: sel", {"Name": "What?"}, {"Name": "whatx"}),
    ("escaped * is literal", "sel: {Name: 'a\\*b'}\ncondition: sel", {"Name": "A*B"}, {"Name": "axb"}),
    ("% and _ are plain text", "sel: {Name: '100%_done*'}\ncondition: sel",
     {"Name": "100%_done now"}, {"Name": "100x_done"}),
    ("lone * needs a value", "sel: {Name: '*'}\ncondition: sel", {"Name": ""}, {"Other": "x"}),
    ("empty string", "sel: {Name: ''}\ncondition: sel", {"Name": ""}, {"Name": " "}),
    ("re is case-sensitive", "sel: {CommandLine|re: '^cmd\\s+/c'}\ncondition: sel",
     {"CommandLine": "cmd  /c dir"}, {"CommandLine": "CMD /c dir"}),
    ("re|i", "sel: {CommandLine|re|i: '^cmd\\s+/c'}\ncondition: sel",
     {"CommandLine": "CMD /c dir"}, {"CommandLine": "xcmd /c"}),
    ("re|m", "sel: {Text|re|m: '^b$'}\ncondition: sel", {"Text": "a\nb\nc"}, {"Text": "a\nbb"}),
    ("re|s", "sel: {Text|re|s: 'a.b'}\ncondition: sel", {"Text": "a\nb"}, {"Text": "a\n\nb"}),
    ("re searches anywhere", "sel: {Text|re: 'b+c'}\ncondition: sel", {"Text": "abbcd"}, {"Text": "ac"}),
    ("cidr v4", "sel: {DestinationIp|cidr: 10.0.0.0/8}\ncondition: sel",
     {"DestinationIp": "10.1.2.3"}, {"DestinationIp": "11.0.0.1"}),
    ("cidr v6 and list", "sel: {DestinationIp|cidr: ['fe80::/10', '192.168.0.0/16']}\ncondition: sel",
     {"DestinationIp": "fe80::1"}, {"DestinationIp": "fec0::1"}),
    ("base64", "sel: {CommandLine|base64: whoami}\ncondition: sel",
     {"CommandLine": b64(b"whoami")}, {"CommandLine": b64(b"whoami") + "x"}),
    ("base64|contains", "sel: {CommandLine|base64|contains: whoami}\ncondition: sel",
     {"CommandLine": "-e " + b64(b"whoami")}, {"CommandLine": "-e " + b64(b"whoam")}),
    ("base64offset|contains", "sel: {CommandLine|base64offset|contains: 'Invoke-'}\ncondition: sel",
     {"CommandLine": "-e " + b64(b"zz;Invoke-Foo")}, {"CommandLine": "-e " + b64(b"zz;Invoke_Foo")}),
    ("base64 is matched as written", "sel: {CommandLine|base64offset|contains: 'http'}\ncondition: sel",
     {"CommandLine": b64(b"xhttp://")}, {"CommandLine": b64(b"xhttp://").upper()}),
    ("utf16le|base64offset|contains", "sel: {CommandLine|utf16le|base64offset|contains: 'iex'}\ncondition: sel",
     {"CommandLine": b64("a iex(".encode("utf-16le"))}, {"CommandLine": b64(b"a iex(")}),
    ("wide|base64offset|contains", "sel: {CommandLine|wide|base64offset|contains: 'iex'}\ncondition: sel",
     {"CommandLine": b64("iex".encode("utf-16le"))}, {"CommandLine": b64("iex".encode("utf-16be"))}),
    ("utf16be|base64offset|contains", "sel: {CommandLine|utf16be|base64offset|contains: 'iex'}\ncondition: sel",
     {"CommandLine": b64("xiex".encode("utf-16be"))}, {"CommandLine": b64("xiEx".encode("utf-16be"))}),
    ("utf16|base64 (with BOM)", "sel: {CommandLine|utf16|base64: 'ab'}\ncondition: sel",
     {"CommandLine": b64(b"\xff\xfea\x00b\x00")}, {"CommandLine": b64(b"a\x00b\x00")}),
    ("windash", "sel: {CommandLine|windash|contains: ' -enc '}\ncondition: sel",
     {"CommandLine": "ps /enc AAA"}, {"CommandLine": "ps xenc AAA"}),
    ("windash en dash", "sel: {CommandLine|windash|contains: ' -enc '}\ncondition: sel",
     {"CommandLine": "ps \u2013enc AAA"}, {"CommandLine": "ps enc AAA"}),
    ("exists: true", "sel: {User|exists: true}\ncondition: sel", {"User": "x"}, {"Other": "x"}),
    ("exists: false", "sel: {User|exists: false}\ncondition: sel", {"Other": "x"}, {"User": "x"}),
    ("gt", "sel: {Count|gt: 5}\ncondition: sel", {"Count": 6}, {"Count": 5}),
    ("gte", "sel: {Count|gte: 5}\ncondition: sel", {"Count": 5}, {"Count": 4.5}),
    ("lt", "sel: {Count|lt: 5}\ncondition: sel", {"Count": 4}, {"Count": 5}),
    ("lte", "sel: {Count|lte: 5}\ncondition: sel", {"Count": 5.0}, {"Count": 6}),
    ("neq", "sel: {Count|neq: 5}\ncondition: sel", {"Count": 4}, {"Count": 5}),
    ("cased", "sel: {Image|cased: 'CMD.exe'}\ncondition: sel", {"Image": "CMD.exe"}, {"Image": "cmd.exe"}),
    ("cased|contains", "sel: {Image|cased|contains: 'PS'}\ncondition: sel", {"Image": "aPSb"}, {"Image": "aPsb"}),
    ("null", "sel: {User: null}\ncondition: sel", {"User": None}, {"User": "x"}),
    ("null on a missing field", "sel: {User: null}\ncondition: sel", {"Other": 1}, {"User": ""}),
    ("number equals the number", "sel: {EventID: 4688}\ncondition: sel", {"EventID": 4688}, {"EventID": 4689}),
    ("number equals its text", "sel: {EventID: 4688}\ncondition: sel", {"EventID": "4688"}, {"EventID": "04688"}),
    ("digit string equals the number", "sel: {EventID: '4688'}\ncondition: sel", {"EventID": 4688},
     {"EventID": 46880}),
    ("boolean", "sel: {Elevated: true}\ncondition: sel", {"Elevated": True}, {"Elevated": False}),
    ("mapping: fields are AND", "sel: {Image|endswith: '\\a.exe', User: bob}\ncondition: sel",
     {"Image": "C:\\a.exe", "User": "BOB"}, {"Image": "C:\\a.exe", "User": "alice"}),
    ("list of mappings is OR", "sel:\n  - {Image|endswith: '\\a.exe'}\n  - {User: bob}\ncondition: sel",
     {"Image": "x", "User": "bob"}, {"Image": "x", "User": "bobby"}),
    ("and", "a: {X: 1}\nb: {Y: 2}\ncondition: a and b", {"X": 1, "Y": 2}, {"X": 1, "Y": 3}),
    ("or", "a: {X: 1}\nb: {Y: 2}\ncondition: a or b", {"X": 0, "Y": 2}, {"X": 0, "Y": 3}),
    ("not", "a: {X: 1}\nb: {Y: 2}\ncondition: a and not b", {"X": 1, "Y": 3}, {"X": 1, "Y": 2}),
    ("not on a missing field is true", "a: {X: 1}\nb: {Y: 2}\ncondition: a and not b", {"X": 1}, {"X": 2}),
    ("parentheses", "a: {X: 1}\nb: {Y: 2}\nc: {Z: 3}\ncondition: a and (b or c)",
     {"X": 1, "Z": 3}, {"X": 1, "Y": 0, "Z": 0}),
    ("precedence: and before or", "a: {X: 1}\nb: {Y: 2}\nc: {Z: 3}\ncondition: a or b and c",
     {"X": 1}, {"Y": 2}),
    ("1 of x*", "sel_a: {X: 1}\nsel_b: {Y: 2}\nother: {Z: 3}\ncondition: 1 of sel_* and other",
     {"Y": 2, "Z": 3}, {"X": 0, "Y": 0, "Z": 3}),
    ("all of x*", "sel_a: {X: 1}\nsel_b: {Y: 2}\ncondition: all of sel_*", {"X": 1, "Y": 2}, {"X": 1, "Y": 0}),
    ("1 of them", "a: {X: 1}\nb: {Y: 2}\ncondition: 1 of them", {"Y": 2}, {"X": 2, "Y": 1}),
    ("all of them", "a: {X: 1}\nb: {Y: 2}\ncondition: all of them", {"X": 1, "Y": 2}, {"Y": 2}),
    ("fieldref: equal to the other field, caselessly", "sel: {User|fieldref: ParentUser}\ncondition: sel",
     {"User": "CORP\\Bob", "ParentUser": "corp\\BOB"}, {"User": "CORP\\Bob", "ParentUser": "CORP\\Bo"}),
    ("fieldref: a missing field is unequal", "sel: {User|fieldref: ParentUser}\ncondition: sel",
     {"User": "\u212a", "ParentUser": "k"}, {"User": "x"}),
    ("not 1 of x*", "s: {X: 1}\nf_a: {Y: 1}\nf_b: {Z: 1}\ncondition: s and not 1 of f_*",
     {"X": 1, "Y": 0}, {"X": 1, "Z": 1}),
]


@pytest.mark.parametrize("name, detection, hit, miss", CASES, ids=[c[0] for c in CASES])
def test_modifier_or_condition(name, detection, hit, miss):
    rule = sigma_rule(detection)
    assert matches(rule, hit) is True
    assert matches(rule, miss) is False


def test_keyword_searches_look_in_the_keyword_fields():
    rule = sigma_rule("keywords: ['mimikatz', 'sekurlsa::*']\ncondition: keywords",
                      keyword_fields=("CommandLine", "Message"))
    assert matches(rule, {"CommandLine": "x", "Message": "found MIMIKATZ here"}) is True
    assert matches(rule, {"CommandLine": "sekurlsa::logonpasswords", "Message": ""}) is True
    assert matches(rule, {"CommandLine": "run sekurlsa::x", "Message": "mimikat"}) is False  # a wildcard is anchored


def test_keyword_all_and_field_in_one_rule():
    rule = sigma_rule("kw: {'|all': ['foo', 'bar']}\nsel: {User: bob}\ncondition: kw and sel",
                      keyword_fields=("Message",))
    assert matches(rule, {"Message": "bar then foo", "User": "bob"}) is True
    assert matches(rule, {"Message": "bar only", "User": "bob"}) is False


def test_expand_takes_each_value_of_its_placeholder():
    rule = sigma_rule("sel: {Image|expand: '%sys%\\cmd.exe'}\ncondition: sel",
                      vars_={"sys": ["C:\\Windows\\System32", "C:\\Windows\\SysWOW64"]})
    assert matches(rule, {"Image": "c:\\windows\\syswow64\\CMD.exe"}) is True
    assert matches(rule, {"Image": "C:\\Windows\\cmd.exe"}) is False


def test_field_mapping_renames_and_nests():
    rule = sigma_rule("sel: {Image|endswith: '\\a.exe'}\ncondition: sel",
                      field_mapping={"Image": "process.executable"})
    assert matches(rule, {"process": {"executable": "C:\\A.EXE"}}) is True
    assert matches(rule, {"Image": "C:\\a.exe"}) is False


@pytest.mark.parametrize("detection, reason", [
    ("sel: {User|fieldref|startswith: ParentUser}\ncondition: sel",
     "fieldref with startswith, endswith or contains (field 'User' with field 'ParentUser') is not supported"),
    ("sel: {Image|expand: '%nope%\\x'}\ncondition: sel", "placeholder %nope% has no value"),
    ("kw: [foo]\ncondition: kw", "a keyword (field-less) search needs `keyword_fields`"),
    ("sel: {Time|minute: 5}\ncondition: sel", "the minute modifier (a part of a timestamp) is not supported"),
])
def test_what_etl_cannot_express_is_unsupported_with_the_reason(detection, reason):
    with pytest.raises(Unsupported) as e:
        sigma_rule(detection)
    assert e.value.reason.startswith(reason)


def test_presets_map_sigma_fields_and_field_mapping_wins():
    from etl.load.sigma import field_mapper
    from etl.spec.sigma import SigmaSpec

    ecs = field_mapper(SigmaSpec(paths=["x"], preset="ecs", field_mapping={"User": "who"}))
    assert [ecs(f) for f in ("Image", "ParentCommandLine", "EventID", "User", "IntegrityLevel")] == [
        "process.executable", "process.parent.command_line", "winlog.event_id", "who",
        "winlog.event_data.IntegrityLevel"]
    sysmon = field_mapper(SigmaSpec(paths=["x"], preset="sysmon"))
    assert [sysmon(f) for f in ("Image", "EventID")] == ["winlog.event_data.Image", "winlog.event_id"]
    ocsf = field_mapper(SigmaSpec(paths=["x"], preset="ocsf"))
    assert [ocsf(f) for f in ("Image", "ParentImage", "CommandLine", "User", "OriginalFileName")] == [
        "process.file.path", "actor.process.file.path", "process.cmd_line", "actor.user.name",
        "unmapped.OriginalFileName"]
    plain = field_mapper(SigmaSpec(paths=["x"]))
    assert plain("Image") == "Image"
