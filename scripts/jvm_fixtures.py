"""The JUnit tests' fixtures of etl's jar (java/etl-jvm/src/test/resources/etl/jvm/*.json), written by the Python
that writes what the jar reads at run time, with the answers of the Python reference:

    rules.json    rule programs (etl.optimize.jvmprogram for one field, etl.optimize.jvmmulti for several), events,
                  and the ids of the rules each event matches (etl.optimize.reference.matched_rules)
    grok.json     grok specs as etl/jvm/Grok.java reads them (etl.components.transforms.grok.build.spec_bytes, with and
                  without the matcher program), lines, and their captures by the reference (etl.grok's
                  GrokPattern.search: Logstash's meaning, multi-line messages and Unicode word boundaries included)
    keyhash.json  keys and their 64-bit hashes (etl.compile.keyhash: the lookup store's order)

    python scripts/jvm_fixtures.py          rewrite them (review the diff)
    python scripts/jvm_fixtures.py --check  exit 1 when one is stale (tests/unit/test_jvm_fixtures.py)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "java" / "etl-jvm" / "src" / "test" / "resources" / "etl" / "jvm"

# one field: patterns only (the JVM rule path of etl.optimize.jvmprogram)
ONE_FIELD = [
    ("curl_sh", {"field": "cmd", "regex": "curl .*\\| *sh"}),
    ("kill", {"field": "cmd", "regex": "(?i)\\bkill\\b"}),
    ("wget_not_tmp", {"all": [{"field": "cmd", "regex": "wget "}, {"not": {"field": "cmd", "regex": "/tmp/"}}]}),
    ("digits", {"field": "cmd", "regex": "^\\d{3,}$"}),
]
ONE_FIELD_VALUES = ["curl http://x | sh", "curl x|sh", "KILL -9 1", "skill", "wget http://a/b", "wget /tmp/x",
                    "12345", "12", "", "\u212aill it", "run \u212aILL now", "curl a | bash"]

# several fields: equals / starts / ends / contains needles (the needle tables), caseless ones, null tests, patterns
SEVERAL_FIELDS = [
    ("eq", {"field": "img", "eq": "c:\\windows\\cmd.exe", "caseless": True}),
    ("starts", {"field": "cmd", "starts_with": "powershell"}),
    ("ends", {"field": "img", "ends_with": "\\rundll32.exe", "caseless": True}),
    ("contains", {"all": [{"field": "cmd", "contains": "-enc", "caseless": True},
                          {"field": "user", "ne": "system", "caseless": True}]}),
    ("short", {"field": "cmd", "contains": "/c"}),
    ("no_user", {"all": [{"field": "user", "is_null": True}, {"field": "cmd", "contains": "whoami"}]}),
    ("pattern", {"field": "img", "regex": "(?i)\\\\temp\\\\[a-z]+\\.exe$"}),
]
SEVERAL_FIELDS_FIELDS = ("img", "cmd", "user")
SEVERAL_FIELDS_EVENTS = [
    {"img": "C:\\Windows\\CMD.EXE", "cmd": "cmd /c dir", "user": "alice"},
    {"img": "c:\\x\\RunDll32.exe", "cmd": "powershell -ENC aGk=", "user": "SYSTEM"},
    {"img": "c:\\users\\a\\temp\\evil.exe", "cmd": "Powershell -enc x", "user": "bob"},
    {"img": None, "cmd": "whoami /all", "user": None},
    {"img": "", "cmd": "", "user": ""},
    {"img": "c:\\temp\\x1.exe", "cmd": "/C", "user": "\u017fystem"},
]

GROK = [
    ("%{IP:client} %{WORD:method} %{URIPATHPARAM:request} %{NUMBER:bytes} %{NUMBER:duration}",
     ["55.3.244.1 GET /index.html 15824 0.043", "10.0.0.1 POST /a?b=c 0 1", "no match here", "",
      "1.2.3.4 GET /x 12 3 trailing", "x 1.2.3.4 GET /x 12 3"]),
    ("%{SYSLOGTIMESTAMP:ts} %{SYSLOGHOST:host} %{DATA:program}(?:\\[%{POSINT:pid}\\])?: %{GREEDYDATA:message}",
     ["Jan  1 00:00:01 web1 sshd[42]: Accepted password for bob", "Feb 28 12:34:56 db cron: job done",
      "Feb 28 12:34:56 db cron: multi\nline", "Mar 3 1:2:3 h p: m"]),
    ("%{WORD:a}(?:-%{WORD:b})?", ["x-y", "x", "-", "x-\u00e9t\u00e9", "20\u00e99 x"]),
    ("^%{WORD:a}$", ["x", "x y\nz", "x\n", ""]),
]

KEYS = ["", "a", "abcdefg", "abcdefgh", "abcdefghi", "user-0001", "\u00e9t\u00e9", "k\x1fv", "x" * 40]


def _rules(specs: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from etl.spec.rules import Rule

    return [Rule.model_validate({"id": i, "when": w}) for i, w in specs]


def rules_fixture() -> dict[str, Any]:
    from etl.optimize import compile_rules
    from etl.optimize.jvmmulti import multi_plan
    from etl.optimize.jvmprogram import jvm_plan
    from etl.optimize.reference import matched_rules

    one = _rules(ONE_FIELD)
    single = jvm_plan(compile_rules(one))
    several = _rules(SEVERAL_FIELDS)
    multi = multi_plan(compile_rules(several))
    assert single.body is not None, single.reason
    assert multi.body is not None, multi.reason
    return {
        "one_field": {"program": single.body, "field": single.field,
                      "cases": [{"value": v, "ids": matched_rules(one, {single.field: v})}
                                for v in ONE_FIELD_VALUES]},
        "several_fields": {"program": multi.body, "fields": list(multi.fields),
                           "cases": [{"row": [e[f] for f in multi.fields], "ids": matched_rules(several, e)}
                                     for e in SEVERAL_FIELDS_EVENTS]},
    }


def grok_fixture() -> dict[str, Any]:
    from etl.components.transforms.grok.build import spec_bytes
    from etl.grok import expand

    out = []
    for pattern, lines in GROK:
        g = expand(pattern)
        cases = []
        for line in lines:
            m = g.search(line)
            cases.append({"line": line, "captures": None if m is None else [m.group(f.group) for f in g.fields]})
        out.append({"pattern": pattern, "fields": [f.name for f in g.fields],
                    "spec": spec_bytes(g, program=False).hex(), "spec_with_program": spec_bytes(g).hex(),
                    "has_program": spec_bytes(g) != spec_bytes(g, program=False), "cases": cases})
    return {"patterns": out}


def keyhash_fixture() -> dict[str, Any]:
    import pyarrow as pa

    from etl.compile.keyhash import key_hashes

    hashes = key_hashes(pa.array(KEYS, pa.string()))
    # as Java's signed long
    return {"keys": [{"key": k, "hash": int(h) - (1 << 64) if int(h) >= 1 << 63 else int(h)}
                     for k, h in zip(KEYS, hashes, strict=True)]}


def texts() -> dict[str, str]:
    return {name: json.dumps(make(), indent=1, ensure_ascii=True, sort_keys=True) + "\n"
            for name, make in (("rules.json", rules_fixture), ("grok.json", grok_fixture),
                               ("keyhash.json", keyhash_fixture))}


def main(argv: list[str]) -> int:
    stale = []
    for name, text in texts().items():
        path = FIXTURES / name
        if "--check" in argv:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print(f"stale JUnit fixtures: {', '.join(stale)} (python scripts/jvm_fixtures.py rewrites them)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
