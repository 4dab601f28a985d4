"""Static predicates and rewrites over the IR (see ``etl.grokvm.ir`` for the node kinds).

Memoised on node identity while one compilation runs (``clear_caches`` afterwards).
"""
from __future__ import annotations

import functools

from .ir import EMPTY, Unsupported, alt, rep, seq

# --------------------------------------------------------------------------- predicates

_CACHES: list[dict] = []


def clear_caches() -> None:
    """Forget the memoised predicates (the compiler calls this when it is done)."""
    for c in _CACHES:
        c.clear()


def _memo(fn):
    """Memoise on the identity of the IR node (tuples do not cache their hash, and IR trees
    are deep: hashing them at every recursive call would be quadratic)."""
    cache: dict = {}
    _CACHES.append(cache)

    @functools.wraps(fn)
    def wrapper(x, *args):
        key = (id(x),) + args
        hit = cache.get(key)
        if hit is not None and hit[0] is x:
            return hit[1]
        r = fn(x, *args)
        cache[key] = (x, r)  # keeps x alive, so its id is not reused
        return r
    return wrapper


def children(x: tuple) -> tuple:
    k = x[0]
    if k in ('seq', 'alt'):
        return x[1]
    if k in ('cap', 'look'):
        return (x[2],)
    if k == 'rep':
        return (x[4],)
    if k == 'atomic':
        return (x[1],)
    return ()


@_memo
def has_cap(x: tuple) -> bool:
    return x[0] == 'cap' or any(has_cap(c) for c in children(x))


@_memo
def has_look(x: tuple) -> bool:
    return x[0] == 'look' or any(has_look(c) for c in children(x))


@_memo
def nullable(x: tuple) -> bool:
    """Can x match the empty string (assertions count as empty; superset answer)?"""
    k = x[0]
    if k == 'set':
        return False
    if k == 'seq':
        return all(nullable(i) for i in x[1])
    if k == 'alt':
        return any(nullable(o) for o in x[1])
    if k == 'rep':
        return x[1] == 0 or nullable(x[4])
    if k in ('cap', 'atomic'):
        return nullable(children(x)[0])
    return True  # zero-width assertions


@_memo
def width(x: tuple) -> int | None:
    """Number of bytes every match of x consumes, or None if it varies."""
    k = x[0]
    if k == 'set':
        return 1
    if k == 'seq':
        ws = [width(i) for i in x[1]]
        return None if None in ws else sum(ws)
    if k == 'alt':
        widths = {width(o) for o in x[1]}
        return widths.pop() if len(widths) == 1 else None
    if k == 'rep':
        w = width(x[4])
        return None if w is None or (x[1] != x[2] and w != 0) else x[1] * w
    if k in ('cap', 'atomic'):
        return width(children(x)[0])
    return 0


@_memo
def first(x: tuple) -> int:
    """Superset of the bytes a non-empty match of x can start with."""
    k = x[0]
    if k == 'set':
        return x[1]
    if k == 'seq':
        m = 0
        for i in x[1]:
            m |= first(i)
            if not nullable(i):
                break
        return m
    if k == 'alt':
        m = 0
        for o in x[1]:
            m |= first(o)
        return m
    if k in ('rep', 'cap', 'atomic'):
        return first(children(x)[-1])
    return 0


@_memo
def deterministic(x: tuple) -> bool:
    """No choice point at all (then an atomic group around x changes nothing)."""
    k = x[0]
    if k == 'alt':
        return False
    if k == 'rep' and x[1] != x[2]:
        return False
    if k == 'look':
        return True
    return all(deterministic(c) for c in children(x))


