"""How a run ends on a failure: one exception, raised by the runner and by its drain (etl.runtime.draining).

Its own module so that the drain, which the runner owns, need not import the runner back.
"""

from __future__ import annotations

from etl.runtime.failure import Failure


class RunFailed(RuntimeError):
    """The run stopped on a failure: str() is its message, `failure` the component, code and stacks."""

    def __init__(self, message: str, failure: Failure | None = None):
        super().__init__(message)
        self.failure = failure
