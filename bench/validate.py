"""Benchmark `etl validate`: 100 varied, realistic pipeline files validated in one process.

    .venv/bin/python bench/validate.py [--files 100] [--profile]
    .venv/bin/python bench/validate.py --components 1000 10000

`--components N ...`: one generated pipeline per N and shape (N/4 each of generator sources,
derives, filters and file sinks; a chain of N/2 derives with a print sink on each; N derives
whose inputs do not exist), validated (`check_file`) and explained (`check_file(programs=True)`
and the plan text) in this process; one line per case: `components=N shape=S validate_s=X
explain_s=Y diagnostics=D`, with CPU seconds beside each (wall time varies with the machine's load).
The graph build is linear: 10x the components is about 10x the CPU time.

Generates the files (some with inline rules and rule files, templating, grok,
windows, joins, lookups; a few invalid ones) into a temporary folder, then
times `etl.check.check_paths` over the folder, the same call `etl validate`
makes. wall_s counts everything after interpreter start-up: importing etl and
its dependencies (pydantic models, sqlglot, the optimizer's regex analysis
on first use) and validating. A breakdown goes to stderr. Last line:
`validate files=N wall_s=X`.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

SERVICES = ["api", "web", "auth", "billing", "search", "checkout", "catalog", "gateway"]
REGEXES = [
    r"curl\s.*\|\s*(ba)?sh", r"wget\s+-q?O-", r"base64\s+(-d|--decode)", r"nc\s+-e\s+/bin/(ba)?sh",
    r"chmod\s+\+?[0-7]*s", r"/etc/(passwd|shadow)", r"python\d?\s+-c\s+.*socket", r"(?i)union\s+select",
    r"\.\./\.\./", r"<script[^>]*>", r"sqlmap|nikto|nmap", r"select\s.+\sfrom\s", r"rm\s+-rf\s+/",
    r"ssh-rsa\s+[A-Za-z0-9+/=]{20,}", r"[0-9]{1,3}(\.[0-9]{1,3}){3}:\d{2,5}", r"admin(istrator)?\.php",
]


def _rules(rng: random.Random, n: int, prefix: str, indent: str) -> str:
    out = []
    for i in range(n):
        kind = rng.randrange(4)
        rid = f"{prefix}-{i}"
        if kind == 0:
            when = f"{{field: cmd, regex: '{rng.choice(REGEXES)}', caseless: {str(rng.random() < .5).lower()}}}"
        elif kind == 1:
            when = (f"{{all: [{{field: cmd, contains: 'tok{i}'}}, "
                    f"{{not: {{field: user, in: [ci, build]}}}}]}}")
        elif kind == 2:
            when = f"{{any: [{{field: host, starts_with: 'db-{i}'}}, {{field: cmd, like: '%x{i}%'}}]}}"
        else:
            when = f"{{all: [{{field: status, ge: {400 + i % 100}}}, {{field: src_ip, cidr: 10.{i % 250}.0.0/16}}]}}"
        out.append(f"{indent}- id: {rid}\n{indent}  severity: {rng.choice(['low', 'medium', 'high'])}\n"
                   f"{indent}  when: {when}\n")
    return "".join(out)


def _filter_pipeline(rng: random.Random, i: int, rules_dir: str) -> str:
    return f"""# yaml-language-server: $schema=../schemas/pipeline.schema.json
name: audit-{i}
vars:
  topic: commands-{i}
sources:
  - id: commands
    type: kafka
    bootstrap_servers: '{{{{ env("KAFKA_BOOTSTRAP", "127.0.0.1:9092") }}}}'
    topics: ["{{{{ vars.topic }}}}"]
    schema: {{ts: timestamp, host: string, user: string, cmd: string, status: int, src_ip: string}}
    event_time: {{field: ts, watermark: 1m}}
transforms:
  - id: suspicious
    type: filter
    input: commands
    mode: tag
    rules:
{_rules(rng, rng.randint(3, 12), f"inline{i}", "      ")}    rule_files: ["{rules_dir}/*.yaml"]
  - id: hits
    type: filter
    input: suspicious
    expr: "size(matched_rules) > 0 AND host NOT LIKE 'test-%'"
sinks:
  - id: alerts
    type: kafka
    input: hits
    bootstrap_servers: '{{{{ env("KAFKA_BOOTSTRAP", "127.0.0.1:9092") }}}}'
    topic: alerts-{i}
    key: host
"""


def _window_pipeline(rng: random.Random, i: int) -> str:
    svc = rng.sample(SERVICES, 3)
    return f"""name: stats-{i}
sources:
  - id: requests
    type: kafka
    bootstrap_servers: 127.0.0.1:9092
    topics: [requests-{i}]
    schema: {{ts: timestamp, service: string, endpoint: string, status: int, latency_ms: double, user: string}}
    event_time: {{field: ts, watermark: {rng.choice(['10s', '30s', '1m'])}}}
