"""Python functions of a pipeline: the `functions:` section (SQL: CREATE FUNCTION f AS 'module:callable').

    functions:
      - name: mask                  # the name expressions call it by
        callable: udfs:mask         # module:callable (a module beside the pipeline, or an installed one)
        kind: scalar                # scalar | table | aggregate (default: read from the module)
        returns: string             # Spark SQL type; a table function: its columns "word string, pos int"
        args: [string]              # argument types (default: read from the module)

What is not declared is read from the module's source without importing it
(etl.spec.signature): an `@etl.udf(...)` / `@etl.udtf(...)` / `@etl.udaf(...)`
decorator, else the callable's annotations.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from etl.spec.base import Identifier, Model

KINDS = ("scalar", "table", "aggregate")
REF = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")


class FunctionSpec(Model):
    """A Python function callable from the pipeline's expressions (scalar), selects (table) or windows
    (aggregate)."""

    name: Identifier = Field(description="the name expressions call it by")
    callable: str = Field(description="module:callable, the module beside the pipeline file or installed, e.g. "
                          "'udfs:mask'")
    kind: Literal["scalar", "table", "aggregate"] | None = Field(
        default=None, description="scalar (a value per row), table (rows per row), aggregate (a value per group); "
        "default: read from the module")
    returns: str | None = Field(
        default=None, description="Spark SQL type of the result; a table function's columns, e.g. "
        "'word string, pos int'; default: read from the module")
    args: list[str] | None = Field(default=None, description="Spark SQL types of the arguments (default: read from "
                                   "the module)")

    @field_validator("callable")
    @classmethod
    def _ref(cls, v: str) -> str:
        if not REF.match(v):
            raise ValueError(f"invalid callable {v!r}: expected 'module:callable', e.g. 'udfs:mask'")
        return v

    @property
    def module(self) -> str:
        return self.callable.split(":", 1)[0]

    @property
    def attr(self) -> str:
        return self.callable.split(":", 1)[1]
