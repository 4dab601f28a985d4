"""One module per CLI command; each registers itself on `etl.cli.app`."""

from __future__ import annotations

from typing import Any

import typer


def parse_vars(items: list[str] | None) -> dict[str, Any]:
    """--var NAME=VALUE pairs; values are YAML scalars (numbers, booleans) or strings."""
    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--var")
        out[name] = value
    return out
