"""Jinja2 templating of pipeline text, sandboxed, before YAML parsing.

`{{ vars.name }}` (or `{{ name }}`) reads the pipeline's `vars`; `{{ env("NAME", "default") }}`
reads an environment variable. Undefined names are reported at their line.
Values read from the environment are remembered so printed configs can redact them.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from jinja2 import ChainableUndefined, StrictUndefined, TemplateSyntaxError, UndefinedError, nodes
from jinja2.sandbox import SandboxedEnvironment, SecurityError

from etl.diagnostics import Report, Span, did_you_mean

_MISSING = object()


@dataclass
class Rendered:
    text: str
    secrets: set[str] = field(default_factory=set)


class _Env:
    """The `env(...)` callable exposed to templates; records what it returns."""

    def __init__(self, environ: Mapping[str, str], strict: bool):
        self.environ = environ
        self.strict = strict
        self.used: set[str] = set()

    def __call__(self, name: str, default: Any = _MISSING) -> Any:
        if name in self.environ:
            value = self.environ[name]
            if value:
                self.used.add(value)
            return value
        if default is not _MISSING:
            return default
        if self.strict:
            raise UndefinedError(f"environment variable {name!r} is not set")
        return ""


class _Lenient(ChainableUndefined):
    """First-pass undefined: every operation on it quietly yields another undefined (renders as '')."""

    def _quiet(self, *args: Any, **kwargs: Any) -> "_Lenient":
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _quiet
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pos__ = __neg__ = __pow__ = __rpow__ = _quiet
    __call__ = __getitem__ = _quiet
    __lt__ = __le__ = __gt__ = __ge__ = _quiet

    def __int__(self) -> int:
        return 0

    def __float__(self) -> float:
        return 0.0

    def __iter__(self):
        return iter(())

    def __bool__(self) -> bool:
        return False

    __hash__ = ChainableUndefined.__hash__


@functools.cache
def _lenient_env() -> SandboxedEnvironment:
    return SandboxedEnvironment(undefined=_Lenient, keep_trailing_newline=True, autoescape=False)


@functools.cache
def _strict_env() -> SandboxedEnvironment:
    return SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)


def has_template(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


def _line_of(text: str, needle: str) -> tuple[int, int]:
    for i, line in enumerate(text.splitlines(), 1):
        col = line.find(needle)
        if col >= 0:
            return i, col + 1
    return 1, 1


def _tag_col(text: str, lineno: int | None) -> int:
    """Column of the first template tag on a line (1 when there is none)."""
    lines = text.splitlines()
    if not lineno or lineno > len(lines):
        return 1
    found = [c for c in (lines[lineno - 1].find(t) for t in ("{{", "{%", "{#")) if c >= 0]
    return min(found) + 1 if found else 1


def _template_line(exc: BaseException) -> int | None:
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _check_names(ast: nodes.Template, known: Mapping[str, Any], vars_: Mapping[str, Any], text: str,
                 file: str, report: Report, environ: Mapping[str, str]) -> None:
    """Report every undefined variable and unset env var at its own line, before rendering."""
    assigned = {n.name for n in ast.find_all(nodes.Name) if n.ctx in ("store", "param")}
    for name in ast.find_all(nodes.Name):
        if name.ctx == "load" and name.name not in known and name.name not in assigned:
            line = name.lineno
            col = text.splitlines()[line - 1].find(name.name) + 1 if line <= len(text.splitlines()) else 1
            report.error("E003", f"undefined template variable '{name.name}'", Span(file, line, max(col, 1)),
                         did_you_mean(name.name, [*known, *vars_]) or "define it under `vars:` or pass --var NAME=VALUE")
    for attr in ast.find_all(nodes.Getattr):
        if isinstance(attr.node, nodes.Name) and attr.node.name == "vars" and attr.attr not in vars_:
            line = attr.lineno
            lines = text.splitlines()
            idx = lines[line - 1].find("vars." + attr.attr) if line <= len(lines) else -1
            col = idx + 6 if idx >= 0 else 1
            report.error("E003", f"undefined template variable 'vars.{attr.attr}'", Span(file, line, max(col, 1)),
                         did_you_mean(attr.attr, vars_) or "define it under `vars:` or pass --var NAME=VALUE")
    for call in ast.find_all(nodes.Call):
        if isinstance(call.node, nodes.Name) and call.node.name == "env" and call.args:
            arg = call.args[0]
            has_default = len(call.args) > 1 or any(k.key == "default" for k in call.kwargs)
            if isinstance(arg, nodes.Const) and isinstance(arg.value, str) and not has_default \
                    and arg.value not in environ:
                line = call.lineno
                lines = text.splitlines()
                col = lines[line - 1].find(arg.value) + 1 if line <= len(lines) else 1
                report.error("E004", f"environment variable '{arg.value}' is not set", Span(file, line, max(col, 1)),
                             f"export {arg.value}=... or give a default: env(\"{arg.value}\", \"value\")")


# `{{ vars.a.b }}`, `{{ name }}`, `{{ env("NAME") }}`, `{{ env("NAME", "default") }}`: the
# expressions nearly every pipeline uses; they are substituted without compiling a template.
_EXPR = re.compile(r"\{\{(.*?)\}\}", re.S)
_SIMPLE = re.compile(
    r"""\s*(?:(?P<ref>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)"""
    r"""|env\(\s*(?P<q>["'])(?P<name>[^"'\\\n]*)(?P=q)\s*"""
    r"""(?:,\s*(?:(?P<q2>["'])(?P<default>[^"'\\\n]*)(?P=q2)|(?P<num>-?\d+(?:\.\d+)?)))?\s*\))\s*\Z""")
_NOT_SIMPLE = object()
_RESERVED = {"env", "true", "false", "none", "True", "False", "None", "range", "loop", "self"}


def _fast_render(text: str, file: str, vars_: Mapping[str, Any], report: Report, strict: bool,
                 environ: Mapping[str, str]) -> Any:
    """Render a template made only of simple `{{ }}` expressions; _NOT_SIMPLE otherwise."""
    if "{%" in text or "{#" in text or "{{" in _EXPR.sub("", text):
        return _NOT_SIMPLE  # statements, comments, or an unterminated tag: jinja handles (and reports) them
    pieces: list[str] = []
    secrets: set[str] = set()
    errors: list[tuple[str, str, int, str | None]] = []  # code, message, offset, hint
    pos = 0
    for m in _EXPR.finditer(text):
        e = _SIMPLE.match(m.group(1))
        if e is None:
            return _NOT_SIMPLE
        pieces.append(text[pos:m.start()])
        pos = m.end()
        inner = m.start(1)
        if e.group("ref"):
            parts = e.group("ref").split(".")
            if parts[0] in _RESERVED:
                return _NOT_SIMPLE
            if parts[0] == "vars":
                if len(parts) == 1:
                    return _NOT_SIMPLE
                value, rest, shown = vars_, parts[1:], "vars."
            else:
                value, rest, shown = vars_, parts, ""
            first = True
            for part in rest:
                if not isinstance(value, Mapping) or part not in value:
                    if not first:
                        return _NOT_SIMPLE  # deeper lookups: let jinja decide and explain
                    if strict:
                        off = inner + m.group(1).index(e.group("ref")) + len(shown)
                        name = shown + part
                        errors.append(("E003", f"undefined template variable '{name}'", off,
                                       did_you_mean(part, vars_) or "define it under `vars:` or pass --var NAME=VALUE"))
                    value = ""
                    break
                value = value[part]
                first = False
            pieces.append(str(value))
        else:
            name = e.group("name")
            if name in environ:
                value = environ[name]
                if value:
                    secrets.add(value)
            elif e.group("default") is not None:
                value = e.group("default")
            elif e.group("num") is not None:
                value = e.group("num")
            else:
                value = ""
                if strict:
                    off = inner + m.group(1).index(name)
                    errors.append(("E004", f"environment variable '{name}' is not set", off,
                                   f"export {name}=... or give a default: env(\"{name}\", \"value\")"))
            pieces.append(str(value))
    pieces.append(text[pos:])
    for code, message, off, hint in errors:
        line = text.count("\n", 0, off) + 1
        col = off - (text.rfind("\n", 0, off) + 1) + 1
        report.error(code, message, Span(file, line, col), hint)
    if errors:
        return None
    return Rendered("".join(pieces), secrets)


MAX_OUTPUT = 32 * 1024 * 1024


class _TooLarge(ValueError):
    pass


def _render_bounded(template: Any, context: dict[str, Any]) -> str:
    """Render, refusing output beyond MAX_OUTPUT characters (a loop gone wild)."""
    chunks: list[str] = []
    size = 0
    for chunk in template.generate(context):
        size += len(chunk)
        if size > MAX_OUTPUT:
            raise _TooLarge(f"template output exceeds {MAX_OUTPUT // (1024 * 1024)} MB")
        chunks.append(chunk)
    return "".join(chunks)


def render(text: str, file: str, vars_: Mapping[str, Any], report: Report, *, strict: bool = True,
           environ: Mapping[str, str] | None = None) -> Rendered | None:
    """Render `text`; on problems add diagnostics to `report` and return None."""
    if not has_template(text):
        return Rendered(text)
    environ = os.environ if environ is None else environ
    fast = _fast_render(text, file, vars_, report, strict, environ)
    if fast is not _NOT_SIMPLE:
        return fast
    env_fn = _Env(environ, strict)
    jenv = _strict_env() if strict else _lenient_env()
    context: dict[str, Any] = {**vars_, "vars": dict(vars_), "env": env_fn}
    try:
        ast = jenv.parse(text)
    except TemplateSyntaxError as e:
        report.error("E002", f"template syntax error: {e.message}", Span(file, e.lineno or 1, _tag_col(text, e.lineno)),
                     "check the {{ }} and {% %} delimiters")
        return None
    if strict:
        before = len(report.errors)
        _check_names(ast, {**jenv.globals, **context}, vars_, text, file, report, environ)
        if len(report.errors) > before:
            return None
    try:
        out = _render_bounded(jenv.from_string(ast), context)
    except (UndefinedError, SecurityError) as e:
        line = _template_line(e) or _line_of(text, "{{")[0]
        report.error("E003", f"template error: {e}", Span(file, line, 1), "define it under `vars:` or pass --var")
        return None
    except TemplateSyntaxError as e:
        report.error("E002", f"template syntax error: {e.message}", Span(file, e.lineno or 1, 1))
        return None
    except (TypeError, ValueError, ArithmeticError, AttributeError, LookupError, RecursionError,
            OverflowError, MemoryError) as e:
        line = _template_line(e) or 1
        report.error("E002", f"template error: {type(e).__name__}: {e}", Span(file, line, 1))
        return None
    if text.endswith("\n") and not out.endswith("\n"):
        out += "\n"
    return Rendered(out, env_fn.used)
