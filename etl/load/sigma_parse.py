"""Sigma rule files -> plain entries: pySigma's reading of each rule, as data that pickles small.

A file is read with the C YAML loader and each document handed to pySigma
(``SigmaRule.from_dict``); every condition is parsed by pySigma into its
condition tree, with the value modifiers already applied (wildcards,
base64offset, windash, utf16 ... are pySigma's), and that tree is turned into
a neutral tree of tuples:

    ("and", (child, ...)) | ("or", (child, ...)) | ("not", child)
    ("str", field, parts, cased)     parts: literal str, MULTI ("*",), SINGLE ("?",), ("ph", name)
    ("re", field, regex, flags)      flags: a subset of "ims"
    ("cidr", field, network) | ("cmp", field, op, number) | ("num", field, n) | ("bool", field, b)
    ("null", field) | ("exists", field, bool)
    ("unsupported", reason, key)     key: (detection name, item key) for the position, or None

``field`` is None for a keyword (field-less) search. Field mapping, keyword
fields and placeholders are applied later (etl.load.sigma_map), so one parse
serves every filter. Entries are cached by path, mtime and size, in memory
and on disk (one pickle next to the optimizer's cache), so validating a
pipeline over the whole SigmaHQ corpus parses it once.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etl.load import nesting
from etl.load.paths import SIGMA_FILES, PathError, read_text
from etl.spec.rules import pattern_too_long
from etl.workercache import WorkerCache

MULTI = ("*",)  # wildcards are tuples: a literal "*" of the text stays a str
SINGLE = ("?",)
_VERSION = b"sigma-entries-4"  # 3: correlation percentile, value_* types; 4: double negations cancelled


def _modifier_aliases() -> None:
    """`utf16le` is the specification's name of pySigma's `wide`; pySigma's regex checks go through QuietRE2."""
    from sigma.modifiers import modifier_mapping
    from sigma.policy import default_policy

    from etl.load.sigma_guard import quiet_re2_engine

    modifier_mapping.setdefault("utf16le", modifier_mapping["wide"])
    if not isinstance(default_policy.regex_engine, quiet_re2_engine()):
        default_policy.regex_engine = quiet_re2_engine()()


@dataclass(frozen=True)
class SigmaEntry:
    """One rule document of a Sigma file, as pySigma read it."""

    file: str
    doc: int  # index of the YAML document in the file
    line: int  # line of the document's `title:` (or its first line)
    sigma_id: str | None
    title: str
    level: str | None
    status: str | None
    product: str | None
    category: str | None
    service: str | None
    tags: tuple[str, ...]
    tree: Any  # the neutral condition tree, or None when the rule cannot be read
    error: str | None = None  # why pySigma could not read it (or it is not a detection rule)
    error_line: int = 0
    error_col: int = 0
    positions: tuple = ()  # ((detection, key), line, col) of every detection item key
    name: str | None = None  # the rule's `name` (correlation rules reference rules by id or name)
    correlation: Any = None  # a correlation rule: its etl.load.sigma_corr.CorrelationDoc (tree is None)


def _strings(parts: list) -> tuple:
    from sigma.types import Placeholder, SpecialChars

    out: list = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif p is SpecialChars.WILDCARD_MULTI:
            out.append(MULTI)
        elif p is SpecialChars.WILDCARD_SINGLE:
            out.append(SINGLE)
        elif isinstance(p, Placeholder):
            out.append(("ph", p.name))
    return tuple(out)


def _key_of(leaf: Any) -> tuple | None:
    """(detection name, field) of a condition leaf, from pySigma's parent chain (field None: a keyword)."""
    from sigma.conditions import ConditionIdentifier

    node = leaf
    while node is not None:
        if isinstance(node, ConditionIdentifier):
            return (node.identifier, getattr(leaf, "field", None))
        node = getattr(node, "parent", None)
    return None


