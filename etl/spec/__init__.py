"""User-facing pipeline spec: pydantic models, one module per component family.

Importing this package registers the built-in components.
"""

from etl.spec import sinks, sources, transforms  # noqa: F401  (register built-ins)
from etl.spec import continuous, regular_join, temporal, topn  # noqa: F401,E402  (after transforms: aggregate, joins, top_n)
from etl.spec.pipeline import Pipeline, TestCase  # noqa: E402

__all__ = ["Pipeline", "TestCase"]
