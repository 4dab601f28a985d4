"""IR -> walker tree -> ``Program`` (DFAs compiled and deduplicated).

The walker tree only keeps structure where captures (or constructs a DFA cannot run) force
it; everything else is a LEAF run by one first-match DFA:

* a capture-free subtree is one LEAF, provided every atomic group in it may be run as an
  ordinary group (``props.atomic_ok``: only "at the end" of the leaf, or around a body without
  choices) and it has no general lookahead;
* in a sequence, consecutive capture-free items are gathered into one leaf; an item whose
  atomic group is fine only at the end closes the leaf; an item that cannot be in any
  leaf is decomposed (SEQ/ALT/LOOP at walker level, atomic groups are transparent there,
  since the walker never backtracks);
* FUSION: a capture whose content is a leaf without atomic groups, directly followed by
  capture-free fixed-width items T (e.g. a literal), becomes FCAP: one first-match DFA for
  ``content T``; the capture ends |T| bytes before the DFA's end. The first path of
  ``content T`` is the backtracker's first content path that T can follow, so this is exact
  and makes lazy ``%{DATA:x}"`` work;
* SCAN: a capture of one repeated byte set (``\\S+``, ``.*?``, ``[^ ]{1,5}``), or such an
  uncaptured set at the start of a leaf, followed by more pattern, when the first-match
  end might not be the one the rest needs (greedy and the rest may start with the set; or
  lazy), becomes SCAN: its candidate ends, in the backtracker's order (longest first if
  greedy, shortest first if lazy), are tried with a probe DFA of everything that follows
  (see PROBES, but not just a window; shortened only if its DFA gets too big); the first
  end the rest can follow wins. Exact: the backtracker tries those ends in that order and
  every skipped end fails (probe "no"). Preferred to FUSION when more than the fixed-width
  tail follows;
* DISTRIBUTION: an alternation followed by fixed-width capture-free items T is rewritten
  ``(?:a|b)T`` -> ``(?:aT|bT)`` (identical paths in identical order) when that helps (an
  option then fuses, or its probe also checks T);
* PROBES. The backtracker takes an ALT option (or another greedy LOOP iteration) only if
  it leads to success with what follows. The walker asks a PROBE DFA whether
  ``option + W`` can match at all, W being a short prefix (the WINDOW: up to 2 items that
  consume, within an NFA budget) of what follows the node up to the nearest atomic group
  or loop body; for a loop, ``body (W | first-byte-of-body anything)``. Probes are built
  from ``props.strip`` (captures removed, atomic groups ordinary, general lookaheads
  dropped): a superset, so "no" is exact. With nothing following, options and bodies that
  fail "softly" (LIT/LEAF/FCAP/SCAN/LOOK, CAP/ALT of those, LOOP of those with min <= 1)
  need no probe: trying them IS the exact test. What follows is also handed down into ALT
  options and optional groups (``x?``: the body is followed by the rest), so their inner
  probes and SCANs see it; not into longer loop bodies, and not across an atomic group
  (the backtracker commits to the group's first success whatever follows);
* a general lookahead becomes LOOK over a probe DFA, which must be exact: its body must be
  capture-free, lookahead-free and atomic-safe (else Unsupported);
* a lazy repeat (min < max) that is not inside a leaf is Unsupported (the walker would have
  to know whether the rest of the line matches after each iteration).
"""
from __future__ import annotations

import time
from typing import Any

import etl.grokvm.codec as codec
import etl.grokvm.dfa as dfa
import etl.grokvm.ir as ir
import etl.grokvm.props as props
from .codec import Program
from .ir import Unsupported

_W_LEAF = 'leaf'  # intermediate: ('leaf', [ir items])


def leaf_mid(x: tuple) -> bool:
    return not props.has_cap(x) and not props.has_look(x) and props.atomic_ok(x, False)


def leaf_end(x: tuple) -> bool:
    return not props.has_cap(x) and not props.has_look(x) and props.atomic_ok(x, True)