def _value(field: str | None, v: Any, leaf: Any) -> tuple:
    from sigma import types as t

    if isinstance(v, t.SigmaExpansion):
        return ("or", tuple(_value(field, x, leaf) for x in v.values))
    if isinstance(v, t.SigmaString):  # SigmaCasedString too
        parts = _strings(v.s)
        why = pattern_too_long("".join(p for p in parts if isinstance(p, str)))
        if why is not None:
            return ("unsupported", f"{why} (the value after its modifiers)", _key_of(leaf))
        return ("str", field, parts, isinstance(v, t.SigmaCasedString))
    if isinstance(v, t.SigmaRegularExpression):
        flags = "".join(sorted(t.SigmaRegularExpression.sigma_to_re_flag[f] for f in v.flags))
        regex = str(v.regexp.to_plain())
        why = pattern_too_long(regex)
        if why is not None:
            return ("unsupported", why, _key_of(leaf))
        return ("re", field, regex, flags)
    if isinstance(v, t.SigmaCIDRExpression):
        return ("cidr", field, str(v.network))
    if isinstance(v, t.SigmaCompareExpression):
        return ("cmp", field, v.op.name.lower(), v.number.number)
    if isinstance(v, t.SigmaTimestampPart):
        return ("unsupported", f"the {v.timestamp_part.name.lower()} modifier (a part of a timestamp) is not "
                "supported", _key_of(leaf))
    if isinstance(v, t.SigmaNumber):
        return ("num", field, v.number)
    if isinstance(v, t.SigmaBool):
        return ("bool", field, bool(v.boolean))
    if isinstance(v, t.SigmaNull):
        return ("null", field)
    if isinstance(v, t.SigmaExists):
        return ("exists", field, bool(v.exists))
    if isinstance(v, t.SigmaFieldReference):
        if v.starts_with or v.ends_with:
            return ("unsupported", f"fieldref with startswith, endswith or contains (field {field!r} with field "
                    f"{v.field!r}) is not supported: only equality", _key_of(leaf))
        return ("ref", field, v.field)
    return ("unsupported", f"value {type(v).__name__} is not supported", _key_of(leaf))


def _tree(node: Any) -> tuple:
    from sigma.conditions import (
        ConditionAND, ConditionFieldEqualsValueExpression, ConditionNOT, ConditionOR, ConditionValueExpression,
    )

    if isinstance(node, ConditionAND):
        return ("and", tuple(_tree(a) for a in node.args))
    if isinstance(node, ConditionOR):
        return ("or", tuple(_tree(a) for a in node.args))
    if isinstance(node, ConditionNOT):
        return ("not", _tree(node.args[0]))
    if isinstance(node, ConditionFieldEqualsValueExpression):
        return _value(node.field, node.value, node)
    if isinstance(node, ConditionValueExpression):
        return _value(None, node.value, node)
    return ("unsupported", f"condition element {type(node).__name__} is not supported", None)


def _positions(lines: list[str]) -> tuple[int, tuple]:
    """Line of `title:` and ((detection, key), line, col) of the keys inside `detection:`."""
    title = next((i + 1 for i, ln in enumerate(lines) if ln.startswith("title:")), 1)
    out: list = []
    inside = False
    current = None
    for i, ln in enumerate(lines):
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        if not ln.startswith((" ", "\t", "-")):
            inside = ln.startswith("detection:")
            continue
        if not inside:
            continue
        stripped = ln.lstrip(" -")
        indent = len(ln) - len(ln.lstrip(" "))
        key = stripped.split(":", 1)[0].strip().strip("'\"")
        if ":" not in stripped:
            continue
        if indent <= 4 and not ln.lstrip().startswith("-") and (current is None or indent <= current[1]):
            current = (key, indent)
            out.append(((key, None), i + 1, indent + 1))
            continue
        if current is not None:
            out.append(((current[0], key.split("|")[0] or None), i + 1, len(ln) - len(stripped) + 1))
    return title, tuple(out)


