"""The grok transform's column propagation and checks (patterns compiled, captures typed)."""

from __future__ import annotations

from typing import Any

from etl.spec.transform_hooks import Cols


class GrokHooks:
    def output_columns(self: Any, cx: Any, node: Any, inputs: list) -> Cols | None:
        from etl.grok import GrokError, columns_of, expand

        cols = cx.first(inputs)
        found = cx.need(cols, self.field, cx.span(node, "field"), cx.where(node, "field"))
        try:
            g = expand(self.regex_source(), self.custom_patterns or None, self.patterns, self.named_captures_only)
            stay = {k: v for k, v in (cols or {}).items() if self.keep_original or k != found}
            leaves = g.outputs({} if self.target else stay, tuple(self.overwrite))
            out = columns_of(leaves)
            if self.target is not None and not out:
                raise GrokError("grok: the pattern captures no field to put into the target", hint=(
                    "name a capture: %{IP:client}; to test whether a line matches, use REGEXP / rlike"))
        except GrokError as e:
            hint = e.hint
            if e.suggestions:
                hint = "did you mean " + " or ".join(f"'{s}'" for s in e.suggestions) + "?"
            msg = e.message.removeprefix("grok: ").split(" (did you mean")[0]
            span = cx.span(node, "pattern")
            for keys, text in self._pattern_texts():
                if e.name and cx.smap is not None and f"%{{{e.name}" in text:
                    span = cx.inner(node, keys, text, text.index(f"%{{{e.name}") + 2)
                    break
            if hint is None:
                hint = ("pattern names are those of Logstash (e.g. IP, NUMBER, COMBINEDAPACHELOG) or your "
                        "custom_patterns" if e.name else "custom_patterns values are regular expressions")
            cx.report.error("E302", f"grok pattern of '{node.id}': {msg}", span, hint)
            return None
        if self.target is not None:
            return self._target_columns(cx, node, cols, found, leaves)
        for name in out:
            cx.internal(node, name, self._capture_span(cx, node, name))
        for leaf in leaves:
            if leaf.mode == "replace":
                cx.report.warning("W304", f"grok '{node.id}': capture '{leaf.path[0]}' replaces the input's "
                                  f"{stay[leaf.path[0]]} column of that name (Logstash would keep the column and "
                                  f"drop the capture)", self._capture_span(cx, node, leaf.path[0]),
                                  "capture into another name, or list it in `overwrite` to say you mean it")
        if cols is None:
            return None
        if not self.keep_original and found is not None:
            cols.pop(found, None)
        for name in out:  # as etl.components.transforms.grok.build: a captured name leaves its place in the
            cols.pop(name, None)  # input's columns and comes with the captures, in their order
        cols.update(out)
        return cols

    def _target_columns(self: Any, cx: Any, node: Any, cols: Cols | None, found: str | None,
                        leaves: tuple) -> Cols | None:
        """`target`: the captures are the fields of one new struct column (etl.grok.columns_of's types)."""
        cx.internal(node, self.target, cx.span(node, "target"))
        if cols is None:
            return None
        if cx.find(cols, self.target) is not None:
            cx.report.error("E102", f"grok '{node.id}': target '{self.target}' is a column of its input",
                            cx.span(node, "target"), "name a new column: the captures go into a new struct")
            return None
        if not self.keep_original and found is not None:
            cols.pop(found, None)
        from etl.grok import columns_of, under

        cols[self.target] = columns_of(under(leaves, self.target))[self.target]
        return cols

    def regex_source(self: Any) -> str:
        """The one grok pattern of the transform (its several patterns combined: etl.grok.combine)."""
        from etl.grok import combine

        return combine(self.pattern, self.break_on_match)

    def _pattern_texts(self: Any) -> list[tuple[tuple, str]]:
        if isinstance(self.pattern, str):
            return [(("pattern",), self.pattern)]
        return [(("pattern", k), p) for k, p in enumerate(self.pattern)]

    def _capture_span(self: Any, cx: Any, node: Any, name: str) -> Any:
        """Where grok capture `name` is written: in the pattern, else in the custom pattern defining it."""
        for keys, text in self._pattern_texts() + [(("custom_patterns", k), v)
                                                  for k, v in self.custom_patterns.items()]:
            for mark in (f":{name}}}", f":{name}:", f"<{name}>"):
                if mark in text:
                    return cx.inner(node, keys, text, text.index(mark) + 1)
        return cx.span(node, "pattern")

    def explain_lines(self: Any) -> list[str]:
        from etl.grok import library_version

        several = not isinstance(self.pattern, str)
        shown = " | ".join(self.pattern) if several else self.pattern
        return [f"{self.field} =~ {shown}" + ("" if self.keep_original else f" (drops {self.field})")
                + (f" (break_on_match: {str(self.break_on_match).lower()})" if several else ""),
                f"patterns: {self.patterns} ({library_version()})"
                + (f", overwrite: {', '.join(self.overwrite)}" if self.overwrite else "")
                + ("" if self.named_captures_only else ", named_captures_only: false")
                + (", keep_empty_captures: true" if self.keep_empty_captures else ""),
                *([f"target: {self.target} (NULL when the line does not match)"] if self.target else []),
                f"on error: {self.on_error}"]
