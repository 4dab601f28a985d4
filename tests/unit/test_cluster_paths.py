"""W332: `etl validate --master URL` warns about local paths when the master is a cluster's."""

from __future__ import annotations

from etl.check import check_file
from etl.graph.cluster import check_cluster_paths

PIPELINE = """\
name: w
sources:
  - {id: s, type: file, path: in, format: jsonl, schema: {a: string}}
sinks:
  - id: o
    type: file
    input: s
    path: file:///shared/out
  - {id: k, type: kafka, input: s, bootstrap_servers: "b:9092", topic: t}
"""


def _warnings(tmp_path, text, master):
    (tmp_path / "p.yaml").write_text(text)
    c = check_file(tmp_path / "p.yaml")
    assert c.graph is not None
    check_cluster_paths(c.graph, c.report, master, c.file)
    return [d.render() for d in c.report.warnings if d.code == "W332"]


def test_local_paths_on_a_cluster_warn_with_their_position(tmp_path):
    got = _warnings(tmp_path, PIPELINE, "spark://h:7077")
    f = tmp_path / "p.yaml"
    hint = ("    hint: on a cluster, use storage every machine sees: a shared mount at the same path everywhere "
            "(then ignore this warning), or a hdfs:// / s3a:// checkpoint")
    assert got == [
        f"{f}:1:1: W332 warning the checkpoint '.etl/w/checkpoint' (the default) is a local path on the cluster "
        f"spark://h:7077\n{hint}",
        f"{f}:3:31: W332 warning source 's' reads the local path 'in' on the cluster spark://h:7077\n{hint}",
        f"{f}:8:11: W332 warning sink 'o' writes the local path 'file:///shared/out' on the cluster "
        f"spark://h:7077\n{hint}",
    ]


def test_no_warning_on_a_local_master_or_for_remote_storage(tmp_path):
    assert _warnings(tmp_path, PIPELINE, "local[2]") == []
    assert _warnings(tmp_path, PIPELINE, None) == []
    remote = PIPELINE.replace("path: file:///shared/out", "path: file:///x").replace("path: in,", "path: 's3a://b/in',")
    remote += "checkpoint: hdfs://nn/ckpt\n"
    got = _warnings(tmp_path, remote, "yarn")
    assert len(got) == 1 and "sink 'o' writes the local path 'file:///x' on the cluster yarn" in got[0]
