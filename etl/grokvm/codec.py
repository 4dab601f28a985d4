"""The program: DFAs + walker tree, and its binary serialization (format version 1).

A ``Program`` is what the Java runtime loads. Everything is little-endian; ``uN`` is an
unsigned N-bit integer; there is no padding or alignment anywhere.

Header::

    4 bytes  magic "GKVM" (0x47 0x4B 0x56 0x4D)
    u16      version = 1
    u16      ngroups       capture groups 1..ngroups (Python's group numbers)
    u16      ndfas         number of DFA records that follow (referenced by index 0..ndfas-1)
    16 bytes fallback      set of ASCII bytes b (bit (b & 7) of fallback[b >> 3]): a line that
                           contains one of them is not run (FALLBACK); these are the bytes on
                           which Python's re and java.util.regex may disagree for this regex

DFA record (``ndfas`` times)::

    u32      nstates       >= 1; state 0 is the DEAD state (all its entries are 0, eof 0)
    u16      nclasses      1..128 byte classes
    u8       nctx          1..129 previous-byte contexts
    u8       start_ctx     context used when the run starts at position 0 (< nctx)
    u8       ew            width of one transition entry in bytes: 2 or 4
    128 x u8 classmap      classmap[b] = class of ASCII byte b (< nclasses)
    128 x u8 prevmap       prevmap[b] = context when the previous byte is b (< nctx)
    nctx x u32 start       start[ctx] = initial state (< nstates)
    nstates*nclasses entries, each u16 (ew=2) or u32 (ew=4), row-major:
             entry(s, c) at index s*nclasses + c;
             entry = 2*target + flag; target = next state (< nstates), flag = 1 iff "a match
             of this DFA ended just before the byte being read"
    nstates x u8 eof       1 iff "a match ends at the end of the input" when the run has read
                           the whole remaining input and is in this state (0 otherwise)

Running DFA d on line s (length n) from position p (0 <= p <= n) returns an end or -1::

    ctx = (p == 0) ? d.start_ctx : d.prevmap[s[p-1]]
    state = d.start[ctx]; last = -1
    for i in p .. n-1:
        e = entry(state, d.classmap[s[i]])
        if (e & 1) last = i
        state = e >> 1
        if (state == 0) return last          // dead: nothing more can match
    if (d.eof[state] == 1) last = n
    return last

Walker tree: exactly one node (the root), written in prefix order (a node, then its
children in order). Each node starts with a ``u8`` kind::

    1 LIT   u8 caseless (0/1), u16 len (>= 1), len bytes (caseless: letters stored lowercase)
    2 LEAF  u16 dfa
    3 CAP   u16 group (1..ngroups), then the child node
    4 FCAP  u16 group, u16 dfa, u16 tail
    5 SEQ   u16 n (>= 2), then n child nodes
    6 ALT   u16 n (>= 2), then n times: u16 probe (0xFFFF = none), option node
    7 LOOP  u32 min, u32 max (0xFFFFFFFF = unbounded), u16 probe (0xFFFF = none), body node
    8 LOOK  u8 negate (0/1), u16 dfa
    9 SCAN  u16 group (0 = no capture), 16 bytes set, u32 min, u32 max (0xFFFFFFFF = unbounded),
            u8 greedy (0/1), u16 probe (a DFA index, always present)
            set: bit (b & 7) of set[b >> 3] is 1 iff byte b belongs to the set

The tree ends the data: a reader must reject trailing bytes, unknown kinds, out-of-range
indices and truncation. Evaluation semantics: see ``etl.grokvm.runtime``.
"""
from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass, field

MAGIC = b"GKVM"
VERSION = 1
NONE16 = 0xFFFF
UNBOUNDED = 0xFFFFFFFF

LIT, LEAF, CAP, FCAP, SEQ, ALT, LOOP, LOOK, SCAN = range(1, 10)


class FormatError(ValueError):
    """Malformed serialized program."""


@dataclass(eq=True)
class DFA:
    nclasses: int
    classmap: bytes          # 128 bytes
    nctx: int
    start_ctx: int
    prevmap: bytes           # 128 bytes
    start: list[int]         # nctx states
    trans: array             # array('I'), nstates * nclasses entries (2*target + flag)
    eof: bytes               # nstates bytes, 0/1
    note: str = field(default="", compare=False)  # what the DFA is for (not serialized)

    @property
    def nstates(self) -> int:
        return len(self.eof)

    @property
    def entry_width(self) -> int:
        return 2 if 2 * self.nstates + 1 <= 0xFFFF else 4

    @property
    def table_bytes(self) -> int:
        return self.nstates * self.nclasses * self.entry_width


