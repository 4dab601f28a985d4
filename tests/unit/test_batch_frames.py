"""A micro-batch's dead-letter frame is made when the runner reads it (etl.compile.Batch.frame), once: a batch
whose sinks' pass counted no failed row never plans it (issue 42: no py4j round trip for dead letters a clean batch
does not have)."""

from __future__ import annotations

from etl.compile import DEAD_LETTER, Batch


def test_a_lazy_frame_is_made_on_first_read_and_kept():
    made: list[str] = []

    def dead_letters() -> str:
        made.append("dead")
        return "the dead-letter frame"

    batch = Batch({"out": "the sink's frame"}, [], lazy={DEAD_LETTER: dead_letters})
    assert batch.frame("out") == "the sink's frame" and made == []
    assert batch.frame(DEAD_LETTER) == "the dead-letter frame"
    assert batch.frame(DEAD_LETTER) == "the dead-letter frame"
    assert made == ["dead"] and batch.frames[DEAD_LETTER] == "the dead-letter frame"
    assert batch.frame("other") is None


def test_a_lazy_frame_with_nothing_to_compute_is_none():
    batch = Batch({}, [], lazy={DEAD_LETTER: lambda: None})
    assert batch.frame(DEAD_LETTER) is None and batch.lazy == {}