@_memo
def atomic_ok(x: tuple, at_end: bool) -> bool:
    """May every atomic group in x be run as an ordinary group by a first-match DFA for a
    leaf in which x sits (``at_end``: nothing at all follows x inside that leaf)?

    ``(?>y)`` only differs from ``(?:y)`` when something after it fails and the backtracker
    would retry y; at the end of a leaf nothing can fail after it (the DFA reports the end of
    the first successful path, which passes through y's first successful path). A y without
    choice points has a single path, so ``(?>y)`` is ``y`` anywhere."""
    k = x[0]
    if k == 'atomic':
        if deterministic(x[1]):
            return atomic_ok(x[1], at_end)
        return at_end and atomic_ok(x[1], True)
    if k == 'seq':
        items = x[1]
        return all(atomic_ok(i, False) for i in items[:-1]) and (not items or atomic_ok(items[-1], at_end))
    if k == 'alt':
        return all(atomic_ok(o, at_end) for o in x[1])
    if k == 'rep':
        return atomic_ok(x[4], at_end and x[2] is not None and x[2] <= 1)
    if k == 'cap':
        return atomic_ok(x[2], at_end)
    if k == 'look':
        return atomic_ok(x[2], True)
    return True


def strip(x: tuple, at_end: bool = True) -> tuple:
    """Probe language: captures removed, atomic groups made ordinary, general lookaheads
    dropped -- except a positive lookahead with nothing after it (``at_end``), which
    becomes its body: a probe only asks whether SOME match exists, and ``r(?=y)`` has one
    exactly when ``ry`` has. Every match of x (in any context) is a match of strip(x)."""
    k = x[0]
    if k == 'seq':
        items = x[1]
        return seq([strip(i, False) for i in items[:-1]] + [strip(i, at_end) for i in items[-1:]])
    if k == 'alt':
        return alt(strip(o, at_end) for o in x[1])
    if k == 'rep':
        return rep(x[1], x[2], x[3], strip(x[4], at_end and x[2] is not None and x[2] <= 1))
    if k in ('cap', 'atomic'):
        return strip(children(x)[0], at_end)
    if k == 'look':
        return strip(x[2], True) if at_end and not x[1] else EMPTY
    return x


def inline_final_looks(x: tuple, at_end: bool = True) -> tuple:
    """For existence checks: a positive lookahead with nothing after it becomes its body
    (``(?=a$)`` has a match exactly when ``a(?:\\n?\\Z)`` has one); the rest is unchanged."""
    k = x[0]
    if k == 'seq' and x[1]:
        return seq(list(x[1][:-1]) + [inline_final_looks(x[1][-1], at_end)])
    if k == 'alt':
        return alt(inline_final_looks(o, at_end) for o in x[1])
    if k == 'rep' and x[2] is not None and x[2] <= 1:
        return rep(x[1], x[2], x[3], inline_final_looks(x[4], at_end))
    if k == 'atomic':
        return ('atomic', inline_final_looks(x[1], at_end))
    if k == 'look' and at_end and not x[1]:
        return inline_final_looks(x[2], True)
    return x


# --------------------------------------------------------------------------- rewriting

def simplify(x: tuple) -> tuple:
    """Drop a negative lookahead ``(?!y)`` directly followed (in its sequence) by a
    non-nullable z whose first bytes cannot start y: ``(?!y)z`` == ``z`` (if z matches at p,
    s[p] is in first(z), so y cannot match at p). Grok's TIME has ``(?!<[0-9])`` before an
    hour; this keeps the whole timestamp one DFA."""
    k = x[0]
    if k == 'seq':
        items = [simplify(i) for i in x[1]]
        out = []
        for i, it in enumerate(items):
            if it[0] == 'look' and it[1] and not nullable(it[2]):
                rest = seq(items[i + 1:])
                if not nullable(rest) and not (first(rest) & first(it[2])):
                    continue
            out.append(it)
        return seq(out)
    if k == 'alt':
        return alt(simplify(o) for o in x[1])
    if k == 'rep':
        return rep(x[1], x[2], x[3], simplify(x[4]))
    if k == 'cap':
        return ('cap', x[1], simplify(x[2]))
    if k == 'atomic':
        return ('atomic', simplify(x[1]))
    if k == 'look':
        return ('look', x[1], simplify(x[2]))
    return x


def check(x: tuple) -> None:
    """Reject repeats (max > 1) whose body can match the empty string: backtracking engines
    stop such loops by special rules that neither the DFA nor the walker reproduce."""
    if x[0] == 'rep' and (x[2] is None or x[2] > 1) and nullable(x[4]):
        raise Unsupported("repeat whose body can match the empty string")
    for c in children(x):
        check(c)
