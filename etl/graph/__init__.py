"""DAG build and checks: references, cycles, columns, resources, event time, delivery inputs.

Independent of YAML: `build_graph(pipeline, smap, report, base_dir)` takes
spec objects (etl.spec models) and an optional source map, so a SQL
front-end produces the same Graph by constructing the same specs (see the
docstring of etl.graph.model for the mapping) and gets every check, the plan,
`etl explain` and the runtime unchanged.
"""

from etl.graph.build import build_graph
from etl.graph.model import Columns, Edge, Graph, Node

__all__ = ["Columns", "Edge", "Graph", "Node", "build_graph"]
