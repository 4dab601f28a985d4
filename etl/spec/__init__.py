"""User-facing pipeline spec: pydantic models, one module per component family.

Importing this package registers the built-in components.
"""

from etl.spec import sinks, sources, transforms  # noqa: F401  (register built-ins)
from etl.spec import continuous, temporal, topn  # noqa: F401,E402  (after transforms: aggregate, temporal_join, top_n)
from etl.spec.pipeline import Pipeline, TestCase  # noqa: E402

__all__ = ["Pipeline", "TestCase"]
