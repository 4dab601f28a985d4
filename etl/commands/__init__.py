"""One module per CLI command; each registers itself on `etl.commands.app.app` (etl.cli imports them all)."""

from __future__ import annotations

from typing import Any

import typer

from etl.secrets import install_log_redaction, redact as _redact

ALLOW_PATH_HELP = ("folder besides the pipeline's whose files it may read: rule_files, Sigma paths, function modules, "
                   "lookup tables (repeatable)")


def _install_log_redaction() -> None:
    install_log_redaction()  # log records of every command pass etl.secrets.redact


_install_log_redaction()


def redact(text: str) -> str:
    """Every CLI output passes here: values read from the environment become ***."""
    return _redact(text)


def parse_vars(items: list[str] | None) -> dict[str, Any]:
    """--var NAME=VALUE pairs; values are YAML scalars (numbers, booleans) or strings."""
    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--var")
        out[name] = _scalar(value)
    return out


def _scalar(text: str) -> Any:
    """A --var value as YAML would read it unquoted: 3 -> int, 1.5 -> float, true -> bool, else text."""
    from etl.load.yamlmap import resolve_tag, scalar_value

    kind = resolve_tag(text, True, None)
    return text if kind in ("null", "merge") else scalar_value(kind, text)