def _documents(lines: list[str]) -> list[tuple[int, list[str]]]:
    """(line offset, lines) of each non-empty YAML document of a file (split at `---` lines)."""
    out: list[tuple[int, list[str]]] = []
    start = 0
    for i in range(len(lines) + 1):
        if i == len(lines) or lines[i].rstrip() == "---":
            chunk = lines[start:i]
            if any(ln.strip() and not ln.lstrip().startswith("#") for ln in chunk):
                out.append((start, chunk))
            start = i + 1
    return out


def _shifted(found: tuple[int, tuple], offset: int) -> tuple[int, tuple]:
    title, positions = found
    return title + offset, tuple((key, line + offset, col) for key, line, col in positions)


def parse_file(path: str) -> list[SigmaEntry]:
    """Every rule document of one Sigma file (an unreadable file is one entry with `error`)."""
    try:
        text = read_text(path, SIGMA_FILES)
    except PathError as e:
        return [_broken(path, f"cannot read the file: {e.message}", 1, 1)]
    return parse_text(text, path)


def _broken(path: str, error: str, line: int, col: int) -> SigmaEntry:
    return SigmaEntry(path, 0, 1, None, os.path.basename(path), None, None, None, None, None, (), None, error, line,
                      col)


def parse_text(text: str, path: str = "<sigma>") -> list[SigmaEntry]:
    """`parse_file` of a text (named `path` in the entries)."""
    import yaml
    from sigma.exceptions import SigmaError
    from sigma.rule import SigmaRule

    from etl.load.sigma_guard import conditions

    _modifier_aliases()
    try:
        docs = [d for d in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if d is not None]
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        return [_broken(path, f"YAML error: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
                        (mark.line + 1) if mark else 1, (mark.column + 1) if mark else 1)]
    lines = text.splitlines()
    chunks = _documents(lines)
    whole = _positions(lines)
    out = []
    for k, d in enumerate(docs):
        if not isinstance(d, dict):
            continue
        offset, doc_lines = chunks[k] if len(chunks) == len(docs) else (0, lines)
        title_line, positions = whole if doc_lines is lines else _shifted(_positions(doc_lines), offset)
        ls = d["logsource"] if isinstance(d.get("logsource"), dict) else {}
        tags = d["tags"] if isinstance(d.get("tags"), list) else []
        meta: dict[str, Any] = dict(file=path, doc=k, line=title_line, sigma_id=_s(d.get("id")), title=_s(d.get("title")) or "",
                    level=_s(d.get("level")), status=_s(d.get("status")), product=_s(ls.get("product")),
                    category=_s(ls.get("category")), service=_s(ls.get("service")),
                    tags=tuple(str(t) for t in tags), positions=positions, name=_s(d.get("name")))
        if "correlation" in d:
            from etl.load.sigma_corr import read_correlation

            corr, error, (line, col) = read_correlation(d, doc_lines, offset, title_line)
            out.append(SigmaEntry(**meta, tree=None, correlation=corr, error=error, error_line=line,
                                  error_col=col))
            continue
        deep = conditions(d, doc_lines, offset, positions)
        if deep is not None:
            out.append(SigmaEntry(**meta, tree=None, error=nesting.message("its condition is"), error_line=deep[0],
                                  error_col=deep[1]))
            continue
        try:
            rule = SigmaRule.from_dict(d, collect_errors=False)
            _encoded_values_cased(rule)
            trees = [_tree(c.parse()) for c in rule.detection.parsed_condition]
        except (SigmaError, ValueError, TypeError, KeyError, AttributeError) as e:
            line, col = _error_position(e, positions, title_line, doc_lines, offset)
            out.append(SigmaEntry(**meta, tree=None, error=f"pySigma cannot read the rule: {e}",
                                  error_line=line, error_col=col))
            continue
        tree = trees[0] if len(trees) == 1 else ("or", tuple(trees))
        out.append(SigmaEntry(**meta, tree=tree))
    return out