# Program tree nodes are tuples (kind, ...):
#   (LIT, caseless, data) (LEAF, dfa) (CAP, group, child) (FCAP, group, dfa, tail)
#   (SEQ, (child, ...)) (ALT, ((probe, child), ...)) (LOOP, min, max, probe, body) (LOOK, negate, dfa)
#   (SCAN, group, mask, min, max, greedy, probe)
# with probe = -1 for none, max = -1 for unbounded, group 0 = none, mask a 128-bit int.

@dataclass(eq=True)
class Program:
    ngroups: int
    dfas: list[DFA]
    root: tuple
    fallback: int = 0  # 128-bit set of bytes that send a line to the real engine

    def to_bytes(self) -> bytes:
        out = bytearray(MAGIC)
        out += struct.pack("<HHH", VERSION, self.ngroups, len(self.dfas))
        out += self.fallback.to_bytes(16, "little")
        for d in self.dfas:
            ew = d.entry_width
            out += struct.pack("<IHBBB", d.nstates, d.nclasses, d.nctx, d.start_ctx, ew)
            out += bytes(d.classmap) + bytes(d.prevmap)
            out += struct.pack(f"<{d.nctx}I", *d.start)
            t = array("H" if ew == 2 else "I", d.trans)
            if t.itemsize != ew:  # pragma: no cover - platform guard
                raise FormatError("unexpected array item size")
            if struct.pack("=H", 1) != struct.pack("<H", 1):  # pragma: no cover - big-endian host
                t.byteswap()
            out += t.tobytes()
            out += bytes(d.eof)
        _write_node(out, self.root)
        return bytes(out)

    @classmethod
    def from_bytes(cls, data: bytes) -> Program:
        r = _Reader(data)
        if r.take(4) != MAGIC:
            raise FormatError("bad magic")
        version, ngroups, ndfas = r.unpack("<HHH")
        if version != VERSION:
            raise FormatError(f"unsupported version {version}")
        fallback = int.from_bytes(r.take(16), "little")
        dfas = []
        for _ in range(ndfas):
            nstates, ncls, nctx, start_ctx, ew = r.unpack("<IHBBB")
            if nstates < 1 or not 1 <= ncls <= 128 or nctx < 1 or start_ctx >= nctx or ew not in (2, 4):
                raise FormatError("bad DFA header")
            classmap, prevmap = r.take(128), r.take(128)
            start = list(r.unpack(f"<{nctx}I"))
            t = array("H" if ew == 2 else "I")
            t.frombytes(r.take(nstates * ncls * ew))
            if struct.pack("=H", 1) != struct.pack("<H", 1):  # pragma: no cover
                t.byteswap()
            eof = r.take(nstates)
            if (max(classmap) >= ncls or max(prevmap) >= nctx or max(start) >= nstates
                    or (len(t) and max(t) >> 1 >= nstates) or max(eof) > 1):
                raise FormatError("DFA index out of range")
            dfas.append(DFA(ncls, classmap, nctx, start_ctx, prevmap, start, array("I", t), eof))
        root = _read_node(r, ngroups, ndfas, 0)
        if r.pos != len(data):
            raise FormatError("trailing bytes")
        return cls(ngroups, dfas, root, fallback)

    def stats(self) -> dict:
        return {
            "ngroups": self.ngroups,
            "ndfas": len(self.dfas),
            "states": [d.nstates for d in self.dfas],
            "classes": [d.nclasses for d in self.dfas],
            "table_bytes": [d.table_bytes for d in self.dfas],
            "total_table_bytes": sum(d.table_bytes for d in self.dfas),
            "serialized_bytes": len(self.to_bytes()),
            "tree_nodes": _count(self.root),
        }

    def describe(self) -> str:
        """Indented text rendering of the walker tree (with what each DFA is for)."""
        lines: list[str] = []
        _describe(self, self.root, 0, lines)
        return "\n".join(lines)


def _p16(v: int) -> int:
    return NONE16 if v < 0 else v


def _write_node(out: bytearray, n: tuple) -> None:
    k = n[0]
    out.append(k)
    if k == LIT:
        out += struct.pack("<BH", int(n[1]), len(n[2])) + n[2]
    elif k == LEAF:
        out += struct.pack("<H", n[1])
    elif k == CAP:
        out += struct.pack("<H", n[1])
        _write_node(out, n[2])
    elif k == FCAP:
        out += struct.pack("<HHH", n[1], n[2], n[3])
    elif k == SEQ:
        out += struct.pack("<H", len(n[1]))
        for c in n[1]:
            _write_node(out, c)
    elif k == ALT:
        out += struct.pack("<H", len(n[1]))
        for probe, c in n[1]:
            out += struct.pack("<H", _p16(probe))
            _write_node(out, c)
    elif k == LOOP:
        out += struct.pack("<IIH", n[1], UNBOUNDED if n[2] < 0 else n[2], _p16(n[3]))
        _write_node(out, n[4])
    elif k == LOOK:
        out += struct.pack("<BH", int(n[1]), n[2])
    elif k == SCAN:
        out += struct.pack("<H", n[1]) + n[2].to_bytes(16, "little")
        out += struct.pack("<IIBH", n[3], UNBOUNDED if n[4] < 0 else n[4], int(n[5]), n[6])
    else:
        raise FormatError(f"unknown node kind {k}")


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = bytes(data), 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise FormatError("truncated program")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))


