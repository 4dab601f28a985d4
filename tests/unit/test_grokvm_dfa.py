"""etl.grokvm: DFA first-match ends and probes against ``re``; the binary format; Unsupported."""
from __future__ import annotations

import random
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etl.grok import expand
from etl.grokvm import (FALLBACK, FormatError, Program, Unsupported, compile_leaf, compile_program, dfa_run,
                        run, run_full)

from .test_grokvm import _regex_strategy, check_line

LEAVES = [
    expand("%{IPORHOST}").python_regex, expand("%{NUMBER}").python_regex, expand("%{HOSTNAME}").python_regex,
    expand("%{IPV4}").python_regex, expand("%{IPV6}").python_regex, expand("%{TIMESTAMP_ISO8601}").python_regex,
    expand("%{HTTPDATE}").python_regex, expand("%{SYSLOGTIMESTAMP}").python_regex, expand("%{USER}").python_regex,
    r'.*?"', r'[^"]*', r"a*?b", r"(?:ab|a)(?:bc|c)?", r"\b\w+\b", r"(?<![0-9])\d+(?![0-9])", r"^a|b", r"x\Z|x",
    r"(?>a+|b)", r"a++", r"(?:a|ab)(?:c|bcd)", r"\Ba\B|\B", r"(?i)Ab[c-e]", r"(?:\.?|\b)", r"a{2,4}?a",
    r"(?:a|b)*?b", r"(?:a\.|a)+", r"[a-c]{0,3}(?<=b)", r"(?s:.)+?\n", r".+", r"(?:\\.|[^\\\"])+\"",
]
CHARS = "ab1. -:\n\"\\xcfe0%2"


def _oracle(cre: re.Pattern, s: str, p: int) -> int:
    m = cre.match(s, p)
    return m.end() if m else -1


@pytest.mark.parametrize("regex", LEAVES)
def test_leaf_dfa_first_match_end(regex):
    d = compile_leaf(regex, re.DOTALL)
    probe = compile_leaf(regex, re.DOTALL, probe=True)
    d2 = Program.from_bytes(Program(0, [d], (2, 0)).to_bytes()).dfas[0]
    cre = re.compile(regex, re.DOTALL)
    rnd = random.Random(regex)
    words = ["10.0.0.1", "fe80::1", "::", "a.b", "host-1", "-", "12", "1.5", "Jan", "2024-01-05T10:11:12Z",
             "10/Oct/2000:13:55:36 -0700", "Oct  1 12:00:00", '"', "\\", "ab", "x"]
    for _ in range(150):
        s = "".join(rnd.choice(words) if rnd.random() < 0.3 else rnd.choice(CHARS) for _ in range(rnd.randint(0, 8)))
        b = s.encode()
        for p in range(len(s) + 1):
            want = _oracle(cre, s, p)
            assert dfa_run(d, b, p) == want, (regex, s, p)
            assert dfa_run(d2, b, p) == want
            assert (dfa_run(probe, b, p) >= 0) == (want >= 0), (regex, s, p)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_regex_strategy(), st.lists(st.text(alphabet="ab1 -_.\n", max_size=8), min_size=1, max_size=6),
       st.booleans())
def test_random_leaf_dfas(regex, texts, dotall):
    flags = re.DOTALL if dotall else 0
    try:
        cre = re.compile(regex, flags)
        d = compile_leaf(regex, flags)
        probe = compile_leaf(regex, flags, probe=True)
    except (re.error, Unsupported):
        return
    for s in texts:
        b = s.encode()
        for p in range(len(s) + 1):
            want = _oracle(cre, s, p)
            assert dfa_run(d, b, p) == want, (regex, s, p)
            assert (dfa_run(probe, b, p) >= 0) == (want >= 0), (regex, s, p)


# --------------------------------------------------------------------------- format

def test_golden_bytes_small_program():
    """A fixed example for the Java reader: ``(?P<n>\\d+)x|y``."""
    prog = compile_program(r"(?P<n>\d+)x|y")
    b = prog.to_bytes()
    classmap = bytes(1 if 0x30 <= i <= 0x39 else 2 if i == 0x78 else 0 for i in range(128))
    want = (b"GKVM" + bytes([1, 0, 1, 0, 1, 0])                   # version 1, 1 group, 1 DFA
            + bytes(16)                                             # no dialect fallback bytes
            + bytes([4, 0, 0, 0, 3, 0, 1, 0, 2])                    # 4 states, 3 classes, 1 ctx, start ctx 0, u16
            + classmap + bytes(128)                                 # class map, prev map
            + bytes([1, 0, 0, 0])                                   # start[0] = 1
            + bytes([0, 0, 0, 0, 0, 0,  0, 0, 4, 0, 0, 0,           # state 0 dead; 1: digit -> 2
                     0, 0, 4, 0, 6, 0,  1, 0, 1, 0, 1, 0])          # 2: digit -> 2, x -> 3; 3: match, dead
            + bytes([0, 0, 0, 1])                                   # eof flags
            + bytes([6, 2, 0, 0xFF, 0xFF, 4, 1, 0, 0, 0, 1, 0,      # ALT 2: [no probe] FCAP g1 dfa0 tail 1
                     0xFF, 0xFF, 1, 0, 1, 0, ord("y")]))            # [no probe] LIT b"y"
    assert b == want
    assert run(prog, b"12x") == [(0, 2)] and run(prog, b"y") == [None] and run(prog, b"x") is FALLBACK


