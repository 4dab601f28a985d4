"""The window engines: tumbling, sliding and session aggregates over event or processing time.

`native` is Spark's own streaming aggregation (results once per window, late events dropped);
`state` is the transformWithState engine (early results, late events to dead letters), whose
processor, state and timers are in `processor`. The physical planner picks one per window.
"""
