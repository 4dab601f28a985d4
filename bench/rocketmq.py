#!/usr/bin/env python3
"""RocketMQ connector throughput against a real name server + broker (started here, tests/servers).

    .venv/bin/python bench/rocketmq.py                    # 20,000 messages, local[2]
    .venv/bin/python bench/rocketmq.py --messages 50000

Measured, each on fresh topics:
(client_send) the wrapper's synchronous send, one thread, ~200-byte JSON bodies;
(client_pull) the wrapper's pulls of every queue (32 messages per pull);
(source) an etl --once query: the rocketmq source (json, declared schema) -> a sink that only
    counts rows; time from query start to its end (AvailableNow), messages per second;
(sink) an etl --once query: a generator (count) -> the rocketmq sink (key expression, tag,
    dedup ids, 4 send threads); messages per second.
The last line is machine-readable:

    rocketmq messages=N client_send_s=.. client_pull_s=.. source_s=.. sink_s=..
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# this file is named like the client package: keep its folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=20_000)
    args = ap.parse_args()
    n = args.messages
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from etl.check import check_file
    from etl.connectors import rocketmq_client as rmq
    from etl.components.sources.rocketmq.build import pull_range
    from etl.runtime.runner import PipelineRun, RunOptions
    from etl.runtime.session import build_session
    from etl.runtime.sink import AbstractSink
    from tests.servers import RocketMQServer

    class Count(AbstractSink):
        idempotent = True
        rows = 0

        def batch_insert(self, rows):
            Count.rows += rows.num_rows

    def run(work: Path, text: str, factory=None) -> float:
        work.mkdir(parents=True)
        (work / "p.yaml").write_text(textwrap.dedent(text))
        c = check_file(work / "p.yaml", programs=True)
        assert c.plan is not None, "\n".join(d.render() for d in c.report.sorted())
        r = PipelineRun(c.plan, spark, RunOptions(once=True, checkpoint=str(work / "ck"), progress="none",
                                                  sink_factory=factory))
        t0 = time.perf_counter()
        r.start()
        r.wait()
        return time.perf_counter() - t0

    tmp = Path(tempfile.mkdtemp(prefix="bench-rocketmq-"))
    with RocketMQServer() as server:
        ns = server.namesrv_addr
        print(f"rocketmq ready in {server.startup_seconds:.1f}s at {ns}", flush=True)
        spark = build_session("bench-rocketmq", "local[2]", {"spark.ui.enabled": "false"}, ui=False)
        topic = f"bench_{uuid.uuid4().hex[:8]}"
        bodies = [json.dumps({"id": i, "host": f"h{i % 50}", "user": f"u{i % 7}", "cmd": "ls -la /var/log " * 8})
                  .encode() for i in range(n)]
        p = rmq.Producer(ns, "bench-producer")
        t0 = time.perf_counter()
        for b in bodies:
            p.send(topic, b)
        send_s = time.perf_counter() - t0
        print(f"client_send: {n} messages in {send_s:.2f}s = {n / send_s:,.0f} msg/s", flush=True)

        c = rmq.PullConsumer(ns, "bench-reader")
        t0 = time.perf_counter()
        got = 0
        for q in rmq.topic_queues(ns, topic) or []:
            lo, hi = c.bounds(topic, q)
            got += sum(1 for _ in pull_range(c, topic, q, lo, hi))
        pull_s = time.perf_counter() - t0
        assert got == n, got
        print(f"client_pull: {n} messages in {pull_s:.2f}s = {n / pull_s:,.0f} msg/s", flush=True)

        warm = f"bench_warm_{uuid.uuid4().hex[:6]}"
        for b in bodies[:500]:
            p.send(warm, b)
        src = """
            name: bench-src
            sources:
              - {{id: m, type: rocketmq, namesrv: "{ns}", topic: {topic},
                  schema: {{id: bigint, host: string, user: string, cmd: string}}}}
            sinks: [{{id: out, type: file, input: m, path: out}}]
        """
        run(tmp / "warm", src.format(ns=ns, topic=warm), lambda o, s, ctx: Count(s, ctx))  # JIT, workers
        Count.rows = 0
        source_s = run(tmp / "src", src.format(ns=ns, topic=topic), lambda o, s, ctx: Count(s, ctx))
        assert Count.rows == n, Count.rows
        print(f"source: {n} messages in {source_s:.2f}s = {n / source_s:,.0f} msg/s", flush=True)

        out = f"bench_out_{uuid.uuid4().hex[:8]}"
        sink_s = run(tmp / "sink", f"""
            name: bench-sink
            sources:
              - id: g
                type: generator
                count: {n}
                fields: {{id: {{sequence: 0}}, host: {{choice: [web1, web2, db1]}}, cmd: {{const: "{'ls -la ' * 20}"}}}}
            sinks:
              - {{id: out, type: rocketmq, input: g, namesrv: "{ns}", topic: {out}, tag: bench, key: host,
                  batch_size: 5000}}
        """)
        written = sum(c.bounds(out, q)[1] for q in rmq.topic_queues(ns, out))
        assert written == n, written
        print(f"sink: {n} messages in {sink_s:.2f}s = {n / sink_s:,.0f} msg/s", flush=True)
        spark.stop()
    print(f"rocketmq messages={n} client_send_s={send_s:.2f} client_pull_s={pull_s:.2f} "
          f"source_s={source_s:.2f} sink_s={sink_s:.2f}")


if __name__ == "__main__":
    main()
