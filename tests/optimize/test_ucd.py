"""The precomputed Unicode tables and the class sets hsregex derives from them equal what Python's re does."""

from __future__ import annotations

import random
import re
import re._constants as C  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
import unicodedata
from functools import lru_cache

import _sre
import pytest

from etl.regexes import hsregex, ucd, ucd_tables


@lru_cache(maxsize=1)
def _universe() -> str:
    return ucd.universe()


def _scan(atom: str, flags: int) -> tuple:
    """Reference: the code points a one-character pattern matches, asking Python about every one."""
    runs = re.finditer(f"(?:{atom})+", _universe(), flags)
    return hsregex._merge((ucd._cp(m.start()), ucd._cp(m.end() - 1)) for m in runs)


def test_shipped_tables_are_current():
    assert unicodedata.unidata_version == ucd_tables.UNIDATA_VERSION, \
        "Python's Unicode version changed: run `.venv/bin/python -m etl.regexes.ucd`"
    assert dict(ucd_tables.TABLES) == ucd.compute()


def test_outside_the_fold_set_case_does_not_matter():
    fold = set(c for lo, hi in ucd.tables()["fold"] for c in range(lo, hi + 1))
    lower_images = {_sre.unicode_tolower(c) for c in range(ucd.MAX_CP + 1)}
    for c in range(ucd.MAX_CP + 1):
        if c in fold or 0xD800 <= c <= 0xDFFF:
            continue
        assert _sre.unicode_tolower(c) == c and not _sre.unicode_iscased(c)
        assert chr(c).upper() == chr(c) and chr(c).lower() == chr(c)
    assert lower_images - {c for c in lower_images if 0xD800 <= c <= 0xDFFF} <= fold | set(
        c for c in range(ucd.MAX_CP + 1) if _sre.unicode_tolower(c) == c and c not in fold)


ATOMS = [r"\d", r"\D", r"\s", r"\S", r"\w", r"\W", "a", "k", "K", "s", "i", "é", "\u212a", "\u017f", "\u0130",
         "\u0131", "ß", "\u1e9e", "µ", "Σ", "ς", "0", "_", "\\-", "\u00a0", "\u0663", "\U00010400", "a-z", "A-Z",
         "0-9", "\u00c0-\u00ff", "\u0370-\u03ff", "\U00010400-\U0001044f", "\x00-\x7f", "J-L"]


def _classes(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = {"[\\s]", "[^\\w]", "[kK]", "[^k]", "[\\w-]", "[^\\W\\d]"}
    while len(out) < n:
        items = "".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 3)))
        out.add("[" + ("^" if rng.random() < 0.4 else "") + items + "]")
    return sorted(out)


@pytest.mark.parametrize("flags", [0, re.IGNORECASE, re.ASCII, re.IGNORECASE | re.ASCII])
def test_class_sets_equal_a_scan_of_every_code_point(flags):
    for cls in _classes(14, seed=flags):
        (op, av), = list(sre_parse.parse(cls, flags))
        if op is C.LITERAL:  # the parser turns one-item classes into literals
            got = hsregex.literal_ranges(av, flags)
        elif op is C.NOT_LITERAL:
            got = hsregex.class_ranges([(C.NEGATE, None), (C.LITERAL, av)], flags)
        else:
            got = hsregex.class_ranges(av, flags)
        assert got == _scan(cls, flags), (cls, flags)


@pytest.mark.parametrize("ch", ["a", "k", "s", "i", "I", "ß", "Σ", "\u212a", "\u0130", "\u1e9e", "\U00010400", "µ"])
def test_caseless_literals_equal_a_scan(ch):
    for flags in (re.IGNORECASE, re.IGNORECASE | re.ASCII):
        assert hsregex.literal_ranges(ord(ch), flags) == _scan(re.escape(ch), flags), (ch, flags)