@pytest.mark.parametrize("pattern", ["%{COMBINEDAPACHELOG}", "%{SYSLOGLINE}", "%{QS:q}", r"%{WORD:a}(?: %{INT:b})*",
                                     r"%{NOTSPACE:a}(?:\[%{INT:b}\])?:"])
def test_round_trip(pattern):
    prog = compile_program(expand(pattern).python_regex)
    b = prog.to_bytes()
    back = Program.from_bytes(b)
    assert back == prog
    assert back.to_bytes() == b
    assert compile_program(expand(pattern).python_regex).to_bytes() == b  # deterministic


def test_malformed_programs_are_rejected():
    b = compile_program(r"(\w+) (\d+)").to_bytes()
    for cut in range(len(b)):
        with pytest.raises(FormatError):
            Program.from_bytes(b[:cut])
    with pytest.raises(FormatError):
        Program.from_bytes(b + b"\0")
    with pytest.raises(FormatError):
        Program.from_bytes(b"XKVM" + b[4:])
    with pytest.raises(FormatError):
        Program.from_bytes(b[:4] + b"\x02\x00" + b[6:])


# --------------------------------------------------------------------------- coverage of constructs

@pytest.mark.parametrize("regex,reason", [
    (r"(a)\1", "construct"), (r"(a)?(?(1)b|c)", "construct"), (r"(?<=ab)c", "lookbehind"),
    (r"(?=(a))a", "lookahead"), (r"(?:a?)*", "empty"), (r"(a)*?b", "lazy"), (r"(?:(a)|b)+?c", "lazy"),
    (r"(?:\b)+a", "empty"), (r"(?!(?>a|ab)c)", "lookahead"),
])
def test_unsupported(regex, reason):
    with pytest.raises(Unsupported, match=reason):
        compile_program(regex)


@pytest.mark.parametrize("regex", [r"^(a+)$", r"(?m)^(\w+)$\n^(\w*)$", r"(\w+)\Z", r"\A(a)|(b)$", r"(?m)(a)$|b",
                                   r"(x)?(?=a\n?$)", r"(?i)(ab)\B(?<=b)C"])
def test_anchors_and_multiline(regex):
    prog = compile_program(regex)
    cre = re.compile(regex, re.DOTALL)
    for s in ["a", "aa\n", "a\n\n", "ab\nc", "abC", "", "\n", "b", "xa", "xa\n", "ABc", "ab\n"]:
        check_line(prog, cre, s)


def test_ignorecase_literals_and_unicode_folding():
    for regex in [r"(?i)(GET|post) (\S+)", "(?i)(\u212a)(\u017f+)", r"(?i:a)(B)"]:
        prog = compile_program(regex)
        cre = re.compile(regex, re.DOTALL)
        for s in ["get /x", "POST /y", "PoSt /", "ks", "KSs", "aB", "Ab", "AB", "ab"]:
            check_line(prog, cre, s)
    assert run(compile_program(r"(?i)(GET) "), b"gEt ") == [(0, 3)]


def test_combined_apache_program_size_and_compile_time():
    t0 = time.process_time()
    prog = compile_program(expand("%{COMBINEDAPACHELOG}").python_regex)
    assert time.process_time() - t0 < 5
    st_ = prog.stats()
    assert st_["ngroups"] == 12 and st_["ndfas"] <= 25 and max(st_["states"]) < 1000
    assert st_["total_table_bytes"] < 100_000 and st_["tree_nodes"] < 120


def test_dialect_bytes_fall_back():
    """Bytes where Python's re and java.util.regex disagree are left to the real engine."""
    prog = compile_program(r"(\S+) (.*)$", dotall=False)
    assert prog.fallback == sum(1 << b for b in (0x0D, 0x1C, 0x1D, 0x1E, 0x1F))
    assert run(prog, b"a b") == [(0, 1), (2, 3)]
    assert run(prog, b"a\x1cb c") is FALLBACK and run(prog, b"a b\r") is FALLBACK
    assert compile_program(r"(\w+) (\d+)").fallback == 0
    assert compile_program("(?i)(\u212a)").fallback == (1 << ord("k")) | (1 << ord("K"))
    assert compile_program(expand("%{COMBINEDAPACHELOG}").python_regex).fallback == sum(1 << b for b in range(0x1C, 0x20))
    assert run(compile_program(r"(a*)"), b"") is FALLBACK


def test_fallback_cases():
    prog = compile_program(r"(\w+) (\d+)")
    assert run(prog, b"abc 12") == [(0, 3), (4, 6)]
    assert run(prog, b"abc x") is FALLBACK          # committed to the word, then failed
    assert run(prog, b" 12") is FALLBACK            # no match at 0
    assert run(prog, "é 1".encode()) is FALLBACK    # non-ASCII
    assert run_full(prog, b"ab 1 rest") == (4, [(0, 2), (3, 4)])