transforms:
  - id: mine
    type: filter
    input: requests
    expr: "service IN ('{svc[0]}', '{svc[1]}', '{svc[2]}') AND status < 500"
  - id: typed
    type: derive
    input: mine
    columns:
      slow: "latency_ms > {rng.randint(100, 900)}"
      route: "lower(endpoint)"
  - id: per_minute
    type: window
    input: typed
    kind: {rng.choice(['tumbling', 'sliding'])}
    size: 5m
    slide: 1m
    group_by: [service, route]
    aggregates:
      - {{fn: count, as: requests}}
      - {{fn: avg, field: latency_ms, as: avg_ms}}
      - {{fn: approx_count_distinct, field: user, as: users}}
    having: "requests > {rng.randint(0, 10)}"
sinks:
  - id: db
    type: mysql
    input: per_minute
    database: metrics
    user: etl
    password: '{{{{ env("MYSQL_PASSWORD", "etl") }}}}'
    table: stats_{i}
    mode: upsert
    key: [service, route, window_start]
"""


def _grok_pipeline(rng: random.Random, i: int) -> str:
    return f"""name: access-{i}
sources:
  - id: access
    type: file
    path: data/access-{i}
    format: text
  - id: geo
    type: file
    path: data/geo.csv
    format: csv
    static: true
    schema: {{ip: string, country: string, city: string}}
transforms:
  - id: parsed
    type: grok
    input: access
    field: line
    pattern: '%{{COMBINEDAPACHELOG}}{rng.choice(['', ' %{NUMBER:rt:float}'])}'
  - id: typed
    type: derive
    input: parsed
    columns: {{status: "cast(response AS int)", size: "cast(bytes AS bigint)"}}
  - id: located
    type: lookup
    input: typed
    table: geo
    on: {{clientip: ip}}
    fields: [country]
  - id: split
    type: route
    input: located
    routes: {{errors: "status >= 500", client: "status >= 400 AND status < 500"}}
    default: ok
sinks:
  - {{id: errors, type: elasticsearch, input: split.errors, hosts: ["http://127.0.0.1:9200"], index: errors-{i}}}
  - {{id: client, type: file, input: split.client, path: out/{i}/client}}
  - {{id: ok, type: print, input: split.ok}}
"""


def _join_pipeline(rng: random.Random, i: int) -> str:
    return f"""name: join-{i}
sources:
  - id: clicks
    type: generator
    fields: {{ts: {{timestamp: event}}, ad: {{int_range: [1, 50]}}, user: {{int_range: [1, 1000]}}}}
    rate: 100
    event_time: {{field: ts, watermark: 10s}}
  - id: views
    type: rocketmq
    namesrv: 127.0.0.1:9876
    topic: views-{i}
    schema: {{ts: timestamp, ad: bigint, user: bigint, payload: string}}
    event_time: {{field: ts, watermark: 10s}}
transforms:
  - id: parsed
    type: parse
    input: views
    field: payload
    format: {rng.choice(['json', 'kv'])}
    schema: {{page: string, ms: int}}
  - id: matched
    type: join
    inputs: [clicks, parsed]
    on: [ad, user]
    within: 10m
  - id: unique
    type: dedupe
    input: matched
    keys: [ad, user]
sinks:
  - {{id: out, type: rocketmq, input: unique, namesrv: 127.0.0.1:9876, topic: matched-{i}}}
"""


def _invalid_pipeline(rng: random.Random, i: int) -> str:
    text = _window_pipeline(rng, i)
    return text.replace("latency_ms, as: avg_ms", "latncy_ms, as: avg_ms").replace("type: mysql", "type: mysq")


def generate(folder: Path, n: int, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    rules_dir = folder / "rules"
    rules_dir.mkdir(parents=True, exist_ok=True)
    for k in range(3):
        (rules_dir / f"set{k}.yaml").write_text("rules:\n" + _rules(rng, 40, f"file{k}", "  "))
    makers = [lambda i: _filter_pipeline(rng, i, "rules"), lambda i: _window_pipeline(rng, i),
              lambda i: _grok_pipeline(rng, i), lambda i: _join_pipeline(rng, i)]
    paths = []
    for i in range(n):
        text = _invalid_pipeline(rng, i) if i % 10 == 9 else makers[i % 4](i)
        p = folder / f"p{i:03d}.yaml"
        p.write_text(text)
        paths.append(p)
    return paths


def _time_hyperscan_rejects() -> list[float]:
    """Accumulate the time spent in the optimizer's regex analysis (W301), to show it apart."""
    import etl.optimize

    spent = [0.0]
    real = etl.optimize.hyperscan_rejects

    def timed(pattern: str, caseless: bool):
        t = time.perf_counter()
        try:
            return real(pattern, caseless)
        finally:
            spent[0] += time.perf_counter() - t

    etl.optimize.hyperscan_rejects = timed
    return spent


