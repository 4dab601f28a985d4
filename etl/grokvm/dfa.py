"""Capture-free IR -> DFA, built eagerly by subset construction over ASCII byte classes.

Two kinds of DFA share one table format (see ``etl.grokvm.codec``):

* FIRST-MATCH (``probe=False``): reports the END of the first successful path in
  backtracking (priority, depth-first) order, like RE2's leftmost-first DFA. A state is an
  ORDERED list of NFA threads (highest priority first). Between two bytes the threads are
  closed over epsilon moves in priority order (depth-first, a pc already visited in this
  closure is skipped: its future from this position is identical, so the later copy can
  never be the first success); a thread reaching MATCH records "a match ends before this
  byte" and cuts every lower-priority thread; the run goes on while higher-priority
  threads live, and the answer is the last recorded end. Exact as long as no repeat
  (max > 1) has a nullable body (``props.check`` rejects those).
* PROBE (``probe=True``): "does any match start here?". A state is an unordered set of
  threads; the first time a match is seen the transition carries the flag and goes to the
  dead state, so the generic run loop stops there and returns >= 0.

Zero-width assertions are evaluated during the closure between byte i-1 and byte i, which
knows both bytes: ``prev`` assertions (one-byte lookbehind, ``^``) and ``\\b``/``\\B`` need
the previous byte, so a state also carries a previous-byte CONTEXT (only the distinctions
some reachable assertion needs; "start of input" is its own context); ``next`` assertions
(one-byte lookahead, ``\\Z``) and ``\\b`` need the next byte, which is the byte being read
(or end of input for the eof flags). Atomic groups are run as ordinary groups (callers only
do this where that is exact, see ``props.atomic_ok``); general lookaheads are not allowed here.

The result is minimised (Moore partition refinement with numpy); state 0 is dead.
"""
from __future__ import annotations

from array import array

import numpy as np

import etl.grokvm.ir as ir
from .codec import DFA
from .ir import Unsupported

MAX_STATES = 20000
MAX_NFA = 200000
CHAR, SPLIT, ASSERT, MATCH = range(4)
_EOF = None  # "next byte" at end of input
_START = None  # "previous byte" at position 0


class _NFA:
    def __init__(self) -> None:
        self.op: list[int] = []
        self.arg: list = []
        self.x: list[int] = []
        self.y: list[int] = []

    def add(self, op: int, arg=None, x: int = -1, y: int = -1) -> int:
        if len(self.op) >= MAX_NFA:
            raise Unsupported("regex too large for the DFA compiler")
        self.op.append(op)
        self.arg.append(arg)
        self.x.append(x)
        self.y.append(y)
        return len(self.op) - 1

    def emit(self, n: tuple, nxt: int) -> int:
        """Instructions for n followed by pc ``nxt``; returns n's entry pc."""
        k = n[0]
        if k == 'set':
            return self.add(CHAR, n[1], nxt)
        if k == 'seq':
            for item in reversed(n[1]):
                nxt = self.emit(item, nxt)
            return nxt
        if k == 'alt':
            entries = [self.emit(o, nxt) for o in n[1]]
            e = entries[-1]
            for en in reversed(entries[:-1]):
                e = self.add(SPLIT, None, en, e)
            return e
        if k == 'cap':
            return self.emit(n[2], nxt)
        if k == 'atomic':
            return self.emit(n[1], nxt)
        if k == 'rep':
            mn, mx, greedy, body = n[1], n[2], n[3], n[4]
            if mx is None:
                loop = self.add(SPLIT)
                b = self.emit(body, loop)
                self.x[loop], self.y[loop] = (b, nxt) if greedy else (nxt, b)
                start = loop
            else:  # X{0,k} nested: (X(X(X)?)?)?  -- same priorities as a counted loop
                start = nxt
                for _ in range(mx - mn):
                    b = self.emit(body, start)
                    start = self.add(SPLIT, None, *((b, nxt) if greedy else (nxt, b)))
            for _ in range(mn):
                start = self.emit(body, start)
            return start
        if k in ('prev', 'next', 'wb'):
            return self.add(ASSERT, n, nxt)
        raise Unsupported(f"{k} inside a DFA")


