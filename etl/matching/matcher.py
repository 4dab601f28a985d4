"""Run a compiled FilterProgram over pyarrow RecordBatches.

Meaning: exactly :mod:`etl.optimize.reference` (a predicate on a missing or
null field is false, ``is_null`` excepted; ``not`` negates booleans normally;
pattern predicates are ``re.search`` on the derived text). The matcher gets
there fast:

1. native predicates are evaluated first, vectorized (pyarrow.compute), into
   one boolean array each;
2. rules are classified once per program: *simple* rules (one pattern, or an
   OR of patterns) match exactly where one of their patterns fired; *sparse*
   rules can only be true where one of their patterns fired (their tree with
   every pattern false folds to false) and are evaluated only on those rows;
   *dense* rules (negations, OR with natives) get their patterns-false value
   vectorized and are re-evaluated only where one of their patterns fired;
3. for rules that also read natives, a three-valued bound says on which rows
   patterns could change the outcome; a field is scanned only on those rows
   (unless some rule needs it everywhere): natives first, patterns on survivors;
4. each value of each (field, derivations) is scanned ONCE by that field's
   Hyperscan database into (row, pattern) hits; reports of superset patterns
   are confirmed with Python ``re``; fallback patterns run in Python ``re``;
5. rule trees are compiled to Python functions over the set of fired bits.

Hyperscan databases are loaded lazily, once per process and program digest
(``hyperscan.loadb``), each with its own ``hyperscan.Scratch`` per thread.
An optional pre-fingerprint cache (:mod:`etl.matching.fpcache`) short-cuts
repeated events and switches itself off when it does not pay.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from dataclasses import dataclass, field
from itertools import count, repeat
from typing import Any

import hyperscan
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from etl.matching.batch import BatchView, eval_native, to_np, value_kind
from etl.matching.fpcache import FingerprintCache
from etl.matching.ir import And, Const, Expr, FilterProgram, Or, Pred, leaves
from etl.matching.regex_budget import searches
from etl.matching.ruletree import bounds, compile_rule_functions, csr, dense, expand, fold, skeleton
from etl.workercache import WorkerCache

# --------------------------------------------------------------------------- results


_NONE = np.zeros(0, np.int64)


@dataclass(frozen=True)
class MatchResult:
    """Matched (row, rule index) pairs of one batch, sorted by row then rule.

    ``undecided_rows``/``undecided_rules``: (row, rule) pairs whose value is unknown because a Python ``re``
    search they depend on gave up (etl.matching.regex_budget); such a pair is never in rows/rules."""

    num_rows: int
    rows: np.ndarray  # int64
    rules: np.ndarray  # int64 rule indices into rule_ids
    rule_ids: tuple[str, ...]
    undecided_rows: np.ndarray = field(default_factory=lambda: _NONE)
    undecided_rules: np.ndarray = field(default_factory=lambda: _NONE)

    def _flags(self, rows: np.ndarray) -> np.ndarray:
        m = np.zeros(self.num_rows, dtype=bool)
        m[rows] = True
        return m

    def mask(self) -> np.ndarray:
        return self._flags(self.rows)

    def undecided(self) -> np.ndarray | None:
        """Rows whose verdict (some rule matched) is unknown: an undecided rule and no matched one; None
        when there is none."""
        if not len(self.undecided_rows):
            return None
        m = self._flags(self.undecided_rows)
        m[self.rows] = False
        return m if m.any() else None

    def verdict(self, negate: bool = False) -> pa.Array:
        """mask() (or its negation) as a boolean array, NULL on undecided() rows."""
        m = self.mask()
        return pa.array(~m if negate else m, mask=self.undecided())

    def matched_ids(self) -> list[list[str]]:
        out: list[list[str]] = [[] for _ in range(self.num_rows)]
        ids = self.rule_ids
        for r, k in zip(self.rows.tolist(), self.rules.tolist(), strict=True):
            out[r].append(ids[k])
        return out

    def to_arrow(self) -> pa.ListArray:
        counts = np.bincount(self.rows, minlength=self.num_rows) if self.num_rows else np.zeros(0, np.int64)
        offsets = np.zeros(self.num_rows + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        values = pa.array(self.rule_ids, pa.string()).take(pa.array(self.rules, pa.int64()))
        # a list with an undecided rule is unknown as a whole: NULL
        unknown = pa.array(self._flags(self.undecided_rows)) if len(self.undecided_rows) else None
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, mask=unknown)


def apply_mode(batch: pa.RecordBatch, result: MatchResult, mode: str, tag_field: str = "matched_rules") -> pa.RecordBatch:
    """keep: matching rows; drop: the others; tag: all rows plus a list<string> column of rule ids."""
    if mode == "keep":
        return batch.filter(pa.array(result.mask()))
    if mode == "drop":
        return batch.filter(pa.array(~result.mask()))
    if mode == "tag":
        return batch.append_column(tag_field, result.to_arrow())
    raise ValueError(f"unknown filter mode {mode!r}")


# --------------------------------------------------------------------------- hyperscan


class _Database:
    """One loaded Hyperscan database with its pattern metadata."""

    def __init__(self, spec):
        self.spec = spec
        self.subject = (spec.field, spec.derivations)
        self._db = None
        self._local = threading.local()
        pats = spec.patterns
        self.size = len(pats)
        self.pid_leaf = np.array([p.leaves[0] for p in pats], dtype=np.int64)
        self.single_leaf = all(len(p.leaves) == 1 for p in pats)
        self.leaf_ptr, self.leaf_targets = csr({p.pattern_id: list(p.leaves) for p in pats}, len(pats))
        self.exact = np.array([p.exact for p in pats], dtype=bool)
        self.ascii_confirm = np.array([p.ascii_rows == "confirm" for p in pats], dtype=bool)
        self.other_confirm = np.array([p.other_rows == "confirm" for p in pats], dtype=bool)
        self.other_python = [p.pattern_id for p in pats if p.other_rows == "python"]
        self.regex = {p.pattern_id: re.compile(p.python_regex, p.python_flags) for p in pats if not p.exact}

    def scanner(self):
        if self._db is None:
            try:
                self._db = hyperscan.loadb(self.spec.serialized, hyperscan.HS_MODE_BLOCK)
            except hyperscan.error:  # compiled for another CPU (a cluster of mixed machines): build it here
                from etl.matching.hsdb import compile_database

                self._db = compile_database(self.spec.patterns)
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self._db)
        return self._db, scratch


class _Values:
    """Raw UTF-8 values of a string array: ``data[offs[i]:offs[i + 1]]`` is row i."""

    def __init__(self, text: pa.Array):
        bufs = text.buffers()
        width = np.int64 if pa.types.is_large_string(text.type) else np.int32
        self.offs = np.frombuffer(bufs[1], dtype=width)[text.offset:text.offset + len(text) + 1].tolist()
        self.data = bufs[2].to_pybytes() if bufs[2] is not None else b""

    def __getitem__(self, i: int) -> str:
        return self.data[self.offs[i]:self.offs[i + 1]].decode("utf-8")


def _scan(db: _Database, values: _Values, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Scan each selected value once; (rows, pattern ids) of the reports."""
    hs_db, scratch = db.scanner()
    offs, data = values.offs, values.data
    hit_rows: list[int] = []
    hit_pids: list[int] = []
    add_row = hit_rows.append
    add_pid = hit_pids.append

    def on_match(pid: int, start: int, end: int, flags: int, row: int) -> None:
        add_row(row)
        add_pid(pid)

    # one scan call per value, driven from C (map + a zero-length deque) rather than a Python loop
    if rows is None:
        pieces = [data[a:z] for a, z in zip(offs, offs[1:], strict=False)]
        ctx: Any = count()
    else:
        idx = rows.tolist()
        pieces = [data[offs[i]:offs[i + 1]] for i in idx]
        ctx = iter(idx)
    deque(map(hs_db.scan, pieces, repeat(on_match), repeat(0), ctx, repeat(scratch)), maxlen=0)
    return np.array(hit_rows, dtype=np.int64), np.array(hit_pids, dtype=np.int64)


