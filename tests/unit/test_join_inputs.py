"""The joins of two inputs (join, temporal_join, regular_join) share one check (etl.spec.transform_hooks.JoinHooks):
exactly two inputs, named in the error as each join names them."""

import pytest

from etl.check import check_file

PIPELINE = """\
name: p
sources:
  - {{id: a, type: file, path: in, format: jsonl, schema: {{k: string, ts: timestamp}}}}
transforms:
  - {{id: j, type: {type}, inputs: {inputs}, on: [k]{extra}}}
sinks:
  - {{id: o, type: print, input: j}}
"""
EXTRA = {"join": ", within: 1m", "temporal_join": "", "regular_join": ", ttl: 1h"}


@pytest.mark.parametrize("type_,names", [("join", "[left, right]"), ("temporal_join", "[probe, versions]"),
                                         ("regular_join", "[left, right]")])
@pytest.mark.parametrize("inputs", ["[a]", "[a, a, a]"])
def test_a_join_of_other_than_two_inputs_is_one_e104_at_the_transform(tmp_path, type_, names, inputs):
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE.format(type=type_, inputs=inputs, extra=EXTRA[type_]))
    got = [d.render() for d in check_file(str(path), environ={}).report.sorted()]
    assert got[0].splitlines()[0] == (f"{path}:5:5: E104 a {type_} needs exactly two inputs: {names} "
                                      "(in transform 'j')")