def _holds(a: tuple, prev: int | None, nxt: int | None) -> bool:
    k = a[0]
    if k == 'prev':
        return a[2] if prev is _START else bool(a[1] >> prev & 1)
    if k == 'next':
        return a[2] if nxt is _EOF else bool(a[1] >> nxt & 1)
    pw = prev is not _START and bool(ir.WORD >> prev & 1)
    nw = nxt is not _EOF and bool(ir.WORD >> nxt & 1)
    if a[1]:  # \B; Python: never on the empty string
        return pw == nw and not (prev is _START and nxt is _EOF)
    return pw != nw


def nfa_size(regex_ir: tuple) -> int:
    """Number of NFA instructions for regex_ir (a cost estimate)."""
    nfa = _NFA()
    try:
        nfa.emit(regex_ir, nfa.add(MATCH))
    except Unsupported:
        return MAX_NFA
    return len(nfa.op)


def build(regex_ir: tuple, probe: bool = False, note: str = "", max_states: int = MAX_STATES) -> DFA:
    return _Builder(regex_ir, probe, max_states).run(note)


class _Builder:
    def __init__(self, regex_ir: tuple, probe: bool, max_states: int = MAX_STATES):
        self.probe = probe
        self.max_states = max_states
        nfa = self.nfa = _NFA()
        self.start_pc = nfa.emit(regex_ir, nfa.add(MATCH))
        asserts = [a for o, a in zip(nfa.op, nfa.arg, strict=True) if o == ASSERT]
        uses_wb = any(a[0] == 'wb' for a in asserts)
        # byte classes: refine by every mask the DFA looks at
        seen = {a for o, a in zip(nfa.op, nfa.arg, strict=True) if o == CHAR}
        seen |= {a[1] for a in asserts if a[0] in ('prev', 'next')}
        if uses_wb:
            seen.add(ir.WORD)
        masks = sorted(seen)
        sig_cls: dict = {}
        self.classmap = bytes(sig_cls.setdefault(tuple(m >> b & 1 for m in masks), len(sig_cls)) for b in range(128))
        self.ncls = len(sig_cls)
        self.rep = [self.classmap.index(c) for c in range(self.ncls)]
        # previous-byte contexts: 0 = start of input, then one per distinct need-signature
        pmasks = sorted({a[1] for a in asserts if a[0] == 'prev'} | ({ir.WORD} if uses_wb else set()))
        self.need_prev = bool(pmasks) or any(a[0] == 'prev' for a in asserts)
        if self.need_prev:
            sig_ctx: dict = {}
            self.prevmap = bytes(1 + sig_ctx.setdefault(tuple(m >> b & 1 for m in pmasks), len(sig_ctx)) for b in range(128))
            self.nctx = 1 + len(sig_ctx)
            self.ctx_rep = [_START] + [self.prevmap.index(c) for c in range(1, self.nctx)]
        else:
            self.prevmap, self.nctx, self.ctx_rep = bytes(128), 1, [0]
        self.ctx_of_cls = [self.prevmap[self.rep[c]] for c in range(self.ncls)]
        self.acc = [0] * len(nfa.op)  # CHAR pc -> bitmask of accepted classes
        for pc, (o, a) in enumerate(zip(nfa.op, nfa.arg, strict=True)):
            if o == CHAR:
                self.acc[pc] = sum(1 << c for c in range(self.ncls) if a >> self.rep[c] & 1)
        self._clo: dict = {}
        self._needs: dict = {}

    def needs_prev(self, pc: int) -> bool:
        """Can an assertion that looks at the previous byte be reached by epsilon moves?"""
        r = self._needs.get(pc)
        if r is None:
            nfa, seen, stack, r = self.nfa, set(), [pc], False
            while stack and not r:
                p = stack.pop()
                if p in seen:
                    continue
                seen.add(p)
                o = nfa.op[p]
                if o == SPLIT:
                    stack += (nfa.x[p], nfa.y[p])
                elif o == ASSERT:
                    r = nfa.arg[p][0] in ('prev', 'wb')
                    stack.append(nfa.x[p])
            self._needs[pc] = r
        return r

    def closure(self, pc: int, ctx: int, c: int | None) -> tuple[tuple, bool]:
        """CHAR pcs reachable from pc between prev context ctx and next class c (None: eof),
        in priority order, and whether MATCH was reached (the walk stops there)."""
        key = (pc, ctx, c)
        r = self._clo.get(key)
        if r is not None:
            return r
        nfa = self.nfa
        prev = self.ctx_rep[ctx]
        nxt = _EOF if c is None else self.rep[c]
        stack, seen, out, matched = [pc], set(), [], False
        while stack:
            p = stack.pop()
            if p in seen:
                continue
            seen.add(p)
            o = nfa.op[p]
            if o == CHAR:
                out.append(p)
            elif o == SPLIT:
                stack.append(nfa.y[p])
                stack.append(nfa.x[p])
            elif o == ASSERT:
                if _holds(nfa.arg[p], prev, nxt):
                    stack.append(nfa.x[p])
            else:
                matched = True
                break
        r = self._clo[key] = (tuple(out), matched)
        return r

    def run(self, note: str) -> DFA:  # noqa: C901 - the subset construction's worklist loop, kept in one frame (hot)
        states: dict = {}
        keys: list = []

        def sid(threads: tuple, ctx: int) -> int:
            if not threads:
                return 0
            if not (self.need_prev and any(self.needs_prev(p) for p in threads)):
                ctx = 0
            key = (threads, ctx)
            i = states.get(key)
            if i is None:
                if len(keys) >= self.max_states:
                    raise Unsupported(f"DFA has more than {self.max_states} states")
                i = states[key] = len(keys)
                keys.append(key)
            return i

        sid((), 0)
        keys.append(((), 0))  # state 0: dead
        start = [sid((self.start_pc,), ctx) for ctx in range(self.nctx)]
        ncls, nfa, acc, probe = self.ncls, self.nfa, self.acc, self.probe
        trans: list[int] = []
        eof = bytearray()
        i = 0
        while i < len(keys):
            threads, ctx = keys[i]
            i += 1
            # end of input
            eof.append(any(self.closure(p, ctx, None)[1] for p in threads))
            for c in range(ncls):
                seen: set = set()
                out: list = []
                flag = 0
                for p in threads:
                    leaves, m = self.closure(p, ctx, c)
                    for leaf in leaves:
                        if leaf not in seen:
                            seen.add(leaf)
                            out.append(leaf)
                    if m:
                        flag = 1
                        break
                if probe and flag:
                    trans.append(1)
                    continue
                bit = 1 << c
                nxt: list = []
                seen2: set = set()
                for leaf in out:
                    if acc[leaf] & bit:
                        t = nfa.x[leaf]
                        if t not in seen2:
                            seen2.add(t)
                            nxt.append(t)
                if probe:
                    nxt.sort()
                trans.append(2 * sid(tuple(nxt), self.ctx_of_cls[c]) + flag)
        return _minimise(self, trans, bytes(eof), start, note)