def _soft_ir(x: tuple) -> bool:
    """Would build(x) fail softly (so an ALT option needs no probe)?"""
    if leaf_end(x) or x[0] == 'look':
        return True
    if x[0] == 'cap':
        return _soft_ir(x[2])
    if x[0] == 'atomic':
        return _soft_ir(x[1])
    if x[0] == 'alt':
        return all(_soft_ir(o) for o in x[1])
    return False


def _ends_with_fusable_cap(x: tuple) -> bool:
    if x[0] == 'seq' and not x[1]:  # an empty option: `(?:a|)`, or one whose items folded away
        return False
    last = x[1][-1] if x[0] == 'seq' else x
    return last[0] == 'cap' and leaf_mid(last[2])


def build(x: tuple, rest: list | None = None) -> tuple:
    """Walker node for IR x (intermediate form, IR still inside). ``rest``: IR items known to
    follow x before anything could make the backtracker commit (the rest of the enclosing
    sequences, up to the nearest atomic group or loop body); probes may check them too."""
    rest = rest or []
    if rest and ((x[0] == 'rep' and leaf_end(x)) or (x[0] == 'cap' and leaf_end(x[2]))):
        return _build_seq([x], rest)  # may become a SCAN
    return _build(x, rest)


def _build(x: tuple, rest: list) -> tuple:
    if leaf_end(x):
        return (_W_LEAF, list(x[1]) if x[0] == 'seq' else [x])
    k = x[0]
    if k == 'seq':
        return _build_seq(list(x[1]), rest)
    if k == 'alt':
        return (codec.ALT, tuple(_option(o, rest) for o in x[1]))
    if k == 'cap':  # (a leaf content stays a leaf: the enclosing sequence fuses or scans it)
        return (codec.CAP, x[1], (_build if leaf_end(x[2]) else build)(x[2], rest))
    if k == 'atomic':  # the backtracker commits at the end of the group: nothing after it counts
        return build(x[1])
    if k == 'rep':
        mn, mx, greedy, body = x[1], x[2], x[3], x[4]
        if not greedy:
            raise Unsupported("lazy repeat around a capture group (or other walker-level construct)")
        # an optional group is followed by the rest; a longer loop's body by more iterations
        wb = build(body, rest if mx is not None and mx <= 1 else None)
        window = _window(rest)
        if window:  # one iteration, then the rest (or another iteration: its first byte, anything)
            after = ir.seq(window)
            if mx is None or mx > 1:
                after = ir.alt([after, ir.seq([('set', props.first(body)), ir.rep(0, None, True, ('set', ir.ALL))])])
            probe: tuple | None = ('probe', [body], [after])
        else:
            probe = None if _soft(wb) else ('probe', [body], [])
        return (codec.LOOP, mn, -1 if mx is None else mx, probe, wb)
    if k == 'look':
        body = props.inline_final_looks(x[2])
        if props.has_cap(body) or props.has_look(body) or not props.atomic_ok(body, True):
            raise Unsupported("lookahead with captures, nested lookaheads or inner atomic groups")
        return (codec.LOOK, x[1], body)
    raise AssertionError(x)  # assertions and sets are always leaves


WINDOW = 2  # non-nullable items of the rest that ALT/LOOP probes look at ...
WINDOW_NFA = 300  # ... as long as they stay small (IPORHOST alone is ~1400 NFA instructions)
PROBE_STATES = 3000  # a probe that includes (part of) the rest may not grow beyond this


def _window(rest: list) -> list:
    """The first items of ``rest``, up to its WINDOW-th non-nullable one and within the NFA
    budget (a prefix of the rest: probing ``option + prefix`` is still a superset test, so
    "no" stays exact)."""
    out: list = []
    n, size = 0, 0
    for y in rest:
        literal_goes_on = y[0] == 'set' and out and out[-1][0] == 'set'
        if n >= WINDOW and not literal_goes_on:
            break
        size += dfa.nfa_size(props.strip(y))
        if size > WINDOW_NFA:
            break
        out.append(y)
        if not props.nullable(y) and not literal_goes_on:  # a literal counts as one item
            n += 1
    return out