_GEN = "{{id: s{i}, type: generator, fields: {{ts: {{timestamp: event}}, n: {{int_range: [1, 5]}}}}, " \
       "event_time: {{field: ts, watermark: 30s}}}}"


def big_pipeline(n: int, shape: str) -> str:
    """A generated pipeline of about `n` components (see --components)."""
    lines = [f"name: big-{shape}", "sources:"]
    if shape == "wide":
        k = n // 4
        lines += [f"  - {_GEN.format(i=i)}" for i in range(k)] + ["transforms:"]
        for i in range(k):
            lines += [f"  - {{id: d{i}, type: derive, input: s{i}, columns: {{m: 'n + 1'}}}}",
                      f"  - {{id: f{i}, type: filter, input: d{i}, expr: 'm > 2'}}"]
        lines += ["sinks:"] + [f"  - {{id: o{i}, type: file, input: f{i}, path: out/o{i}}}" for i in range(k)]
    elif shape == "chain":
        k = n // 2
        lines += [f"  - {_GEN.format(i=0)}", "transforms:"]
        lines += [f"  - {{id: d{i}, type: derive, input: {f'd{i - 1}' if i else 's0'}, columns: {{m{i % 7}: 'n'}}}}"
                  for i in range(k)]
        lines += ["sinks:"] + [f"  - {{id: o{i}, type: print, input: d{i}}}" for i in range(k)]
    else:  # unknown inputs
        lines += [f"  - {_GEN.format(i=0)}", "transforms:"]
        lines += [f"  - {{id: d{i}, type: derive, input: x{i}, columns: {{m: 'n'}}}}" for i in range(n)]
        lines += ["sinks:", "  - {id: o, type: print, input: s0}"]
    return "\n".join(lines) + "\n"


def components(sizes: list[int]) -> None:
    from etl.check import check_file
    from etl.plan.explain import explain_plan

    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.yaml"
        warm.write_text(big_pipeline(8, "wide"))
        check_file(warm, environ={}, programs=True)  # imports and first-use caches are not the graph's cost
        for n in sizes:
            for shape in ("wide", "chain", "unknown"):
                path = Path(tmp) / f"{shape}{n}.yaml"
                path.write_text(big_pipeline(n, shape))
                t0, c0 = time.perf_counter(), time.process_time()
                checked = check_file(path, environ={})
                t1, c1 = time.perf_counter(), time.process_time()
                explained = check_file(path, environ={}, programs=True)
                if explained.plan is not None:
                    explain_plan(explained.plan)
                t2, c2 = time.perf_counter(), time.process_time()
                print(f"components={n} shape={shape} validate_s={t1 - t0:.2f} (cpu {c1 - c0:.2f}) "
                      f"explain_s={t2 - t1:.2f} (cpu {c2 - c1:.2f}) diagnostics={len(checked.report.diagnostics)}",
                      flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--components", type=int, nargs="+", help="time generated pipelines of these many components")
    args = ap.parse_args()
    if args.components:
        components(args.components)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        generate(folder, args.files)
        t_import, c_import = time.perf_counter(), time.process_time()
        from etl.check import check_paths
        import etl.spec  # noqa: F401  (pydantic models: built once per process)

        t_import, c_import = time.perf_counter() - t_import, time.process_time() - c_import
        spent = _time_hyperscan_rejects()
        if args.profile:
            import cProfile
            import pstats

            cProfile.runctx("check_paths([folder], environ={})", globals(), {"folder": folder, "check_paths": check_paths},
                            "/tmp/validate.prof")
            pstats.Stats("/tmp/validate.prof").sort_stats("cumulative").print_stats(30)
            return
        t0, c0 = time.perf_counter(), time.process_time()
        results = check_paths([folder], environ={})
        validate_s, validate_cpu = time.perf_counter() - t0, time.process_time() - c0
        rejects_s = spent[0]
        t1 = time.perf_counter()
        check_paths([folder], environ={})
        warm_s = time.perf_counter() - t1
    wall = t_import + validate_s
    valid = sum(1 for r in results if r.ok)
    diags = sum(len(r.report.diagnostics) for r in results)
    internal = sum(1 for r in results for d in r.report.diagnostics if d.code == "E999")
    print(f"valid={valid} invalid={len(results) - valid} diagnostics={diags} internal_errors={internal}", file=sys.stderr)
    print(f"cpu_s={c_import + validate_cpu:.3f} (wall and cpu differ when the machine is busy)", file=sys.stderr)
    print(f"import_s={t_import:.3f} (cpu {c_import:.3f}) first_validate_s={validate_s:.3f} (cpu {validate_cpu:.3f}) "
          f"warm_validate_s={warm_s:.3f}; first run spent {rejects_s:.3f}s in etl.optimize.hyperscan_rejects", file=sys.stderr)
    print(f"validate files={len(results)} wall_s={wall:.3f}")


if __name__ == "__main__":
    main()