# --------------------------------------------------------------------------- runtime


class _Runtime:
    """Everything derived from a program once per process: loaded databases, rule classes, functions."""

    def __init__(self, program: FilterProgram):  # noqa: C901 - the matcher's tables, built in one pass over the program
        self.program = program
        self._cache: FingerprintCache | None = None
        self.R = len(program.rules)
        self.num_leaves = len(program.predicates)
        self.natives = {n.leaf: n for n in program.natives}
        self.dbs = [_Database(d) for d in program.databases if d.patterns]
        self.fallbacks = program.fallbacks
        self.fallback_regex = {f.leaf: re.compile(f.python_regex, f.python_flags) for f in program.fallbacks}
        leaf_subject: dict[int, tuple] = {}
        for d in self.dbs:
            for p in d.spec.patterns:
                for leaf in p.leaves:
                    leaf_subject[leaf] = d.subject
        for f in program.fallbacks:
            leaf_subject[f.leaf] = (f.field, f.derivations)
        self.leaf_subject = leaf_subject
        pattern_leaves = set(leaf_subject)
        native_leaves = set(self.natives)

        popularity: dict[int, int] = {}  # pattern leaf -> rules reading it (a guess at how often it fires)
        for r in program.rules:
            for x in leaves(r.expr):
                popularity[x] = popularity.get(x, 0) + 1
        self.trigger: dict[int, list[int]] = {}  # leaf -> general rules it makes candidates (see trigger_leaves)
        self.const_true: list[int] = []
        self.simple: dict[int, list[int]] = {}  # leaf -> simple rules
        self.general: dict[int, list[int]] = {}  # leaf -> sparse/dense rules
        self.general_exprs: dict[int, Expr] = {}
        self.dense_r0: dict[int, Expr] = {}  # rule -> tree over natives with patterns false
        self.native_only: dict[int, Expr] = {}
        self.subject_guards: dict[tuple, set[Expr]] = {}  # per subject, skeletons of rules with natives
        self.subject_users: dict[tuple, set[int]] = {}
        self.unguarded_subjects: set[tuple] = set()
        for r in program.rules:
            k, e = r.index, r.expr
            if isinstance(e, Const):
                if e.value:
                    self.const_true.append(k)
                continue
            ls = leaves(e)
            pats = [x for x in ls if x in pattern_leaves]
            nats = [x for x in ls if x in native_leaves]
            if not pats:
                self.native_only[k] = e
                continue
            for x in pats:
                s = leaf_subject[x]
                self.subject_users.setdefault(s, set()).add(k)
                if not nats:
                    self.unguarded_subjects.add(s)
            if _is_simple(e, pattern_leaves):
                for x in pats:
                    self.simple.setdefault(x, []).append(k)
                continue
            for x in pats:
                self.general.setdefault(x, []).append(k)
            self.general_exprs[k] = e
            r0 = fold(e, lambda i: False if i in pattern_leaves else None)
            trig = None
            if not (isinstance(r0, Const) and not r0.value):
                self.dense_r0[k] = r0  # its rows where any pattern fired are evaluated (the others: r0)
            else:
                trig = trigger_leaves(e, pattern_leaves, popularity)
            for x in sorted(trig) if trig is not None else pats:
                self.trigger.setdefault(x, []).append(k)
            if nats:
                sk = skeleton(e, native_leaves)
                for x in pats:
                    self.subject_guards.setdefault(leaf_subject[x], set()).add(sk)
        self.simple_ptr, self.simple_targets = csr(self.simple, self.num_leaves)
        self.general_ptr, self.general_targets = csr(self.general, self.num_leaves)
        self.trigger_ptr, self.trigger_targets = csr(self.trigger, self.num_leaves)
        self.functions = compile_rule_functions(self.general_exprs, native_leaves)
        self.needed_natives = sorted(
            {x for e in list(self.general_exprs.values()) + list(self.native_only.values()) for x in leaves(e)
             if x in native_leaves})

    def shared_cache(self) -> FingerprintCache:
        """The process-wide pre-fingerprint cache of this program (it outlives batches and tasks)."""
        if self._cache is None:
            self._cache = FingerprintCache()
        return self._cache

    # ---- one batch

    # C901: the per-batch hot path, kept in one frame
    def match(self, batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # noqa: C901
        """(rows, rules) that matched and (rows, rules) left undecided (a search of theirs gave up)."""
        b = BatchView(batch)
        n = b.n
        R = self.R
        if n == 0:
            return _NONE, _NONE, _NONE, _NONE
        nat = {x: eval_native(self.natives[x].key, b) for x in self.needed_natives}

        keys: list[np.ndarray] = []

        def add(rows: np.ndarray, rule: Any) -> None:
            keys.append(rows.astype(np.int64) * R + rule)

        for k in self.const_true:
            add(np.arange(n), k)
        for k, e in self.native_only.items():
            v = dense(e, nat)
            add(np.flatnonzero(np.broadcast_to(v, (n,))), k)

        need = self._scan_sets(b, nat)
        hit_rows, hit_leaves, gave_rows, gave_leaves = self._pattern_hits(b, need)

        if len(hit_rows):
            rr, kk = expand(hit_rows, hit_leaves, self.simple_ptr, self.simple_targets)
            if len(rr):
                keys.append(rr * R + kk)
        cand_rows, cand_rules = expand(hit_rows, hit_leaves, self.trigger_ptr, self.trigger_targets)
        cand = np.unique(cand_rows * R + cand_rules) if len(cand_rows) else np.zeros(0, np.int64)
        if len(cand):
            keys.append(self._evaluate(cand, hit_rows, hit_leaves, nat))
        if self.dense_r0:
            # where none of its patterns fired, a dense rule is its patterns-false value
            fired: dict[int, np.ndarray] = {}
            if len(cand):
                by_rule = np.argsort(cand % R, kind="stable")
                c_rules, c_rows = (cand % R)[by_rule], (cand // R)[by_rule]
                ks, starts = np.unique(c_rules, return_index=True)
                for k, a, z in zip(ks.tolist(), starts.tolist(), starts[1:].tolist() + [len(c_rules)], strict=True):
                    fired[k] = c_rows[a:z]
            r0_cache: dict[Expr, Any] = {}
            for k, e in self.dense_r0.items():
                v = r0_cache.get(e)
                if v is None:
                    v = r0_cache[e] = dense(e, nat)
                if isinstance(v, (bool, np.bool_)):
                    if not v:
                        continue
                    v = np.ones(n, dtype=bool)
                rows_k = fired.get(k)
                if rows_k is not None:
                    v = v.copy()
                    v[rows_k] = False
                keys.append(np.flatnonzero(v).astype(np.int64) * R + k)
        allk = np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
        if not len(gave_rows):
            return allk // R, allk % R, _NONE, _NONE
        # a search gave up: a rule that reads its pattern is undecided on that row unless its value is the same
        # whatever the pattern says -- a simple rule (an OR of patterns) when another pattern fired; a general
        # rule (computed above with the pattern false) when every value of its given-up patterns agrees
        gr, gk = expand(gave_rows, gave_leaves, self.general_ptr, self.general_targets)
        general = np.unique(gr * R + gk)
        allk = np.setdiff1d(allk, general)
        true, unknown = self._settle(general, hit_rows, hit_leaves, gave_rows, gave_leaves, nat)
        allk = np.union1d(allk, true)
        sr, sk = expand(gave_rows, gave_leaves, self.simple_ptr, self.simple_targets)
        undecided = np.union1d(unknown, np.setdiff1d(sr * R + sk, allk))
        return allk // R, allk % R, undecided // R, undecided % R

    def _settle(self, keys: np.ndarray, hit_rows: np.ndarray, hit_leaves: np.ndarray, gave_rows: np.ndarray,
                gave_leaves: np.ndarray, nat) -> tuple[np.ndarray, np.ndarray]:
        """General (row, rule) keys with a pattern that gave up: (true ones, undecided ones). Each is evaluated
        with its given-up patterns both fired and not (every combination, up to 4 of them)."""
        from itertools import combinations

        R = self.R
        fired: dict[int, set[int]] = {}
        for r, x in zip(hit_rows.tolist(), hit_leaves.tolist(), strict=True):
            fired.setdefault(r, set()).add(x)
        gave: dict[int, set[int]] = {}
        for r, x in zip(gave_rows.tolist(), gave_leaves.tolist(), strict=True):
            gave.setdefault(r, set()).add(x)
        true: list[int] = []
        unknown: list[int] = []
        for key in keys.tolist():
            row, k = divmod(key, R)
            mine = sorted(gave[row] & set(leaves(self.general_exprs[k])))
            if len(mine) > 4:
                unknown.append(key)
                continue
            base = fired.get(row, set()) - set(mine)
            outcomes = {bool(self.functions[k](base | set(c), row, nat))
                        for n in range(len(mine) + 1) for c in combinations(mine, n)}
            if len(outcomes) > 1:
                unknown.append(key)
            elif outcomes == {True}:
                true.append(key)
        return np.array(true, np.int64), np.array(unknown, np.int64)

    def _scan_sets(self, b: BatchView, nat: dict[int, np.ndarray]) -> dict[tuple, np.ndarray | None]:
        """Rows to scan per subject; None = every row that has a value."""
        unknown: dict[Expr, Any] = {}  # per guard skeleton (rules differing only in patterns share one)
        out: dict[tuple, np.ndarray | None] = {}
        for s in self.subject_users:
            if s in self.unguarded_subjects:
                out[s] = None
                continue
            acc: Any = False
            for sk in self.subject_guards[s]:
                u = unknown.get(sk)
                if u is None:
                    lo, hi = bounds(sk, nat)
                    u = unknown[sk] = np.logical_and(hi, np.logical_not(lo))
                acc = np.logical_or(acc, u)
            if isinstance(acc, (bool, np.bool_)):
                out[s] = None if acc else np.zeros(b.n, dtype=bool)
            else:
                out[s] = acc
        return out

    def _rows(self, b: BatchView, subject: tuple, need: dict) -> np.ndarray | None:
        """Row indices to look at for a subject, or None for "all rows" when all have a value."""
        sel = need.get(subject)
        valid = b.valid(*subject)
        if sel is None:
            if valid.all():
                return None
            return np.flatnonzero(valid)
        return np.flatnonzero(sel & valid)

    def _pattern_hits(self, b: BatchView, need: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(rows, leaves) where a pattern predicate is true, and (rows, leaves) where its search gave up."""
        rows_out: list[np.ndarray] = []
        leaves_out: list[np.ndarray] = []
        gave_rows: list[np.ndarray] = []
        gave_leaves: list[np.ndarray] = []

        def add(db: _Database, hr: np.ndarray, hp: np.ndarray, rows_to: list, leaves_to: list) -> None:
            if db.single_leaf:
                rows_to.append(hr)
                leaves_to.append(db.pid_leaf[hp])
            else:
                r2, l2 = expand(hr, hp, db.leaf_ptr, db.leaf_targets)
                rows_to.append(r2)
                leaves_to.append(l2)

        for db in self.dbs:
            rows = self._rows(b, db.subject, need)
            if rows is not None and len(rows) == 0:
                continue
            text = b.text(*db.subject)
            values = _Values(text)
            hr, hp = _scan(db, values, rows)
            if not db.exact.all():
                hr, hp, gr, gp = self._refine(db, text, values, rows, hr, hp)
                if len(gr):
                    add(db, gr, gp, gave_rows, gave_leaves)
            add(db, hr, hp, rows_out, leaves_out)
        by_subject: dict[tuple, list] = {}
        for f in self.fallbacks:
            by_subject.setdefault((f.field, f.derivations), []).append(f)
        for subject, fbs in by_subject.items():
            rows = self._rows(b, subject, need)
            if rows is not None and len(rows) == 0:
                continue
            values = b.text(*subject).to_pylist()
            idx = range(b.n) if rows is None else rows.tolist()
            present = [i for i in idx if values[i] is not None]
            for f in fbs:
                search = self.fallback_regex[f.leaf].search
                found = searches([(search, values[i]) for i in present])
                for out, to, want in ((rows_out, leaves_out, True), (gave_rows, gave_leaves, None)):
                    got = [i for i, v in zip(present, found, strict=True) if v is want]
                    out.append(np.array(got, dtype=np.int64))
                    to.append(np.full(len(got), f.leaf, dtype=np.int64))

        def cat(parts: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, np.int64)

        return cat(rows_out), cat(leaves_out), cat(gave_rows), cat(gave_leaves)

    def _refine(self, db: _Database, text: pa.Array, values: _Values, rows, hr: np.ndarray, hp: np.ndarray):
        """Apply the row modes of non-exact patterns: confirm reports, or let Python decide; also (rows,
        pattern ids) of the searches that gave up (see etl.matching.regex_budget)."""
        ascii_rows = to_np(pc.string_is_ascii(text))
        # reports that need a look: superset patterns on ASCII values, non-exact ones on other values
        look = ~db.exact[hp] & np.where(ascii_rows[hr], db.ascii_confirm[hp], True)
        todo = np.flatnonzero(look).tolist()
        gave_r: list[int] = []
        gave_p: list[int] = []
        if todo:
            keep = ~look
            rows_l, pids_l = hr.tolist(), hp.tolist()
            calls, where = [], []
            for j in todo:
                row, pid = rows_l[j], pids_l[j]
                if ascii_rows[row] or db.other_confirm[pid]:
                    calls.append((db.regex[pid].search, values[row]))
                    where.append(j)
                else:
                    keep[j] = pid not in db.other_python  # python mode: decided below
            for j, found in zip(where, searches(calls), strict=True):
                keep[j] = bool(found)
                if found is None:
                    gave_r.append(rows_l[j])
                    gave_p.append(pids_l[j])
            hr, hp = hr[keep], hp[keep]
        if db.other_python:
            cand = ~ascii_rows & to_np(text.is_valid())
            if rows is not None:
                sel = np.zeros(len(text), dtype=bool)
                sel[rows] = True
                cand &= sel
            idx = np.flatnonzero(cand).tolist()
            if idx:
                strs = [values[i] for i in idx]
                pairs = [(i, pid) for pid in db.other_python for i in idx]
                answers = searches([(db.regex[pid].search, v) for pid in db.other_python for v in strs])
                extra_r: list[int] = []
                extra_p: list[int] = []
                for (i, pid), f in zip(pairs, answers, strict=True):
                    if f is not False:  # a match, or a search that gave up (None)
                        (extra_r if f else gave_r).append(i)
                        (extra_p if f else gave_p).append(pid)
                hr = np.concatenate([hr, np.array(extra_r, np.int64)])
                hp = np.concatenate([hp, np.array(extra_p, np.int64)])
        return hr, hp, np.array(gave_r, np.int64), np.array(gave_p, np.int64)

    def _evaluate(self, cand: np.ndarray, hit_rows: np.ndarray, hit_leaves: np.ndarray, nat) -> np.ndarray:
        """Evaluate general rules on the rows where one of their patterns fired."""
        R = self.R
        order = np.argsort(hit_rows, kind="stable")
        hr, hl = hit_rows[order], hit_leaves[order]
        crow = cand // R
        urows, starts = np.unique(crow, return_index=True)
        ends = list(starts[1:].tolist()) + [len(cand)]
        lo = np.searchsorted(hr, urows, side="left").tolist()
        hi = np.searchsorted(hr, urows, side="right").tolist()
        cand_rules = (cand % R).tolist()
        fns = self.functions
        out: list[int] = []
        N = nat
        for j, row in enumerate(urows.tolist()):
            bits = set(hl[lo[j]:hi[j]].tolist())
            for k in cand_rules[starts[j]:ends[j]]:
                if fns[k](bits, row, N):
                    out.append(row * R + k)
        return np.array(out, dtype=np.int64)


def trigger_leaves(e: Expr, pattern_leaves: set[int], popularity: dict[int, int]) -> frozenset | None:
    """Pattern leaves one of which fires on every row where `e` is true (None: no such set is known).

    A rule is evaluated only on rows where one of them fired, not on every row where any of its patterns
    did: an AND needs one child only -- the one whose patterns the fewest rules read (rarely shared
    patterns, such as a rule's command-line tokens, fire less often than shared ones, such as `Image ends
    with \\powershell.exe`)."""
    if isinstance(e, Pred):
        return frozenset((e.index,)) if e.index in pattern_leaves else None
    if isinstance(e, Or):
        out: frozenset = frozenset()
        for c in e.children:
            t = trigger_leaves(c, pattern_leaves, popularity)
            if t is None:
                return None
            out |= t
        return out
    if isinstance(e, And):
        sets = [t for t in (trigger_leaves(c, pattern_leaves, popularity) for c in e.children) if t is not None]
        if not sets:
            return None
        return min(sets, key=lambda t: (sum(popularity.get(x, 0) for x in t), sorted(t)))
    return None  # not, constants


def _is_simple(e: Expr, pattern_leaves: set[int]) -> bool:
    if isinstance(e, Pred):
        return e.index in pattern_leaves
    if isinstance(e, Or):
        return all(isinstance(c, Pred) and c.index in pattern_leaves for c in e.children)
    return False


# --------------------------------------------------------------------------- public API

_RUNTIMES_KEEP = 16  # loaded programs per process (reloaded rule sets replace older ones)
_RUNTIMES: WorkerCache[str, _Runtime] = WorkerCache("loaded Hyperscan programs", _RUNTIMES_KEEP)


def _runtime(program: FilterProgram) -> _Runtime:
    key = program.digest or str(id(program))
    rt = _RUNTIMES.get(key)
    if rt is None:
        with _RUNTIMES.lock:
            rt = _RUNTIMES.get(key)
            if rt is None:
                rt = _RUNTIMES[key] = _Runtime(program)
    return rt


class Matcher:
    """Match batches against a program; cheap to create (the loaded runtime is shared per process).

    ``cache``: True (default) uses the program's process-wide pre-fingerprint cache, a
    FingerprintCache instance uses that one, False uses none.
    """

    def __init__(self, program: FilterProgram, cache: FingerprintCache | bool = True):
        if not program.digest:
            raise ValueError("the program is not compiled: run etl.optimize.compile_rules")
        self.program = program
        self.rule_ids = program.rule_ids
        self.runtime = _runtime(program)
        if cache is True:
            cache = self.runtime.shared_cache()
        self.cache: FingerprintCache | None = cache if isinstance(cache, FingerprintCache) else None

    def match(self, batch: pa.RecordBatch) -> MatchResult:
        ids = self.rule_ids
        cache = self.cache
        if cache is None or not cache.enabled or not self.program.fingerprint_fields or batch.num_rows == 0:
            rows, rules, u_rows, u_rules = self.runtime.match(batch)
            return MatchResult(batch.num_rows, rows, rules, ids, u_rows, u_rules)
        return self._match_cached(batch, cache)

    def _match_cached(self, batch: pa.RecordBatch, cache: FingerprintCache) -> MatchResult:
        b = BatchView(batch)
        cols = [b.column(f) for f in self.program.fingerprint_fields]
        kinds = [value_kind(c.type) for c in cols]
        if "other" in kinds:  # nested values are not hashable keys: no cache for this batch
            rows, rules, u_rows, u_rules = self.runtime.match(batch)
            return MatchResult(batch.num_rows, rows, rules, self.rule_ids, u_rows, u_rules)
        cache.check_signature(tuple(str(c.type) for c in cols))
        # floats by repr: -0.0 and 0.0 are equal keys but have different text forms
        pylists = [[None if v is None else repr(v) for v in c.to_pylist()] if k == "float" else c.to_pylist()
                   for c, k in zip(cols, kinds, strict=True)]
        keys = pylists[0] if len(pylists) == 1 else list(zip(*pylists, strict=True))
        verdicts, misses = cache.lookup_batch(keys)
        if misses:
            reps = [rows[0] for rows in misses.values()]
            sub = batch.take(pa.array(reps, pa.int64()))
            rows, rules, u_rows, u_rules = self.runtime.match(sub)
            per: list[list[int]] = [[] for _ in reps]
            for r, k in zip(rows.tolist(), rules.tolist(), strict=True):
                per[r].append(k)
            for r, k in zip(u_rows.tolist(), u_rules.tolist(), strict=True):
                per[r].append(~k)  # an undecided rule is kept as ~k (negative): the same value decides the same
            for (key, rws), got in zip(misses.items(), per, strict=True):
                verdict = tuple(got)
                cache.store(key, verdict)
                for i in rws:
                    verdicts[i] = verdict
        out_rows: list[int] = []
        out_rules: list[int] = []
        undecided: list[tuple[int, int]] = []
        for i, v in enumerate(verdicts):
            if v:
                if min(v) < 0:
                    undecided += [(i, ~k) for k in v if k < 0]
                    v = tuple(k for k in v if k >= 0)
                out_rows.extend([i] * len(v))
                out_rules.extend(v)
        u = np.array(undecided, np.int64).reshape(-1, 2)
        return MatchResult(batch.num_rows, np.array(out_rows, np.int64), np.array(out_rules, np.int64), self.rule_ids,
                           u[:, 0].copy(), u[:, 1].copy())
