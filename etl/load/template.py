"""Jinja2 templating of pipeline text, sandboxed, before YAML parsing.

`{{ vars.name }}` (or `{{ name }}`) reads the pipeline's `vars`; `{{ env("NAME", "default") }}`
reads an environment variable. Undefined names are reported at their line (jinja's own
scoping decides what is defined: loop variables, macro arguments, `caller`, `set` targets).
Plain substitutions are done here; anything else renders in etl.load.sandbox (immutable
sandbox, bounded in time and memory). Every value read from the environment is registered
with etl.secrets, which hides it in every output.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Mapping

from jinja2 import TemplateSyntaxError, UndefinedError, meta, nodes
from jinja2.sandbox import SecurityError

from etl.diagnostics import Diagnostic, Report, Span, did_you_mean
from etl import secrets as secret_registry
from etl.load.sandbox import LimitExceeded, Timeout, bounded, limits, sandbox

_MISSING = object()


@dataclass
class Rendered:
    text: str
    secrets: set[str] = field(default_factory=set)


def process_environ() -> Mapping[str, str]:
    """The source of the templates' `env()` when no mapping is given: this process's environment."""
    return os.environ


def _env_function(environ: Mapping[str, str], strict: bool, used: set[str]) -> Callable[..., Any]:
    """The `env(NAME, default)` function templates call: a plain function (no attribute of it leads
    to the environment); it records every value it returns so that outputs can redact them."""

    def env(name: str, default: Any = _MISSING) -> Any:
        if not isinstance(name, str):
            raise UndefinedError("env() takes the name of an environment variable")
        if name in environ:
            value = str(environ[name])
            if value:
                used.add(value)
            return value
        if default is not _MISSING:
            return default
        if strict:
            raise UndefinedError(f"environment variable {name!r} is not set")
        return ""

    return env


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
    undeclared = meta.find_undeclared_variables(ast) - set(known)  # jinja's own scoping: loop, macros, caller
    reported: set[str] = set()
    for name in ast.find_all(nodes.Name):
        if name.ctx == "load" and name.name in undeclared and name.name not in reported:
            reported.add(name.name)
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
_RESERVED = frozenset({"env", "true", "false", "none", "True", "False", "None", "range", "loop", "self", "caller",
                       "varargs", "kwargs", "lipsum", "cycler", "joiner", "namespace", "dict"})


def _env_value(e: re.Match, off: int, environ: Mapping[str, str], strict: bool, secrets: set[str],
               errors: list[tuple[str, str, int, str | None]]) -> str:
    """`env("NAME"[, default])`: the variable's value (registered as a secret), else the default, else '' (E004
    at `off` when strict)."""
    name = e.group("name")
    if name in environ:
        value = environ[name]
        if value:
            secrets.add(value)
        return value
    if e.group("default") is not None:
        return e.group("default")
    if e.group("num") is not None:
        return e.group("num")
    if strict:
        errors.append(("E004", f"environment variable '{name}' is not set", off,
                       f"export {name}=... or give a default: env(\"{name}\", \"value\")"))
    return ""


def _fast_render(text: str, file: str, vars_: Mapping[str, Any], report: Report, strict: bool,
                 environ: Mapping[str, str]) -> Any:
    """Render a template made only of simple `{{ }}` expressions; _NOT_SIMPLE otherwise."""
    if "{%" in text or "{#" in text or "{{" in _EXPR.sub("", text):
        return _NOT_SIMPLE  # statements, comments, or an unterminated tag: jinja handles (and reports) them
    pieces: list[str] = []
    secrets: set[str] = set()
    errors: list[tuple[str, str, int, str | None]] = []  # code, message, offset, hint
    pos = 0
    value: Any  # a mapping while a dotted name is walked, then the value
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
            pieces.append(str(_env_value(e, inner + m.group(1).index(e.group("name")), environ, strict, secrets,
                                         errors)))
    pieces.append(text[pos:])
    for code, message, off, hint in errors:
        line = text.count("\n", 0, off) + 1
        col = off - (text.rfind("\n", 0, off) + 1) + 1
        report.error(code, message, Span(file, line, col), hint)
    if errors:
        return None
    return Rendered("".join(pieces), secrets)


def _render_bounded(template: Any, context: dict[str, Any]) -> str:
    """Render, refusing output beyond the size limit (a loop gone wild)."""
    cap = limits().max_bytes
    chunks: list[str] = []
    size = 0
    for chunk in template.generate(context):
        size += len(chunk)
        if size > cap:
            raise LimitExceeded(f"the rendered text exceeds {cap // (1024 * 1024)} MB")
        chunks.append(chunk)
    return "".join(chunks)


def _first_tag(text: str, file: str) -> Span:
    """Where a render that was stopped from outside is reported: the first statement (else expression) tag."""
    for tag in ("{%", "{{"):
        off = text.find(tag)
        if off >= 0:
            return Span(file, text.count("\n", 0, off) + 1, off - (text.rfind("\n", 0, off) + 1) + 1)
    return Span(file, 1, 1)


def _run_template(jenv: Any, ast: nodes.Template, context: dict[str, Any], text: str, file: str
                  ) -> tuple[str | None, list[Diagnostic]]:
    """Compile and render (in the bounded child); errors become positioned diagnostics."""
    report = Report()

    def at(e: BaseException) -> Span:
        line = _template_line(e) or _line_of(text, "{{")[0]
        return Span(file, line, _tag_col(text, line))

    try:
        out = _render_bounded(jenv.from_string(ast), context)
    except LimitExceeded as e:
        report.error("E002", f"template limit: {e}", at(e),
                     "templates fill in values; set ETL_TEMPLATE_TIMEOUT / ETL_TEMPLATE_MAX_MB if a real one needs more")
        return None, report.diagnostics
    except UndefinedError as e:
        report.error("E003", f"template error: {e}", at(e), "define it under `vars:` or pass --var")
        return None, report.diagnostics
    except SecurityError as e:
        report.error("E002", f"template sandbox: {e}", at(e), "templates may read vars and call env(); "
                     "Python attributes and methods that change values are not available")
        return None, report.diagnostics
    except TemplateSyntaxError as e:
        report.error("E002", f"template syntax error: {e.message}", Span(file, e.lineno or 1, _tag_col(text, e.lineno)))
        return None, report.diagnostics
    except MemoryError as e:
        report.error("E002", f"template limit: rendering needs more than {limits().max_bytes // (1024 * 1024)} MB",
                     at(e), "templates fill in values; set ETL_TEMPLATE_MAX_MB if a real one needs more")
        return None, report.diagnostics
    except (TypeError, ValueError, ArithmeticError, AttributeError, LookupError, RecursionError,
            OverflowError) as e:
        report.error("E002", f"template error: {type(e).__name__}: {e}", at(e))
        return None, report.diagnostics
    if text.endswith("\n") and not out.endswith("\n"):
        out += "\n"
    return out, []


def render(text: str, file: str, vars_: Mapping[str, Any], report: Report, *, strict: bool = True,
           environ: Mapping[str, str] | None = None) -> Rendered | None:
    """Render `text`; on problems add diagnostics to `report` and return None.

    Every value read from the environment is registered with etl.secrets, also
    when rendering fails, so that no output shows it."""
    if not has_template(text):
        return Rendered(text)
    environ = process_environ() if environ is None else environ
    fast = _fast_render(text, file, vars_, report, strict, environ)
    if fast is not _NOT_SIMPLE:
        if fast is not None:
            secret_registry.register(fast.secrets)
        return fast
    used: set[str] = set()
    jenv = sandbox(strict)
    context: dict[str, Any] = {**vars_, "vars": dict(vars_), "env": _env_function(environ, strict, used)}

    def work() -> tuple[str | None, list[Diagnostic], set[str]]:
        # parsing, the name check (jinja compiles, and folds constants, to find names) and rendering
        # all run in the bounded child: a hostile template costs the parent nothing
        scratch = Report()
        try:
            ast = jenv.parse(text)
        except TemplateSyntaxError as e:
            scratch.error("E002", f"template syntax error: {e.message}",
                          Span(file, e.lineno or 1, _tag_col(text, e.lineno)), "check the {{ }} and {% %} delimiters")
            return None, scratch.diagnostics, used
        except RecursionError:
            scratch.error("E002", "template limit: expressions nested too deeply", _first_tag(text, file))
            return None, scratch.diagnostics, used
        if strict:
            # the render below reports these at their line
            with contextlib.suppress(MemoryError, RecursionError, LimitExceeded, ArithmeticError, ValueError):
                _check_names(ast, {**jenv.globals, **context}, vars_, text, file, scratch, environ)
            if scratch.errors:
                return None, scratch.diagnostics, used
        out, diags = _run_template(jenv, ast, context, text, file)
        return out, diags, used

    try:
        out, diags, read = bounded(work)
    except (Timeout, MemoryError) as e:
        report.error("E002", f"template limit: {e}", _first_tag(text, file),
                     "templates fill in values; set ETL_TEMPLATE_TIMEOUT / ETL_TEMPLATE_MAX_MB if a real one needs more")
        return None
    secret_registry.register(read)
    report.extend(diags)
    if out is None:
        return None
    return Rendered(out, set(read))
