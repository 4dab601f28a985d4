"""pySigma's reading of a rule (etl.load.sigma_parse) -> an etl rule tree (the `when` of etl.spec.rules.Rule).

The mapping keeps Sigma's meaning (see docs/rules-and-sigma.md "Sigma rules"):

* strings are case-insensitive (``caseless``) unless ``cased``; a string with
  no wildcard is ``eq``; ``*x*``, ``x*``, ``*x`` are contains / starts_with /
  ends_with; any other use of ``*`` and ``?`` is a LIKE pattern (``%``, ``_``,
  with ``%``, ``_`` and ``\\`` of the text escaped);
* a number equals the number or its decimal text (logs carry both), a string
  of digits equals the text or the number; ``true``/``false`` equal booleans;
  ``null`` is ``is_null``; ``exists`` is not_null / is_null;
* ``re`` is ``regex`` (``re.search``), ``i`` is ``caseless``, ``m`` and ``s``
  become inline flags; ``cidr`` is ``cidr``; ``gt``/``gte``/``lt``/``lte``/``neq``
  are gt/ge/lt/le/ne on numbers;
* a keyword (field-less) value matches when it is found in one of the
  ``keyword_fields`` (a plain keyword is a substring, as a full-text search
  finds it; wildcards keep their meaning);
* ``fieldref`` is ``fieldref`` (the field equals the other field's value, caselessly);
* ``expand`` placeholders (``%name%``) take each value of ``vars[name]`` (OR);
* what etl cannot express raises :class:`Unsupported` with the reason.
"""

from __future__ import annotations

import itertools
import re
from typing import Any
from collections.abc import Callable

from etl.load.sigma_parse import MULTI, SINGLE

_MAX_VARIANTS = 1000
_DIGITS = re.compile(r"-?[0-9]{1,18}")
_CMP = {"lt": "lt", "lte": "le", "gt": "gt", "gte": "ge", "neq": "ne"}


class Unsupported(Exception):
    def __init__(self, reason: str, key: tuple | None = None):
        super().__init__(reason)
        self.reason = reason
        self.key = key


class Mapper:
    """Turns neutral trees into etl rule trees (dicts in the rule language's YAML form)."""

    def __init__(self, field_of: Callable[[str], str], keyword_fields: list[str], vars_: dict[str, Any]):
        self.field_of = field_of
        self.keyword_fields = list(keyword_fields)
        self.vars = {k: ([v] if isinstance(v, str) else list(v)) for k, v in vars_.items()}
        self.fields_read: dict[str, str | None] = {}  # event field -> the Sigma field it stands for

    def when(self, tree: tuple) -> dict:
        tag = tree[0]
        if tag in ("and", "or"):
            kids = [self.when(c) for c in tree[1]]
            return kids[0] if len(kids) == 1 else {"all" if tag == "and" else "any": kids}
        if tag == "not":
            return {"not": self.when(tree[1])}
        if tag == "unsupported":
            raise Unsupported(tree[1], tree[2])
        field = tree[1]
        if field is not None:
            mapped = self.field_of(field)
            self.fields_read.setdefault(mapped, field)
            return self.leaf(tree, mapped)
        if not self.keyword_fields:
            raise Unsupported("a keyword (field-less) search needs `keyword_fields`: the columns to search in")
        for f in self.keyword_fields:
            self.fields_read.setdefault(f, None)
        kids = [self.leaf(tree, f, keyword=True) for f in self.keyword_fields]
        return kids[0] if len(kids) == 1 else {"any": kids}

    def leaf(self, tree: tuple, field: str, keyword: bool = False) -> dict:
        tag = tree[0]
        if tag == "str":
            return self.string(field, tree[2], tree[3], keyword)
        if tag == "re":
            regex, flags = tree[2], tree[3]
            inline = "".join(f for f in flags if f in "ms")
            return {"field": field, "regex": (f"(?{inline})" if inline else "") + regex, "caseless": "i" in flags}
        if tag == "cidr":
            return {"field": field, "cidr": tree[2]}
        if tag == "cmp":
            return {"field": field, _CMP[tree[2]]: tree[3]}
        if tag == "num":
            n = tree[2]
            return {"any": [{"field": field, "eq": n}, {"field": field, "eq": str(n), "caseless": True}]}
        if tag == "bool":
            return {"field": field, "eq": tree[2]}
        if tag == "ref":  # the two fields' values equal, case-insensitively as Sigma's strings
            other = self.field_of(tree[2])
            self.fields_read.setdefault(other, tree[1])  # W341 points at the item holding the fieldref
            return {"field": field, "fieldref": other, "caseless": True}
        if tag == "null":
            return {"field": field, "is_null": True}
        if tag == "exists":
            return {"field": field, "not_null" if tree[2] else "is_null": True}
        raise Unsupported(f"value kind {tag!r} is not supported")

    def string(self, field: str, parts: tuple, cased: bool, keyword: bool) -> dict:
        variants = self.expand(parts)
        kids = []
        for v in variants:
            if keyword and MULTI not in v and SINGLE not in v:  # a plain keyword: found anywhere in the text
                v = (MULTI, *v, MULTI)
            kids.append(pattern(field, v, not cased))
        return kids[0] if len(kids) == 1 else {"any": kids}

    def expand(self, parts: tuple) -> list[tuple]:
        choices: list[list[tuple]] = []
        for p in parts:
            if isinstance(p, tuple) and p[0] == "ph":
                values = self.vars.get(p[1])
                if values is None:
                    raise Unsupported(f"placeholder %{p[1]}% has no value: give it in `sigma.vars`")
                choices.append([(v,) for v in values])
            else:
                choices.append([(p,)])
        n = 1
        for c in choices:
            n *= len(c)
        if n > _MAX_VARIANTS:
            raise Unsupported(f"placeholders expand to {n} values (at most {_MAX_VARIANTS})")
        return [tuple(x for part in combo for x in part) for combo in itertools.product(*choices)]


def _merge(parts: tuple) -> list:
    """Adjacent literal texts joined; wildcards kept as the MULTI / SINGLE markers (tuples)."""
    out: list = []
    for p in parts:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        else:
            out.append(p)
    return out


def pattern(field: str, parts: tuple, caseless: bool) -> dict:
    """One string value with wildcards as an etl predicate."""
    toks = _merge(parts)
    lits = [t for t in toks if isinstance(t, str)]
    wild = [t for t in toks if not isinstance(t, str)]
    base = {"field": field, "caseless": caseless}
    if not wild:
        text = "".join(lits)
        pred = {**base, "eq": text}
        if _DIGITS.fullmatch(text):
            return {"any": [pred, {"field": field, "eq": int(text)}]}
        return pred
    if all(w == MULTI for w in wild) and len(lits) <= 1:
        text = lits[0] if lits else ""
        shape = tuple(isinstance(t, str) for t in toks)
        if shape == (False, True, False):
            return {**base, "contains": text}
        if shape == (False, True):
            return {**base, "ends_with": text}
        if shape == (True, False):
            return {**base, "starts_with": text}
    like = "".join(_like_escape(t) if isinstance(t, str) else ("%" if t == MULTI else "_") for t in toks)
    return {**base, "like": like}


def _like_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
