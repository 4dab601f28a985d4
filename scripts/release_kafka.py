"""The release check's Kafka step (scripts/release_check.sh): an installed `etl` runs kafka -> filter -> file.

Starts the test broker (tests/servers/kafka.py: KRaft on 127.0.0.1, free ports), writes 6 JSON orders to a
topic, writes a pipeline (kafka source -> filter -> jsonl files), runs `ETL run pipeline.yaml --once` in the
environment this script gets (the release check's: the fresh venv, a PATH without javac), and checks the files
hold exactly the 3 orders the filter keeps. Stops the broker whatever happens. Exit 0 when all holds.

    python scripts/release_kafka.py --etl /tmp/x/venv/bin/etl --workdir /tmp/x/kafka
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ORDERS = [
    {"order_id": "a", "customer": "acme", "amount": 900.0, "status": "paid"},
    {"order_id": "b", "customer": "stark", "amount": 510.5, "status": "paid"},
    {"order_id": "c", "customer": "hooli", "amount": 20.0, "status": "paid"},
    {"order_id": "d", "customer": "stark", "amount": 700.0, "status": "refunded"},
    {"order_id": "e", "customer": "umbrella", "amount": 500.0, "status": "paid"},
    {"order_id": "f", "customer": "initech", "amount": 499.99, "status": "paid"},
]
KEPT = [o for o in ORDERS if o["status"] == "paid" and o["amount"] >= 500]  # the pipeline's filter, in Python

PIPELINE = """\
name: release-kafka-filter-file
description: kafka (json) -> filter -> jsonl files
sources:
  - id: orders
    type: kafka
    bootstrap_servers: "{bootstrap}"
    topics: [orders]
    format: json
    schema: {{order_id: string, customer: string, amount: double, status: string}}
transforms:
  - id: big_paid
    type: filter
    input: orders
    expr: "status = 'paid' AND amount >= 500"
sinks:
  - id: out
    type: file
    input: big_paid
    path: out/orders
checkpoint: checkpoint
"""


def produce(bootstrap: str) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for o in ORDERS:
        p.produce("orders", json.dumps(o).encode())
    if p.flush(30) != 0:
        raise SystemExit("release check: the 6 orders were not all delivered to the broker")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--etl", required=True, help="the installed etl command")
    ap.add_argument("--workdir", required=True, type=Path)
    args = ap.parse_args()
    from tests.servers.kafka import KafkaServer

    args.workdir.mkdir(parents=True, exist_ok=True)
    broker = KafkaServer(args.workdir / "broker")
    t0 = time.monotonic()
    broker.start()
    try:
        print(f"release check: kafka broker on {broker.bootstrap_servers} ({time.monotonic() - t0:.0f} s)", flush=True)
        broker.create_topic("orders")
        produce(broker.bootstrap_servers)
        folder = args.workdir / "pipeline"
        folder.mkdir(exist_ok=True)
        (folder / "pipeline.yaml").write_text(PIPELINE.format(bootstrap=broker.bootstrap_servers))
        t1 = time.monotonic()
        run = subprocess.run([args.etl, "run", "pipeline.yaml", "--once"], cwd=folder, timeout=900)
        print(f"release check: etl run (kafka -> filter -> file): exit {run.returncode}, "
              f"{time.monotonic() - t1:.0f} s", flush=True)
        if run.returncode != 0:
            return 1
        rows = [json.loads(line) for f in sorted((folder / "out" / "orders").rglob("*.jsonl"))
                for line in f.read_text().splitlines() if line.strip()]
        got = sorted(rows, key=lambda r: r["order_id"])
        if got != KEPT:
            print(f"release check: the file sink holds {got}, expected {KEPT}", file=sys.stderr)
            return 1
        print(f"release check: kafka -> filter -> file wrote the {len(KEPT)} expected orders of {len(ORDERS)}",
              flush=True)
        return 0
    finally:
        broker.stop()


if __name__ == "__main__":
    sys.exit(main())