def _option(o: tuple, rest: list) -> tuple:
    w = build(o, rest)
    window = _window(rest)
    if window:
        return (('probe', [o], window), w)
    return (None if _soft(w) else ('probe', [o], []), w)


def _soft(w: tuple) -> bool:
    k = w[0]
    if k in (_W_LEAF, 'fcap', 'scan', codec.LIT, codec.LEAF, codec.FCAP, codec.LOOK):
        return True
    if k == codec.CAP:
        return _soft(w[2])
    if k == codec.ALT:
        return all(_soft(c) for _, c in w[1])
    if k == codec.LOOP:
        return w[1] <= 1 and _soft(w[4])
    return False


def _fixed_prefix(items: list, start: int) -> int:
    j = start
    while j < len(items) and leaf_mid(items[j]) and props.width(items[j]) is not None:
        j += 1
    return j


# C901: one pass over a sequence's items, each kind folded in place
def _build_seq(items: list, outer: list) -> tuple:  # noqa: C901
    # distribution of fixed-width tails into walker-level alternations
    i = 0
    while i < len(items):
        x = items[i]
        if x[0] == 'alt' and not leaf_end(x):
            j = _fixed_prefix(items, i + 1)
            if j > i + 1 and any(_ends_with_fusable_cap(o) or not _soft_ir(o) for o in x[1]):
                tail = items[i + 1:j]
                items[i:j] = [ir.alt(ir.seq([o] + tail) for o in x[1])]
        i += 1
    # gather leaves; each entry: (walker node, the IR items it came from)
    out: list = []
    run: list = []
    for idx, x in enumerate(items):
        if leaf_mid(x):
            run.append(x)
        elif leaf_end(x):
            run.append(x)
            out.append(((_W_LEAF, run), run))
            run = []
        else:
            if run:
                out.append(((_W_LEAF, run), run))
                run = []
            out.append((_build(x, items[idx + 1:] + outer), [x]))
    if run:
        out.append(((_W_LEAF, run), run))
    res: list = []
    i = 0
    while i < len(out):
        w = out[i][0]
        if w[0] == _W_LEAF and w[1][0][0] == 'rep':
            # an uncaptured repeated byte set at the start of a leaf: SCAN it if that can matter
            after = w[1][1:] + [y for _, irs in out[i + 1:] for y in irs] + outer
            if after and _scannable(w[1][0], after):
                res.append(('scan', 0, w[1][0], after))
                if len(w[1]) > 1:
                    out[i] = ((_W_LEAF, w[1][1:]), w[1][1:])
                else:
                    i += 1
                continue
        content = ir.seq(w[2][1]) if w[0] == codec.CAP and w[2][0] == _W_LEAF else None
        if content is None:
            res.append(w)
            i += 1
            continue
        after = [y for _, irs in out[i + 1:] for y in irs] + outer
        nxt: Any = out[i + 1][0] if i + 1 < len(out) else None
        j = 0  # fixed-width items at the start of the next leaf
        if nxt is not None and nxt[0] == _W_LEAF and leaf_mid(content):
            while j < len(nxt[1]) and props.width(nxt[1][j]) is not None:
                j += 1
        scan = bool(after) and _scannable(content, after)
        if j and not (scan and after[j:]):
            # fusion: CAP(leaf without atomics) + fixed-width prefix of the next leaf
            items2 = nxt[1]
            tail = items2[:j]
            res.append(('fcap', w[1], ir.seq(w[2][1] + tail), props.width(ir.seq(tail))))
            if j < len(items2):
                out[i + 1] = ((_W_LEAF, items2[j:]), items2[j:])
                i += 1
            else:
                i += 2
        elif scan:
            # scan: a capture of one repeated byte set, followed by more pattern
            res.append(('scan', w[1], content, after))
            i += 1
        else:
            res.append(w)
            i += 1
    return res[0] if len(res) == 1 else (codec.SEQ, tuple(res))