# C901: one branch per node kind (a dispatch)
def _read_node(r: _Reader, ngroups: int, ndfas: int, depth: int) -> tuple:  # noqa: C901
    if depth > 10000:
        raise FormatError("tree too deep")

    def dfa(i: int, optional: bool = False) -> int:
        if optional and i == NONE16:
            return -1
        if i >= ndfas:
            raise FormatError("DFA index out of range")
        return i

    (k,) = r.unpack("<B")
    if k == LIT:
        caseless, n = r.unpack("<BH")
        return (LIT, bool(caseless), r.take(n))
    if k == LEAF:
        return (LEAF, dfa(r.unpack("<H")[0]))
    if k == SCAN:
        g = r.unpack("<H")[0]
        if g > ngroups:
            raise FormatError("group out of range")
        mask = int.from_bytes(r.take(16), "little")
        mn, mx, greedy, p = r.unpack("<IIBH")
        return (SCAN, g, mask, mn, -1 if mx == UNBOUNDED else mx, bool(greedy), dfa(p))
    if k in (CAP, FCAP):
        g = r.unpack("<H")[0]
        if not 1 <= g <= ngroups:
            raise FormatError("group out of range")
        if k == CAP:
            return (CAP, g, _read_node(r, ngroups, ndfas, depth + 1))
        d, tail = r.unpack("<HH")
        return (FCAP, g, dfa(d), tail)
    if k == SEQ:
        (n,) = r.unpack("<H")
        return (SEQ, tuple(_read_node(r, ngroups, ndfas, depth + 1) for _ in range(n)))
    if k == ALT:
        (n,) = r.unpack("<H")
        opts = []
        for _ in range(n):
            p = dfa(r.unpack("<H")[0], True)
            opts.append((p, _read_node(r, ngroups, ndfas, depth + 1)))
        return (ALT, tuple(opts))
    if k == LOOP:
        mn, mx, p = r.unpack("<IIH")
        return (LOOP, mn, -1 if mx == UNBOUNDED else mx, dfa(p, True), _read_node(r, ngroups, ndfas, depth + 1))
    if k == LOOK:
        neg, d = r.unpack("<BH")
        return (LOOK, bool(neg), dfa(d))
    raise FormatError(f"unknown node kind {k}")


def _count(n: tuple) -> int:
    k = n[0]
    if k == CAP:
        return 1 + _count(n[2])
    if k == SEQ:
        return 1 + sum(_count(c) for c in n[1])
    if k == ALT:
        return 1 + sum(_count(c) for _, c in n[1])
    if k == LOOP:
        return 1 + _count(n[4])
    return 1


def _describe(prog: Program, n: tuple, depth: int, lines: list[str]) -> None:
    pad = "  " * depth

    def d(i: int) -> str:
        if i < 0:
            return "-"
        x = prog.dfas[i]
        return f"dfa#{i}[{x.nstates} states] {x.note}"

    k = n[0]
    if k == LIT:
        lines.append(f"{pad}LIT {n[2]!r}{' (caseless)' if n[1] else ''}")
    elif k == LEAF:
        lines.append(f"{pad}LEAF {d(n[1])}")
    elif k == CAP:
        lines.append(f"{pad}CAP {n[1]}")
        _describe(prog, n[2], depth + 1, lines)
    elif k == FCAP:
        lines.append(f"{pad}FCAP {n[1]} tail={n[3]} {d(n[2])}")
    elif k == SEQ:
        lines.append(f"{pad}SEQ")
        for c in n[1]:
            _describe(prog, c, depth + 1, lines)
    elif k == ALT:
        lines.append(f"{pad}ALT")
        for p, c in n[1]:
            lines.append(f"{pad}  option probe={d(p)}")
            _describe(prog, c, depth + 2, lines)
    elif k == LOOP:
        lines.append(f"{pad}LOOP {{{n[1]},{'' if n[2] < 0 else n[2]}}} probe={d(n[3])}")
        _describe(prog, n[4], depth + 1, lines)
    elif k == LOOK:
        lines.append(f"{pad}LOOK {'!' if n[1] else '='} {d(n[2])}")
    elif k == SCAN:
        from .ir import mask_str
        q = f"{{{n[3]},{'' if n[4] < 0 else n[4]}}}{'' if n[5] else '?'}"
        lines.append(f"{pad}SCAN {n[1]} {mask_str(n[2])}{q} follow={d(n[6])}")
