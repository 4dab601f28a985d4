#!/usr/bin/env python3
"""Build tests/fixtures/grok/pattern_cases.yaml: for every named pattern of both grok libraries, a line it matches,
a near miss it rejects, and the exact fields Logstash's grok filter sets -- answered by a peer, not by etl.

    .venv/bin/python scripts/grok_cases.py --specs DIR     # DIR: a checkout of logstash-plugins/logstash-patterns-core

The peer (scripts/grok_oracle/GrokOracle.java) compiles each pattern with Elasticsearch's grok library (the
elasticsearch-grok jar etl's libraries come from) over etl/grok_patterns -- Logstash's pattern files -- into a joni
(Oniguruma) regex, as Logstash does, and sets fields as Logstash's grok filter does: a search, not a full match;
an empty or missing capture sets nothing; [a][b] (Elasticsearch's a.b) nests; a name captured again makes an
array of strings (a converted value stays the first); :int and :float are Ruby's to_i and to_f.

The lines come, in this order of preference, from (1) the string literals of the spec file that names the pattern
(logstash-patterns-core spec/patterns/*_spec.rb), (2) the value that pattern took inside a spec line of another
pattern (e.g. MONTH in a HAPROXYHTTP line), (3) HAND below, written from the pattern's definition, (4) a line
generated from the pattern's regex that the peer matches. Every case says which (`from`). The near miss is the
first edit of the line (last character cut, first cut, a character appended, a control character inserted,
a digit made a letter, a letter made a digit) that the peer rejects; none where the pattern takes them all.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from scripts.grok_patterns import jar_path  # noqa: E402

LIBRARIES = ("legacy", "ecs-v1")
OUT = ROOT / "tests" / "fixtures" / "grok" / "pattern_cases.yaml"
M2 = Path.home() / ".m2" / "repository" / "org" / "jruby"
JARS = (M2 / "joni" / "joni" / "2.1.29" / "joni-2.1.29.jar", M2 / "jcodings" / "jcodings" / "1.0.44" / "jcodings-1.0.44.jar")

# lines written by hand from a pattern's definition, where no spec line has one
HAND: dict[str, str] = {
    "BACULA_LOG_NO_CONNECT": "Warning: bsock.c:127 Could not connect to Client: web-fd on 10.0.0.5:9102. "
                             "ERR=Connection refused",
    "SYSLOGFACILITY": "<4.6>",
    "MONGO_QUERY": "{ name: \"x\" } ntoreturn: 0",  # unanchored: the lookahead needs the text after the }
    "IPTABLES4_FRAG": "DF",  # its lookbehind wants a space before: unanchored, the match is empty at 0
}


def definitions(library: str) -> dict[str, tuple[str, str]]:
    """name -> (file, definition), every named pattern of the library, in file order."""
    out: dict[str, tuple[str, str]] = {}
    for f in sorted((ROOT / "etl" / "grok_patterns" / library).iterdir()):
        for line in f.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                name, _, body = line.partition(" ")
                out[name] = (f.name, body.strip())
    return out


_LIT = re.compile(r"""'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)\"""")
_DQ = {"n": "\n", "t": "\t", "r": "\r", "e": "\x1b", "0": "\0", "\\": "\\", '"': '"', "'": "'", "#": "#"}


def literals(text: str) -> list[str]:
    """The Ruby string literals of a spec file, in order (single quotes: \\' and \\\\ only; no #{...})."""
    out: list[str] = []
    end = -1
    for m in _LIT.finditer(text):
        if m.group(1) is not None:
            lit = re.sub(r"\\([\\'])", r"\1", m.group(1))
        elif "#{" not in m.group(2):
            lit = re.sub(r"\\(.)", lambda e: _DQ.get(e.group(1), "\\" + e.group(1)), m.group(2))
        else:
            continue
        if out and re.fullmatch(r"\s*\+\s*", text[end:m.start()]):  # "a" + "b"
            out[-1] += lit
        else:
            out.append(lit)
        end = m.end()
    return [s for s in out if s]


TIMEOUT = "timeout"  # the peer gave up (a runaway backtrack): neither a match nor a miss