def _scannable(content: tuple, rest: list) -> bool:
    """``(set{m,n})`` whose first-match end might not be the one the rest needs."""
    if content[0] != 'rep' or content[4][0] != 'set' or content[1] == content[2]:
        return False
    if content[3]:  # greedy: the longest run is the only candidate if the rest cannot start with the set
        r = ir.seq(rest)
        if not props.nullable(r) and not (props.first(r) & content[4][1]):
            return False
    return True


def _literal(items: list) -> tuple | None:
    """(caseless, bytes) if every item is one byte or one letter in both cases."""
    data = bytearray()
    caseless = False
    for x in items:
        if x[0] != 'set':
            return None
        bs = [b for b in range(128) if x[1] >> b & 1]
        if len(bs) == 1:
            data.append(bs[0])
        elif len(bs) == 2 and chr(bs[1]).islower() and chr(bs[1]).upper() == chr(bs[0]):
            data.append(bs[1])
            caseless = True
        else:
            return None
    if caseless:  # every byte is compared ASCII-lowercased; exact only if letters fold
        for x, b in zip(items, data, strict=True):
            if chr(b).isalpha() and bin(x[1]).count("1") == 1:
                return None
    return caseless, bytes(data)


class _Assembler:
    def __init__(self) -> None:
        self.dfas: list = []
        self.index: dict = {}
        self.times: list = []

    def dfa(self, x: tuple, probe: bool, max_states: int = dfa.MAX_STATES) -> int:
        key = (probe, x)
        i = self.index.get(key)
        if i is None:
            t0 = time.perf_counter()
            note = ("probe " if probe else "") + _short(ir.to_regex(x))
            d = dfa.build(x, probe=probe, note=note, max_states=max_states)
            self.times.append(time.perf_counter() - t0)
            i = self.index[key] = len(self.dfas)
            self.dfas.append(d)
        return i

    def node(self, w: tuple) -> tuple:
        k = w[0]
        if k == _W_LEAF:
            lit = _literal(w[1]) if w[1] else None
            if lit is not None and lit[1]:
                return (codec.LIT, lit[0], lit[1])
            return (codec.LEAF, self.dfa(ir.seq(w[1]), False))
        if k == 'fcap':
            return (codec.FCAP, w[1], self.dfa(w[2], False), w[3])
        if k == 'scan':
            _, g, content, rest = w
            mx = content[2]
            probe = self._probe(('probe', [], rest))
            return (codec.SCAN, g, content[4][1], content[1], -1 if mx is None else mx, content[3], probe)
        if k == codec.CAP:
            return (codec.CAP, w[1], self.node(w[2]))
        if k == codec.SEQ:
            return (codec.SEQ, tuple(self.node(c) for c in w[1]))
        if k == codec.ALT:
            return (codec.ALT, tuple((self._probe(p), self.node(c)) for p, c in w[1]))
        if k == codec.LOOP:
            return (codec.LOOP, w[1], w[2], self._probe(w[3]), self.node(w[4]))
        if k == codec.LOOK:
            return (codec.LOOK, w[1], self.dfa(w[2], True))
        raise AssertionError(w)

    def _probe(self, spec: tuple | None) -> int:
        """Probe DFA for ``base + rest``; if that DFA is too big, for shorter prefixes of the
        rest (any prefix keeps the probe a superset test)."""
        if spec is None:
            return -1
        _, base, rest = spec
        n = len(rest)
        while True:
            try:
                return self.dfa(props.strip(ir.seq(base + rest[:n])), True, PROBE_STATES if n else dfa.MAX_STATES)
            except Unsupported:
                if n == 0:
                    raise
                n //= 2


def _short(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[:n - 3] + "..."


def assemble(x: tuple, ngroups: int) -> tuple[Program, list[float]]:
    a = _Assembler()
    root = a.node(build(x))
    return Program(ngroups, a.dfas, root), a.times
