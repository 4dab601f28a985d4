"""What the graph and `etl explain` ask of the dissect transform (as etl.spec.transform_hooks for the others)."""

from __future__ import annotations

from typing import Any

Cols = dict[str, str]


class DissectHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        from etl.dissect import DissectError, field_path, outputs, parse_mappings

        cols = cx.first(inputs)
        try:
            mappings = parse_mappings(dict(self.mapping))
        except DissectError as e:
            self._report(cx, node, e)
            return None
        earlier: set[str] = set()
        for source, d in mappings:  # a column of the input, or a field an earlier mapping sets
            top = field_path(source)[0]
            if top not in earlier and cx.need(cols, top, cx.key_span(node, "mapping", source),
                                              cx.where(node, "mapping")) is None:
                return None
            earlier |= {f.path[0] for f in d.fields if f.kind in ("normal", "append")}
        try:
            out = outputs(mappings, cols, dict(self.convert_datatype), self.indirect_field)
        except DissectError as e:
            self._report(cx, node, e)
            return None
        for name in out:
            cx.internal(node, name, self._field_span(cx, node, name))
        for name in out:  # as etl.components.transforms.dissect.build: a set field leaves its place in the input's columns
            cols.pop(name, None)  # and comes with the dissection's, in their order
        cols.update(out)
        for k, name in enumerate(self.remove_field):
            if cx.need(cols, name, cx.span(node, "remove_field", k), cx.where(node, "remove_field")) is not None:
                cols.pop(name, None)
        return cols

    def _report(self: Any, cx: Any, node: Any, e: Any) -> None:
        if e.source is not None and e.offset is not None:
            span = cx.inner(node, ("mapping", e.source), self.mapping[e.source], e.offset)
        elif e.source is not None:
            span = cx.key_span(node, "mapping", e.source)
        elif e.key == "indirect_field":
            span = cx.span(node, "indirect_field")
        elif e.key is not None:
            span = cx.key_span(node, "convert_datatype", e.key)
        else:
            span = cx.span(node, "mapping")
        cx.report.error("E305", f"dissect '{node.id}': {e.message}", span,
                        e.hint or "dissect patterns are Logstash's: %{field} between delimiters, %{?skip}, "
                        "%{+append/n}, %{&indirect}, %{field->}")

    def _field_span(self: Any, cx: Any, node: Any, name: str) -> Any:
        """Where field `name` is written in a mapping's pattern."""
        for source, pattern in self.mapping.items():
            for mark in ("%{" + name, "%{+" + name, "%{[" + name + "]"):
                if mark in pattern:
                    return cx.inner(node, ("mapping", source), pattern, pattern.index(mark))
        return cx.span(node, "mapping")

    def explain_lines(self: Any) -> list[str]:
        lines = [f"{source} => {pattern}" for source, pattern in self.mapping.items()]
        opts = []
        if self.convert_datatype:
            opts.append("convert_datatype: " + ", ".join(f"{k} {v}" for k, v in self.convert_datatype.items()))
        if self.append_separator is not None:
            opts.append(f"append_separator: {self.append_separator!r}")
        if self.remove_field:
            opts.append("remove_field: " + ", ".join(self.remove_field))
        return lines + opts + [f"on error: {self.on_error}"]