def matched(a: object) -> bool:
    return a is not None and a is not TIMEOUT


class Oracle:
    def __init__(self, work: Path):
        cp = ":".join(map(str, (jar_path(), *JARS)))
        subprocess.run(["javac", "-d", str(work), "-cp", cp, str(ROOT / "scripts" / "grok_oracle" / "GrokOracle.java")],
                       check=True)
        self.cmd = ["java", "-cp", f"{cp}:{work}", "GrokOracle", str(ROOT / "etl" / "grok_patterns")]

    def ask(self, questions: list[tuple[str, str, str]]) -> list[object]:
        """(library, grok, line) -> None (no match) or the event's fields (all:<library>: [name, value] pairs)."""
        if not questions:
            return []
        hx = lambda s: s.encode().hex()  # noqa: E731
        stdin = "".join(f"{lib}\t{hx(p)}\t{hx(t)}\n" for lib, p, t in questions)
        res = subprocess.run(self.cmd, input=stdin, capture_output=True, text=True, check=True).stdout.splitlines()
        assert len(res) == len(questions), res[-3:]
        out: list[object] = []
        for r in res:
            if r.startswith("ERROR"):
                print(r, file=sys.stderr)
                r = "TIMEOUT"
            out.append(None if r == "NOMATCH" else TIMEOUT if r == "TIMEOUT" else json.JSONDecoder().raw_decode(r, 6)[0])
        return out


def mutations(line: str) -> list[str]:
    out = [line[:-1], line[1:], line + "\x01"]
    mid = len(line) // 2
    out.append(line[:mid] + "\x01" + line[mid:])
    d = re.search(r"\d", line)
    if d:
        out.append(line[: d.start()] + "x" + line[d.end():])
    a = re.search(r"[A-Za-z]", line)
    if a:
        out.append(line[: a.start()] + "7" + line[a.end():])
    return out


def generated(library: str, name: str, rnd: random.Random) -> list[str]:
    """Candidate lines from the pattern's regex (etl's expansion, used only to propose text)."""
    from etl.grok import expand
    from tests.unit.test_grok_conformance import _generate

    from re import _parser  # type: ignore[attr-defined]

    g = expand("^%{" + name + "}$", library=library)
    tree = _parser.parse(g.python_regex, re.ASCII)
    return [_generate(tree, rnd, {}) for _ in range(30)]


