"""What the generator's spec and its data source share: the start time's reading, and the `template` fields: `{field}` references to other fields of the same generator (Python's
str.format syntax: a literal brace is written twice, `{{"page": "/p{ad_id}"}}`).

Pure Python and small: the spec checks templates at validate (`template_problems`), and the generator's data
source (executors) orders its fields by them (`field_order`).
"""

from __future__ import annotations

import string
from datetime import datetime, UTC
from typing import Any


def parse_time(text: str) -> datetime:
    """The generator's `start_time` (ISO 8601; no zone: UTC); ValueError when it is none."""
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def template_refs(template: str) -> list[str]:
    """The fields a template reads, in order (ValueError for a template str.format cannot read)."""
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


def field_order(fields: dict[str, dict]) -> list[str]:
    """Fields in an order where a template comes after the fields it reads."""
    done: list[str] = []
    visiting: set[str] = set()

    def visit(n: str) -> None:
        if n in done:
            return
        if n in visiting:
            raise ValueError(f"generator templates refer to each other in a cycle at '{n}'")
        visiting.add(n)
        for r in template_refs(fields[n].get("template", "")) if "template" in fields[n] else []:
            if r not in fields:
                raise ValueError(f"template of '{n}' refers to unknown field '{r}'")
            visit(r)
        visiting.discard(n)
        done.append(n)

    for n in fields:
        visit(n)
    return done


def template_problems(fields: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(field, message, hint) for each template that the generator could not render."""
    out = []
    for name, f in fields.items():
        template = getattr(f, "template", None)
        if template is None:
            continue
        try:
            refs = template_refs(template)
        except ValueError as e:
            out.append((name, f"template of '{name}' cannot be read: {e}",
                        "write a literal brace twice: {{ and }}; {field} reads another field"))
            continue
        for r in refs:
            if r not in fields:
                out.append((name, f"template of '{name}' refers to unknown field '{r}'",
                            "a template reads the generator's other fields as {field}; write a literal brace "
                            "twice: {{ and }}"))
                break
    if not out:
        try:
            field_order({n: f.model_dump(exclude_none=True) for n, f in fields.items()})
        except ValueError as e:
            name = str(e).rsplit("'", 2)[-2]
            out.append((name, str(e), "let one of the fields be a value of its own"))
    return out
