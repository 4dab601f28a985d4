"""Flink's statement wrappers, read off the statement list before anything else (etl.sql.script.split):

* `EXECUTE STATEMENT SET BEGIN INSERT ...; INSERT ...; END;` and the SQL client's `BEGIN STATEMENT SET;
  INSERT ...; END;`: Flink runs the INSERTs of a set as one job; an etl script is one pipeline already, so the
  INSERTs are read as if written without the set. A set holds INSERT INTO statements only (E011 at another);
  END without a set, a set without END or a set in a set is E010.
* `EXECUTE INSERT INTO ...`: the INSERT.
* `EXPLAIN [PLAN FOR] <query or INSERT>` (Flink's other EXPLAIN details too: ESTIMATED_COST, CHANGELOG_MODE,
  JSON_EXECUTION_PLAN, PLAN_ADVICE): Flink prints the plan and runs nothing. etl reads the statement (its
  syntax, tables and functions; not the checks of the pipeline's graph, such as its columns) and leaves it out
  of the pipeline (W015 at EXPLAIN: `etl explain job.sql` prints the plan of the pipeline).
* a bare query (`SELECT ...`): Flink's SQL client shows its rows; etl writes them to the console, a print sink
  (etl.sql.pipeline).
"""

from __future__ import annotations

from dataclasses import replace

from etl.diagnostics import Report
from etl.sql.script import Script, Statement, statement_kind

_EXPLAIN_DETAILS = frozenset({"ESTIMATED_COST", "CHANGELOG_MODE", "JSON_EXECUTION_PLAN", "PLAN_ADVICE"})


def unwrap(script: Script, statements: list[Statement], report: Report) -> list[Statement]:
    out: list[Statement] = []
    opened = None  # the BEGIN of the open statement set
    for st in statements:
        words = [t.text.upper() for t in st.tokens[:4]]
        toks = st.tokens
        if words[:3] == ["BEGIN", "STATEMENT", "SET"] or words[:4] == ["EXECUTE", "STATEMENT", "SET", "BEGIN"]:
            if opened is not None:
                report.error("E010", "a statement set inside a statement set", script.at(toks[0]),
                             f"close the set opened at line {script.at(opened).line} with END; first")
                continue
            opened = toks[0]
            toks = toks[3 if words[0] == "BEGIN" else 4:]
            if not toks:
                continue
        elif words == ["END"]:
            if opened is None:
                report.error("E010", "END without a statement set", script.at(toks[0]),
                             "open one with BEGIN STATEMENT SET; or EXECUTE STATEMENT SET BEGIN")
            opened = None
            continue
        elif words[:2] == ["EXECUTE", "INSERT"]:
            toks = toks[1:]
        explain = False
        if toks and toks[0].text.upper() == "EXPLAIN":
            explain = True
            k = 1
            while k < len(toks) and (toks[k].text.upper() in _EXPLAIN_DETAILS or toks[k].token_type.name == "COMMA"):
                k += 1
            if [t.text.upper() for t in toks[k:k + 2]] == ["PLAN", "FOR"]:
                k += 2
            report.warning("W015", "EXPLAIN: Flink prints the statement's plan and runs nothing; etl reads the "
                           "statement (its syntax, tables and functions) and leaves it out of the pipeline",
                           script.at(toks[0]), "`etl explain job.sql` prints the plan of the whole pipeline")
            toks = toks[k:]
            if not toks:
                report.error("E010", "EXPLAIN needs a query or an INSERT INTO", script.at(st.tokens[0]))
                continue
        kind = statement_kind(toks)
        if kind == "other" and toks[0].text.upper() in ("SELECT", "(", "WITH"):
            kind = "select"
        if opened is not None and kind != "insert":
            report.error("E011", "a statement set holds INSERT INTO statements only", script.at(toks[0]),
                         "write the other statements before BEGIN STATEMENT SET", )
            continue
        out.append(replace(st, kind=kind, tokens=toks, explain=explain))
    if opened is not None:
        report.error("E010", "a statement set without END", script.at(opened), "close it with END;")
    return out
