"""Jinja2 templating of pipeline text, sandboxed, before YAML parsing.

`{{ vars.name }}` (or `{{ name }}`) reads the pipeline's `vars`; `{{ env("NAME", "default") }}`
reads an environment variable. Undefined names are reported at their line.
Values read from the environment are remembered so printed configs can redact them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from jinja2 import StrictUndefined, TemplateSyntaxError, Undefined, UndefinedError, nodes
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


def _lenient_env() -> SandboxedEnvironment:
    return SandboxedEnvironment(undefined=Undefined, keep_trailing_newline=True, autoescape=False)


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
            col = lines[line - 1].find(attr.attr) + 1 if line <= len(lines) else 1
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


def render(text: str, file: str, vars_: Mapping[str, Any], report: Report, *, strict: bool = True,
           environ: Mapping[str, str] | None = None) -> Rendered | None:
    """Render `text`; on problems add diagnostics to `report` and return None."""
    if not has_template(text):
        return Rendered(text)
    environ = os.environ if environ is None else environ
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
        _check_names(ast, context, vars_, text, file, report, environ)
        if len(report.errors) > before:
            return None
    try:
        out = jenv.from_string(text).render(context)
    except (UndefinedError, SecurityError) as e:
        line = _template_line(e) or _line_of(text, "{{")[0]
        report.error("E003", f"template error: {e}", Span(file, line, 1), "define it under `vars:` or pass --var")
        return None
    except TemplateSyntaxError as e:
        report.error("E002", f"template syntax error: {e.message}", Span(file, e.lineno or 1, 1))
        return None
    except (TypeError, ValueError, ArithmeticError, AttributeError, LookupError) as e:
        line = _template_line(e) or 1
        report.error("E002", f"template error: {type(e).__name__}: {e}", Span(file, line, 1))
        return None
    if text.endswith("\n") and not out.endswith("\n"):
        out += "\n"
    return Rendered(out, env_fn.used)
