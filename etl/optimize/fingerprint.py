"""Pass 5: the fingerprint fields and the program digest.

The fingerprint fields are the fields the rule set reads (sorted): two events
equal on them get the same verdict, which is what the pre-fingerprint cache
(:mod:`etl.matching.fpcache`) keys on and what a scan needs to project. The
digest identifies the program (rules, predicates, pattern databases) so each
process loads its Hyperscan databases once per program.
"""

from __future__ import annotations

import hashlib

from etl.matching.ir import FilterProgram, leaves, render_expr


def fingerprint_fields(program: FilterProgram) -> tuple[str, ...]:
    used = {i for r in program.rules for i in leaves(r.expr)}
    keys = [program.predicates[i].key for i in used]
    return tuple(sorted({k.field for k in keys} | {k.value for k in keys if k.op == "fieldref"}))


def program_digest(program: FilterProgram) -> str:
    h = hashlib.sha256()
    for r in program.rules:
        h.update(f"rule {r.rule_id} {render_expr(r.expr)}\n".encode())
    for p in program.predicates:
        h.update(f"pred {p.index} {p.key.canonical()}\n".encode())
    for db in program.databases:
        h.update(f"db {db.subject}\n".encode())
        for pat in db.patterns:
            h.update(b"%d %d %s %s %s " % (pat.pattern_id, pat.flags, pat.ascii_rows.encode(), pat.other_rows.encode(),
                                           repr(pat.leaves).encode()) + pat.expression + b"\n")
    for f in program.fallbacks:
        h.update(f"fallback {f.leaf} {f.python_flags} {f.python_regex!r}\n".encode())
    return h.hexdigest()


def fingerprint(program: FilterProgram) -> FilterProgram:
    return program.with_pass("fingerprint", fingerprint_fields=fingerprint_fields(program),
                             digest=program_digest(program))