def _minimise(b: _Builder, trans: list[int], eof: bytes, start: list[int], note: str) -> DFA:
    ncls = b.ncls
    t = np.array(trans, dtype=np.int64).reshape(-1, ncls)
    target, flags = t >> 1, t & 1
    e = np.frombuffer(eof, dtype=np.uint8).astype(np.int64)
    _, block = np.unique(np.column_stack([e, flags]), axis=0, return_inverse=True)
    block = block.reshape(-1)
    nblocks = block.max() + 1
    while True:
        _, nb = np.unique(np.column_stack([block, block[target]]), axis=0, return_inverse=True)
        nb = nb.reshape(-1)
        if nb.max() + 1 == nblocks:
            break
        block, nblocks = nb, nb.max() + 1
    # renumber: dead state's block first, then in order of first appearance
    order = {int(block[0]): 0}
    for s in range(len(block)):
        order.setdefault(int(block[s]), len(order))
    remap = np.array([order[int(x)] for x in range(nblocks)], dtype=np.int64)
    newb = remap[block]
    reps = np.zeros(nblocks, dtype=np.int64)
    reps[newb[::-1]] = np.arange(len(newb))[::-1]  # first state of each block
    new_t = (2 * newb[target[reps]] + flags[reps]).reshape(-1)
    return DFA(nclasses=ncls, classmap=b.classmap, nctx=b.nctx, start_ctx=0, prevmap=b.prevmap,
               start=[int(newb[s]) for s in start], trans=array("I", new_t.astype(np.uint32).tobytes()),
               eof=bytes(e[reps].astype(np.uint8).tobytes()), note=note)
