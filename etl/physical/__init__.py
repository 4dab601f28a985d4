"""Physical planning: which engine runs each node, chosen once from one settings snapshot, explained as run.

    logical plan (etl.plan) + Target (etl.physical.target.planner_settings)
        --physical_plan--> PhysicalPlan (frozen; etl.physical.model)
        --etl.compile--> PySpark (translation only)

Pure Python: no pyspark import, so `etl explain` stays JVM-free.
"""

from etl.physical.model import Choice, NodePlan, OutputPlan, PhysicalPlan, QueryPlan, Rejected, SharedPass
from etl.physical.planner import node_choices, physical_plan
from etl.physical.target import Target, planner_settings

__all__ = ["Choice", "NodePlan", "OutputPlan", "PhysicalPlan", "QueryPlan", "Rejected", "SharedPass", "Target",
           "node_choices", "physical_plan", "planner_settings"]
