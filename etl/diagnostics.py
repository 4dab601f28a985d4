"""Diagnostics: one problem found in a pipeline, with its position and a hint.

Every layer (load, spec, graph, optimize, compile) reports problems as
`Diagnostic` values collected in a `Report`; nothing raises on user input.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from enum import Enum
from collections.abc import Iterable


# Every diagnostic code, what it means. `etl validate` reports E0xx-E3xx and W codes without a JVM;
# E4xx come from compiling or running on Spark (etl run / etl test). docs/reference/errors.md is this table
# (`etl docs`).
CODES: dict[str, str] = {
    "E001": "YAML syntax error, duplicate key, too deep nesting, several documents",
    "E002": "template syntax or evaluation error, sandbox refusal, render limit (time, size)",
    "E003": "undefined template variable",
    "E004": "environment variable not set (and no default)",
    "E005": "file cannot be read (missing, not UTF-8, too large, not a regular file, outside the allowed folders)",
    "E006": "a file a pipeline names (rule file, Sigma path, function module, lookup table) does not exist or cannot be reached (symlink loop), or its glob matches no file or walks too far (past 5,000 entries or 32 folders)",
    "E010": "SQL script syntax error (statement, column definition, WITH option, query), or an expression nested "
            "deeper than etl's limit (32 levels)",
    "E011": "SQL statement or clause not supported",
    "E012": "unknown SQL function, or a Spark function called with a number of arguments it does not take",
    "W013": "SQL WITH option that has no effect in etl",
    "W014": "SQL text with a bidirectional control character (Trojan Source) or a line separator other than a line feed",
    "W015": "SQL construct whose meaning in etl differs from the peer's (the difference is named)",
    "W016": "SQL INSERT INTO a column list that leaves out columns of the table: they are NULL in every row",
    "E100": "unknown key",
    "E101": "missing required key",
    "E102": "invalid value (type, choice, duration, size, id, network)",
    "E103": "unknown component type",
    "E104": "invalid combination of keys",
    "E200": "duplicate component id",
    "E201": "unknown input, or a transform/sink without inputs",
    "E202": "cycle, or a component reading its own output",
    "E203": "wrong kind of input (a sink, a static table as a stream, a stream as a lookup table)",
    "W204": "source not used",
    "E205": "route output label missing or unknown",
    "W206": "transform output not used",
    "E207": "a `tests:` case names an unknown source or sink",
    "E300": "regular expression does not compile",
    "W301": "regex cannot run in Hyperscan: falls back to Python re (or a confirmed prefilter)",
    "E302": "grok pattern: unknown pattern name, bad field, bad regex",
    "E303": "duplicate rule id in a filter",
    "W304": "grok capture replaces an input column of another type (Logstash leaves the column and drops the capture)",
    "E305": "dissect pattern or mapping: a field Logstash refuses, fields without a delimiter between them, a "
            "field a Spark row cannot hold",
    "E310": "unknown column, or an unqualified column both sides of a SQL stream join have (ambiguous, as in Flink)",
    "E311": "Spark SQL expression does not parse, or goes past etl's limits (nesting, depth)",
    "W312": "union inputs have different columns",
    "W313": "a jsonl/csv file source without `schema` whose columns validate cannot infer (a remote path, no file "
            "yet, a compressed or unreadable file, a column name etl cannot check): the column checks after it are "
            "skipped",
    "E320": "event-time window without event time (or its column is gone)",
    "E321": "stream-stream join or dedupe without event time and watermark",
    "E322": "event-time column is not a timestamp",
    "E330": "two sinks (or the dead-letter sink) write the same output",
    "E331": "two pipelines share a checkpoint folder",
    "W332": "a cluster master is named and a source, sink, dead-letter or checkpoint path is local",
    "W340": "Sigma rule or correlation rule not supported (the reason is given), or a correlation rule no "
            "`sigma_correlation` reads: the filter runs without it",
    "W341": "Sigma rule (or correlation rule) reads a field the events do not have: it never matches (left out)",
    "W342": "changed Sigma correlation rule needs a restart of its `sigma_correlation` (an added correlation, or a "
            "new type, rules, timespan, group-by, field or percentile: a new windowed state): rejected while running, "
            "the previous correlation rules stay in force",
    "E350": "Python function's module or callable not found (or the module does not parse)",
    "E351": "Python function's signature cannot be told (no result type declared, decorated or annotated; untyped or `*args` parameters)",
    "E352": "Python function called with the wrong number of arguments, or an argument of another declared type",
    "E353": "Python function used as the wrong kind (an aggregate in an expression, a scalar or table function as the aggregate of a window or a continuous aggregate)",
    "E400": "cannot compile the pipeline for Spark (an expression Spark's analyzer rejects, a file a lookup cannot "
            "read as a table)",
    "E401": "query failed while running",
    "E402": "component has no runtime builder (it validates, `etl run` cannot run it yet)",
    "E403": "filter program cannot be built or loaded",
    "E404": "aggregate the window's state engine cannot compute (a nested or complex-typed field, with `emit.early` or `late`)",
    "E405": "file source cannot be read or needs a schema",
    "E406": "generator field cannot be generated",
    "E407": "connector cannot reach its server, or its Java classes are missing (Ivy could not fetch them, or "
            "scripts/setup-java.sh)",
    "E408": "the checkpoint was drained (`etl run --drain`, `etl drain`): a stateful pipeline needs a new checkpoint",
    "E410": "the checkpoint is in use by a running `etl run` (its pid named): one run per checkpoint",
    "E411": "disk full (ENOSPC, or a quota) where the run writes: its checkpoint, sinks or dead letters",
    "E412": "the checkpoint is damaged: an offsets, commits or metadata file, or a state changelog or snapshot, "
            "truncated or garbled",
    "E413": "the checkpoint belongs to another pipeline (`_etl_pipeline.json` in it names it)",
    "E414": "a stop (SIGTERM, Ctrl-C) cancelled the batch in flight, which did not finish within ETL_STOP_GRACE_S: "
            "it is not committed (the next run processes it again)",
    "E415": "a pipeline Spark's real-time mode cannot run (`trigger: {mode: realtime}`): a source, transform or sink "
            "it does not take, state, Python workers, dead letters it cannot write, exactly-once delivery asked",
    "E999": "internal error (a bug in etl): please report it",
}


class Severity(str, Enum):  # noqa: UP042 - StrEnum would change str() and format() of a member
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Span:
    """A position in a source file; line and col are 1-based."""

    file: str
    line: int = 1
    col: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    span: Span
    severity: Severity = Severity.ERROR
    hint: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def render(self) -> str:
        sev = "" if self.is_error else "warning "
        text = f"{self.span}: {self.code} {sev}{self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text

    def to_json(self) -> dict:
        return {
            "file": self.span.file,
            "line": self.span.line,
            "col": self.span.col,
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass
class Report:
    """Collects diagnostics from every layer; sorted by position when read."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    _seen: set = field(default_factory=set, init=False, repr=False, compare=False)

    def add(self, d: Diagnostic) -> None:
        if len(self._seen) != len(self.diagnostics):  # the list was given or changed directly
            self._seen = set(self.diagnostics)
        if d not in self._seen:
            self._seen.add(d)
            self.diagnostics.append(d)

    def error(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.add(Diagnostic(code, message, span, Severity.ERROR, hint))

    def warning(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.add(Diagnostic(code, message, span, Severity.WARNING, hint))

    def extend(self, ds: Iterable[Diagnostic]) -> None:
        for d in ds:
            self.add(d)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.sorted() if d.is_error]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.sorted() if not d.is_error]

    def has_errors(self, strict: bool = False) -> bool:
        return bool(self.errors) or (strict and bool(self.warnings))

    def sorted(self) -> list[Diagnostic]:
        return sorted(self.diagnostics, key=lambda d: (d.span, d.code, d.message))