def main() -> None:  # noqa: C901 - the script's steps (1)-(4) in order
    ap = argparse.ArgumentParser()
    ap.add_argument("--specs", type=Path, required=True)
    args = ap.parse_args()
    specs = {f.name: f.read_text() for f in sorted((args.specs / "spec" / "patterns").glob("*_spec.rb"))}
    lits = {f: literals(t) for f, t in specs.items()}
    with tempfile.TemporaryDirectory() as tmp:
        oracle = Oracle(Path(tmp))
        cases: dict[str, dict[str, dict]] = {}
        for library in LIBRARIES:
            defs = definitions(library)
            anchored = lambda n: "^%{" + n + "}$"  # noqa: E731
            chosen: dict[str, tuple[str, str]] = {}
            # (1) the literals of the spec files that name the pattern
            qs, who = [], []
            for n in defs:
                for f, text in specs.items():
                    if re.search(r"\b" + re.escape(n) + r"\b", text):
                        for s in dict.fromkeys(lits[f]):
                            qs.append((library, anchored(n), s))
                            who.append((n, s, f"spec {f}"))
            for (n, s, src), a in zip(who, oracle.ask(qs), strict=True):
                if matched(a) and n not in chosen:
                    chosen[n] = (s, src)
            # ... or the part of a literal the pattern matches, as the spec's %{NAME} does
            qs = [(f"all:{library}", "%{" + n + "}", s) for n, s, _ in who if n not in chosen]
            whom = [(n, src) for n, s, src in who if n not in chosen]
            for (n, src), a in zip(whom, oracle.ask(qs), strict=True):
                if matched(a) and n not in chosen and a and a[0][1]:
                    chosen[n] = (a[0][1], f"{src}: the part %{{{n}}} matches")
            # (2) the values patterns took inside those spec lines
            parents = list(chosen.items())
            subs = oracle.ask([(f"all:{library}", anchored(n), s) for n, (s, _) in parents])
            offers: dict[tuple[str, str], str] = {}
            for (parent, (_s, src)), pairs in zip(parents, subs, strict=True):
                for pname, value in pairs or []:
                    pname = re.sub(r"_\d+$", "", pname)
                    if pname in defs and pname not in chosen and value:
                        offers.setdefault((pname, value), f"{src}: its {pname} in a {parent} line")
            for n, v in HAND.items():
                if n in defs and n not in chosen:
                    offers.setdefault((n, v), "hand")
            # (3) by hand, (4) generated
            keys = list(offers)
            hand_ok = lambda n, v: anchored(n) if offers[(n, v)] != "hand" else "%{" + n + "}"  # noqa: E731, B023 - called in this iteration only
            for (n, v), a in zip(keys, oracle.ask([(library, hand_ok(n, v), v) for n, v in keys]), strict=True):
                if matched(a) and (n not in chosen or chosen[n][1] == "hand" and offers[(n, v)] != "hand"):
                    chosen[n] = (v, offers[(n, v)])
            rnd = random.Random(7)
            gen = [(n, c) for n in defs if n not in chosen for c in dict.fromkeys(generated(library, n, rnd)) if c]
            for (n, c), a in zip(gen, oracle.ask([(library, anchored(n), c) for n, c in gen]), strict=True):
                if matched(a) and n not in chosen:
                    chosen[n] = (c, "generated")
            missing = [n for n in defs if n not in chosen]
            if missing:
                print(f"{library}: no line for {missing}", file=sys.stderr)
            # the fields, and the near miss
            entries: dict[str, dict] = {}
            names = [n for n in defs if n in chosen]
            full = oracle.ask([(library, anchored(n), chosen[n][0]) for n in names])
            bare = oracle.ask([(library, g(n), chosen[n][0]) for n, ok in zip(names, full, strict=True)
                               for g in [anchored if matched(ok) else lambda n: "%{" + n + "}"]])
            groks = {n: ("^%{" + n + "}$" if matched(ok) else "%{" + n + "}") if b else
                     ("^%{" + n + ":value}$" if matched(ok) else "%{" + n + ":value}")
                     for n, ok, b in zip(names, full, bare, strict=True)}
            fields = oracle.ask([(library, groks[n], chosen[n][0]) for n in names])
            muts = {n: list(dict.fromkeys(m for m in mutations(chosen[n][0]) if m != chosen[n][0])) for n in names}
            flat = [(n, m) for n in names for m in muts[n]]
            verdicts = oracle.ask([(library, groks[n], m) for n, m in flat])
            miss: dict[str, str | None] = {}
            for (n, m), v in zip(flat, verdicts, strict=True):
                if v is None and n not in miss:
                    miss[n] = m
            for n, f in zip(names, fields, strict=True):
                entries[n] = {"grok": groks[n], "line": chosen[n][0], "miss": miss.get(n), "fields": f,
                              "from": chosen[n][1]}
            cases[library] = entries
    write(cases)


def write(cases: dict[str, dict[str, dict]]) -> None:
    d = json.dumps
    lines = [
        "# Every named pattern of both grok libraries: a line it matches, a near miss it rejects (null: it takes",
        "# every edit tried), and the exact fields Logstash's grok filter sets on an event without them. Built by",
        "# scripts/grok_cases.py (its docstring says how): the answers are a peer's (joni over Elasticsearch's grok",
        "# expansion, with Logstash's grok filter's field rules), `from` says where the line comes from.",
        "# Do not edit by hand: rerun the script; tests/unit/test_grok_pattern_cases.py checks etl against it.",
    ]
    for library, entries in cases.items():
        lines.append(f"{library}:")
        for n, e in entries.items():
            lines.append(f"  {n}: {{grok: {d(e['grok'])}, line: {d(e['line'])}, miss: {d(e['miss'])},")
            lines.append(f"    fields: {d(e['fields'], ensure_ascii=False)}, from: {d(e['from'])}}}")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{OUT}: {sum(map(len, cases.values()))} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