def _encoded_values_cased(rule: Any) -> None:
    """Values a base64/base64offset modifier produced are matched as written (case matters in base64)."""
    from sigma.modifiers import SigmaBase64Modifier, SigmaBase64OffsetModifier
    from sigma.rule.detection import SigmaDetection
    from sigma.types import SigmaCasedString, SigmaExpansion, SigmaString

    def cased(v: Any) -> Any:
        if isinstance(v, SigmaExpansion):
            return SigmaExpansion([cased(x) for x in v.values])
        return SigmaCasedString.from_sigma_string(v) if type(v) is SigmaString else v

    def walk(d: Any) -> None:
        for item in d.detection_items:
            if isinstance(item, SigmaDetection):
                walk(item)
            elif any(m in (SigmaBase64Modifier, SigmaBase64OffsetModifier) for m in item.modifiers):
                item.value = [cased(v) for v in item.value]

    for det in rule.detection.detections.values():
        walk(det)


def _s(v: Any) -> str | None:
    return None if v is None else str(v)


def _error_position(e: Exception, positions: tuple, default: int, lines: list[str], offset: int) -> tuple[int, int]:
    """Where pySigma's error points: the detection item of a bad regular expression (the first item at or above
    the line holding the pattern), else the `detection:` line."""
    det = next((p for p in positions if p[0][1] is None), None)
    bad = _BAD_REGEX.match(str(e))
    if bad is not None:
        pattern = bad.group(1)
        written = {pattern, pattern.replace("'", "''"), pattern.replace("\\", "\\\\").replace('"', '\\"')}
        at = next((offset + i + 1 for i, ln in enumerate(lines) if any(w in ln for w in written)), None)
        items = [p for p in positions if p[0][1] is not None and at is not None and p[1] <= at]
        if items:
            return items[-1][1], items[-1][2]
    return (det[1] - 1, 1) if det is not None else (default, 1)  # the `detection:` line


_BAD_REGEX = re.compile(r"Regular expression '(.*)' is invalid: ", re.S)


# --------------------------------------------------------------------------- cache

# a Sigma file's path -> (its stamp, its entries): one per file the process read (a hot reload keeps the last
# readable version of a file from here)
_MEMORY: WorkerCache[str, tuple[tuple | None, list[SigmaEntry]]] = WorkerCache("Sigma files parsed", None)


def _stamp(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _disk_key() -> str | None:
    from etl.diskcache import cache_dir

    if cache_dir() is None:
        return None
    import sigma

    h = hashlib.sha256(_VERSION)
    h.update(Path(__file__).read_bytes())
    h.update(getattr(sigma, "__version__", "").encode())
    return h.hexdigest()[:32]


def entries_of(paths: list[str], rejected: list | None = None) -> list[SigmaEntry]:
    """The entries of `paths` (in order), parsing only files new or changed since they were last seen.

    With `rejected` (a hot reload): a changed file that cannot be read any more keeps the entries of its last
    readable version, and its broken entry is appended to `rejected`."""
    from etl import diskcache

    stamps = {p: _stamp(p) for p in paths}
    missing = [p for p in paths if p not in _MEMORY or _MEMORY[p][0] != stamps[p]]
    key = _disk_key() if missing else None
    stored: dict = {}
    if key is not None:
        body = diskcache.read("sigma", key, ".pickle")
        try:
            stored = pickle.loads(body) if body is not None else {}
        except Exception:  # noqa: BLE001 - a damaged cache is rebuilt
            stored = {}
        for p in missing:
            got = stored.get(p)
            if got is not None and got[0] == stamps[p]:
                _MEMORY[p] = got
        missing = [p for p in missing if p not in _MEMORY or _MEMORY[p][0] != stamps[p]]
    for p in missing:
        fresh = parse_file(p)
        broken = [e for e in fresh if e.error is not None]
        old = _MEMORY.get(p)
        if rejected is not None and broken and old is not None and all(e.error is None for e in old[1]):
            rejected.extend(broken)
            fresh = old[1]
        _MEMORY[p] = (stamps[p], fresh)
    if missing and key is not None:
        stored.update({p: _MEMORY[p] for p in paths})
        diskcache.write("sigma", key, ".pickle", pickle.dumps(stored, protocol=pickle.HIGHEST_PROTOCOL))
    return [e for p in paths for e in _MEMORY[p][1]]
