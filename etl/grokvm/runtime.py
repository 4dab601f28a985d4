"""Reference runtime: executes a (deserialized) ``Program`` exactly as the Java runtime must.

``run(program, line)`` -> list of spans for groups 1..ngroups (``(start, end)`` or None),
or ``FALLBACK``. Byte positions; the line is bytes.

1. If the line is empty, or any byte of it is >= 0x80 or in the program's fallback set:
   FALLBACK.
2. Evaluate the root at position 0 with all groups unset. The result is FALLBACK if the
   evaluation raises FALLBACK or returns NOMATCH; otherwise the group spans (and the
   whole match, group 0, is (0, the position the root returned)).

``eval(node, p)`` returns a new position >= p, or NOMATCH (a "soft" failure: the node
cannot match at p at all, and it set no group), or raises FALLBACK (a "hard" failure: the
walk already committed to a choice; only the real engine can tell the answer).
``dfa(d, p)`` is the run loop documented in ``etl.grokvm.codec`` (an end, or -1).

* LIT(caseless, data): if p + len <= n and every s[p+i] equals data[i] (caseless: compare
  after mapping bytes 'A'..'Z' to 'a'..'z' on the line side; data is stored lowercase)
  -> p + len, else NOMATCH.
* LEAF(d): e = dfa(d, p); e >= 0 -> e, else NOMATCH.
* CAP(g, child): r = eval(child, p); if r is a position: group g := (p, r). Return r.
* FCAP(g, d, tail): e = dfa(d, p); e < 0 -> NOMATCH; group g := (p, e - tail); return e.
* SEQ(children): for each child in order: r = eval(child, p); if NOMATCH: return NOMATCH
  if it is the FIRST child, else raise FALLBACK; p = r. Return p.
* ALT(options): for each (probe, child) in order: if probe != none and dfa(probe, p) < 0:
  next option; r = eval(child, p); if r is a position return r (else next option).
  After the last option: NOMATCH.
* LOOP(min, max, probe, body): count = 0; while max unbounded or count < max:
  if count >= min and probe != none and dfa(probe, p) < 0: stop;
  r = eval(body, p); if NOMATCH: if count >= min: stop; elif count == 0: return NOMATCH;
  else raise FALLBACK. p = r; count += 1. After stopping return p.
* LOOK(negate, d): matched = dfa(d, p) >= 0; (matched != negate) -> p, else NOMATCH.
* SCAN(g, set, min, max, greedy, probe): L = number of consecutive bytes from p that are in
  set, at most max; L < min -> NOMATCH. Candidate ends e = p+L, p+L-1, ..., p+min (greedy)
  or p+min, ..., p+L (lazy): the first e with dfa(probe, e) >= 0 wins: if g > 0 group
  g := (p, e); return e. No candidate -> NOMATCH. (SCAN stands for ``(set{min,max})``
  followed by the rest of its SEQ; probe is that rest's probe DFA.)

Groups keep the last value assigned (a group set in an earlier loop iteration stays set).
"""
from __future__ import annotations

import etl.grokvm.codec as codec
from .codec import DFA, Program


class _Fallback(Exception):
    pass


class _FallbackType:
    _inst = None

    def __new__(cls):
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self) -> str:
        return "FALLBACK"

    def __bool__(self) -> bool:
        return False


FALLBACK = _FallbackType()
NOMATCH = -1
_LOWER = bytes(b + 32 if 65 <= b <= 90 else b for b in range(256))


def dfa_run(d: DFA, s: bytes, p: int) -> int:
    """End of the DFA's match starting at p (see the codec docstring), or -1."""
    n = len(s)
    state = d.start[d.start_ctx if p == 0 else d.prevmap[s[p - 1]]]
    last = -1
    trans, cm, ncls = d.trans, d.classmap, d.nclasses
    for i in range(p, n):
        e = trans[state * ncls + cm[s[i]]]
        if e & 1:
            last = i
        state = e >> 1
        if state == 0:
            return last
    if d.eof[state]:
        last = n
    return last


def run(program: Program, line: bytes):
    """Spans of groups 1..ngroups of ``re.match(regex, line)``, or FALLBACK."""
    r = run_full(program, line)
    return r if r is FALLBACK else r[1]


def run_full(program: Program, line: bytes):
    """(match end, spans) or FALLBACK."""
    if not line or not line.isascii():
        return FALLBACK
    fb = program.fallback
    if fb and any(fb >> b & 1 for b in set(line)):
        return FALLBACK
    caps: list = [None] * program.ngroups
    try:
        end = _Walker(program, line, caps).eval(program.root, 0)
    except _Fallback:
        return FALLBACK
    if end < 0:
        return FALLBACK
    return end, caps


class _Walker:
    def __init__(self, prog: Program, s: bytes, caps: list):
        self.dfas, self.s, self.caps = prog.dfas, s, caps

    def eval(self, node: tuple, p: int) -> int:  # noqa: C901 - the VM's interpreter loop, kept in one frame (hot)
        k = node[0]
        s = self.s
        if k == codec.LIT:
            data = node[2]
            q = p + len(data)
            if q > len(s):
                return NOMATCH
            seg = s[p:q]
            if node[1]:
                seg = seg.translate(_LOWER)
            return q if seg == data else NOMATCH
        if k == codec.LEAF:
            return dfa_run(self.dfas[node[1]], s, p)
        if k == codec.CAP:
            r = self.eval(node[2], p)
            if r >= 0:
                self.caps[node[1] - 1] = (p, r)
            return r
        if k == codec.FCAP:
            e = dfa_run(self.dfas[node[2]], s, p)
            if e < 0:
                return NOMATCH
            self.caps[node[1] - 1] = (p, e - node[3])
            return e
        if k == codec.SEQ:
            for i, c in enumerate(node[1]):
                r = self.eval(c, p)
                if r < 0:
                    if i == 0:
                        return NOMATCH
                    raise _Fallback
                p = r
            return p
        if k == codec.ALT:
            for probe, c in node[1]:
                if probe >= 0 and dfa_run(self.dfas[probe], s, p) < 0:
                    continue
                r = self.eval(c, p)
                if r >= 0:
                    return r
            return NOMATCH
        if k == codec.LOOP:
            mn, mx, probe, body = node[1], node[2], node[3], node[4]
            count = 0
            while mx < 0 or count < mx:
                if count >= mn and probe >= 0 and dfa_run(self.dfas[probe], s, p) < 0:
                    break
                r = self.eval(body, p)
                if r < 0:
                    if count >= mn:
                        break
                    if count == 0:
                        return NOMATCH
                    raise _Fallback
                p = r
                count += 1
            return p
        if k == codec.LOOK:
            matched = dfa_run(self.dfas[node[2]], s, p) >= 0
            return p if matched != node[1] else NOMATCH
        if k == codec.SCAN:
            g, mask, mn, mx, greedy, probe = node[1:]
            n = len(s)
            lim = n if mx < 0 else min(n, p + mx)
            q = p
            while q < lim and mask >> s[q] & 1:
                q += 1
            if q - p < mn:
                return NOMATCH
            d = self.dfas[probe]
            for e in (range(q, p + mn - 1, -1) if greedy else range(p + mn, q + 1)):
                if dfa_run(d, s, e) >= 0:
                    if g:
                        self.caps[g - 1] = (p, e)
                    return e
            return NOMATCH
        raise codec.FormatError(f"unknown node kind {k}")
