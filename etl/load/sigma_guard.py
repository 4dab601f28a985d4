"""What etl checks in a Sigma rule before pySigma reads it, and how pySigma checks its regular expressions.

* conditions: double negations cancel (`not not x` is `x`, in Sigma as in its backends), so a chain of 5,000
  `not` reads as 0 or 1; a condition nested deeper than etl's limit (etl.load.nesting) is refused at its
  place: pySigma parses a condition and deep-copies its tree recursively (164 nested `not` were a
  RecursionError);
* RE2 (pySigma's regex engine, its default safe policy) without its native log on stderr.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from etl.load import nesting


@functools.cache
def quiet_re2_engine() -> type:
    from sigma.policy.regex_engine import RE2RegexEngine

    class QuietRE2(RE2RegexEngine):
        """pySigma's RE2 engine (its default, safe policy) without RE2's native log: a bad pattern wrote
        `E0000 ... re2.cc:242] Error parsing ...` to the user's stderr. The error's text is decoded (RE2 gives
        bytes), and the rule is skipped with a W340 at the item holding the pattern."""

        def compile(self, pattern: str, flags: int = 0) -> Any:
            prefix = "".join(v for k, v in ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))
                             if int(flags) & int(k))
            options = self._re2.Options()
            options.log_errors = False
            try:
                return self._re2.compile(f"(?{prefix})" + pattern if prefix else pattern, options=options)
            except self._re2.error as e:
                why = e.args[0] if e.args else ""
                raise self._re2.error(why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)) from None

    return QuietRE2


_TOKEN = re.compile(r"[()]|[^\s()]+")


def conditions(d: dict, lines: list[str], offset: int, positions: tuple) -> tuple[int, int] | None:
    """Each condition of a rule's detection without its double negations (`not not x` is `x`, in Sigma as in
    its backends: so a chain of 5,000 `not` reads as 0 or 1); the (line, col) of the first one nested deeper than
    etl's limit (etl.load.nesting), else None. pySigma parses and copies a condition recursively."""
    det = d.get("detection")
    if not isinstance(det, dict) or not isinstance(det.get("condition"), (str, list)):
        return None
    conds = det["condition"]
    single = isinstance(conds, str)
    out = []
    for cond in [conds] if single else conds:
        if not isinstance(cond, str):
            out.append(cond)
            continue
        tokens = [(m.group(), m.start()) for m in _TOKEN.finditer(cond)]
        text = list(cond)
        i = 0
        while i < len(tokens):
            if tokens[i][0] == "not" and i + 1 < len(tokens) and tokens[i + 1][0] == "not":
                for _, at in tokens[i:i + 2]:
                    text[at:at + 3] = "   "
                del tokens[i:i + 2]
                i = max(i - 1, 0)
                continue
            i += 1
        kinds = {"(": nesting.OPEN, ")": nesting.CLOSE, "not": nesting.UNARY, "and": nesting.SEP, "or": nesting.SEP}
        deep = nesting.too_deep((kinds.get(t, nesting.OTHER), at) for t, at in tokens)
        if deep is not None:
            return _position(cond, deep, lines, offset, positions)
        out.append("".join(text))
    det["condition"] = out[0] if single else out
    return None


def _position(cond: str, at: int, lines: list[str], offset: int, positions: tuple) -> tuple[int, int]:
    """(line, col) of offset `at` of a condition, when the condition is written on its key's line (else the key's)."""
    key = next(((line, col) for (name, field), line, col in positions if name == "condition" and field is None),
               None)
    if key is None:
        return offset + 1, 1
    text = lines[key[0] - 1 - offset] if 0 <= key[0] - 1 - offset < len(lines) else ""
    start = text.find(cond, key[1])
    return (key[0], start + at + 1) if start >= 0 else key
