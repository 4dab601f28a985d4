"""A Python worker's rule-filter state: built once per program, then kept out of the cyclic collector."""

from __future__ import annotations

import gc

from etl.components.transforms.filter import build as flt
from etl import workercache


class Shipped:
    """Stands for the broadcast variable: counts how often its value is read."""

    def __init__(self, value):
        self._value = value
        self.reads = 0

    @property
    def value(self):
        self.reads += 1
        return self._value


def tracked(obj) -> bool:
    return any(o is obj for o in gc.get_objects())  # the generations the collector walks


def test_the_state_is_built_once_per_key_and_frozen_and_a_new_key_unfreezes_the_old_ones():
    workercache.clear_all()
    gc.unfreeze()
    try:
        bc = Shipped({"rules": [[i] for i in range(1000)]})
        state = flt._worker_state("single:a", bc, lambda v: {"program": v, "tables": [[i] for i in range(10)]})
        assert flt._worker_state("single:a", bc, lambda v: 1 / 0) is state
        assert bc.reads == 1
        assert gc.get_freeze_count() >= 1000
        assert not tracked(state) and not tracked(state["tables"][3])
        # a reload's new program: what was frozen goes back to the collector while it is built (a dropped
        # state's cycles can be reclaimed), then everything is frozen again
        seen = []

        def build(v):
            seen.append(tracked(state))
            return {"program": v}

        other = flt._worker_state("single:b", Shipped({"rules": []}), build)
        assert seen == [True]
        assert not tracked(state) and not tracked(other)
    finally:
        workercache.clear_all()
        gc.unfreeze()