def did_you_mean(word: str, candidates: Iterable[str], n: int = 1) -> str | None:
    """A 'did you mean ...?' hint for an unknown name, or None."""
    cands = sorted(set(c for c in candidates if isinstance(c, str)))
    close = difflib.get_close_matches(word, cands, n=n, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in cands}
        if word.lower() in lowered:
            close = [lowered[word.lower()]]
    if close:
        return "did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
    return None


def short_repr(value: object, limit: int = 60) -> str:
    """repr() of a user value for a message, cut at `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class Suggester:
    """`did_you_mean` over one large candidate list asked many times: a trigram index picks the few
    candidates worth comparing, so each question costs about the same whatever the list's length."""

    SHORTLIST = 20
    SCAN = 300  # candidates looked at through common grams, at most, per question

    def __init__(self, candidates: Iterable[str]):
        self.cands = sorted(set(c for c in candidates if isinstance(c, str)))
        self.grams: dict[str, list[int]] = {}
        for i, c in enumerate(self.cands):
            for g in self._grams(c):
                self.grams.setdefault(g, []).append(i)

    @staticmethod
    def _grams(word: str) -> set[str]:
        w = f"  {word.lower()} "
        return {w[i:i + 3] for i in range(len(w) - 2)}

    def hint(self, word: str) -> str | None:
        if len(self.cands) <= self.SHORTLIST:
            return did_you_mean(word, self.cands)
        score: dict[int, int] = {}
        common = []
        for g in self._grams(word):
            hits = self.grams.get(g, ())
            if len(hits) > 4 * self.SHORTLIST:  # a gram many names share: looked at below, bounded
                common.append(hits)
                continue
            for i in hits:
                score[i] = score.get(i, 0) + 1
        budget = self.SCAN
        for hits in sorted(common, key=len):  # rarest first; only names of about the word's length
            for i in hits[:budget]:
                if abs(len(self.cands[i]) - len(word)) <= 2:
                    score[i] = score.get(i, 0) + 1
            budget -= min(len(hits), budget)
            if budget <= 0:
                break
        best = sorted(score, key=lambda i: (-score[i], i))[:self.SHORTLIST]
        return did_you_mean(word, [self.cands[i] for i in best])

    def listing(self, limit: int = 12) -> str:
        return ", ".join(self.cands[:limit]) + (", ..." if len(self.cands) > limit else "")


def choices_hint(word: str, candidates: Iterable[str]) -> str:
    cands = sorted(set(candidates))
    hint = did_you_mean(word, cands)
    listing = ", ".join(cands[:12]) + (", ..." if len(cands) > 12 else "")
    return f"{hint} expected one of: {listing}" if hint else f"expected one of: {listing}"
