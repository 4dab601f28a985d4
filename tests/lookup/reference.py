"""A pure-Python reference lookup join."""

from __future__ import annotations


def ref_join(events: list[dict], table: list[dict], on: dict[str, str], fields: list[str], inner: bool,
             renamed: dict[str, str] | None = None) -> list[dict]:
    renamed = renamed or {f: f for f in fields}

    def text(v):
        return None if v is None else str(v)

    index: dict[tuple, list[dict]] = {}
    for row in table:
        key = tuple(text(row.get(c)) for c in on.values())
        if None not in key:
            index.setdefault(key, []).append(row)
    out = []
    for e in events:
        key = tuple(text(e.get(c)) for c in on)
        matches = index.get(key, []) if None not in key else []
        for m in matches:
            out.append({**e, **{renamed[f]: m.get(f) for f in fields}})
        if not matches and not inner:
            out.append({**e, **{renamed[f]: None for f in fields}})
    return out
