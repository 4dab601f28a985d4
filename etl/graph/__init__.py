"""DAG build and checks: references, cycles, columns, resources, delivery guarantees."""

from etl.graph.build import build_graph
from etl.graph.model import Columns, Edge, Graph, Node

__all__ = ["Columns", "Edge", "Graph", "Node", "build_graph"]
