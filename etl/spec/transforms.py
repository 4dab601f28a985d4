"""What the core knows of a transform's Spark SQL text: a plain column reference and a generator, which cannot
throw (the physical planner and select's builder read them to know which rows may become dead letters)."""

from __future__ import annotations

import re

# a column reference, or a generator, which cannot throw (etl.compile.columns reads select fields so)
PLAIN = re.compile(r"(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)(\.(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*|\*))*|\*")
GENERATOR = re.compile(r"\b(?:explode|explode_outer|posexplode|posexplode_outer|inline|inline_outer|stack|json_tuple)"
                       r"\s*\(", re.IGNORECASE)
