"""The select transform's column propagation (each field named once, its type guessed)."""

from __future__ import annotations

from typing import Any

from etl.spec.transform_hooks import Cols


def _one_of_its_name(cx: Any, node: Any, out: Cols, name: str, i: int) -> None:
    """E104 for a select's second column of a name (case-insensitively, as Spark resolves names): Spark keeps both,
    a later reference to either is ambiguous (AMBIGUOUS_REFERENCE) and a file sink refuses them."""
    prior = next((k for k in out if k.lower() == name.lower()), None)
    if prior is not None:
        cx.report.error("E104", f"select '{node.id}' gives two columns named {prior!r} and {name!r} (Spark resolves "
                        "names case-insensitively: a reference to either is ambiguous)", cx.span(node, "fields", i),
                        f"name one otherwise: ... AS {name}_2")


class SelectHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        cols = cx.first(inputs)
        out: Cols | None = {}
        for i, text in enumerate(self.fields or []):
            p = cx.expr(node, ("fields", i), text, cols, cx.where(node, f"fields[{i}]"))
            if out is None or p is None:
                out = None if p is None else out
                continue
            if p.names:  # a generator: inline(rows) AS (a, b)
                for n, t in zip(p.names, cx.generated_types(p, cols), strict=True):
                    cx.internal(node, n, cx.span(node, "fields", i))
                    out[n] = t
            elif p.star:
                out = None if cols is None else {**out, **cols}
            elif p.bare:
                src = cx.find(cols, p.name) if cols is not None else None
                _one_of_its_name(cx, node, out, src or p.name, i)
                out[src or p.name] = cols[src] if src else "unknown"
            else:
                cx.internal(node, p.name, cx.span(node, "fields", i))
                _one_of_its_name(cx, node, out, p.name or text.strip(), i)
                out[p.name or text.strip()] = cx.guess_type(text, cols)
        if self.fields is None:
            out = None if cols is None else dict(cols)
        for old, new in self.rename.items():
            cx.internal(node, new, cx.span(node, "rename", old))
            found = cx.need(out, old, cx.key_span(node, "rename", old), cx.where(node, "rename"))
            if found is not None and out is not None:
                out = {(new if k == found else k): v for k, v in out.items()}
        for i, name in enumerate(self.drop):
            found = cx.need(out, name, cx.span(node, "drop", i), cx.where(node, "drop"))
            if found is not None and out is not None:
                out.pop(found, None)
        return out

    def explain_lines(self: Any) -> list[str]:
        out = []
        if self.fields is not None:
            out.append("fields: " + ", ".join(self.fields))
        if self.rename:
            out.append("rename: " + ", ".join(f"{a} -> {b}" for a, b in self.rename.items()))
        if self.drop:
            out.append("drop: " + ", ".join(self.drop))
        return out
