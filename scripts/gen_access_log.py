#!/usr/bin/env python3
"""Generate realistic web access-log lines (Apache combined format), seeded and deterministic.

    python scripts/gen_access_log.py --lines 400 --out pipelines/data/access.log
    python scripts/gen_access_log.py --lines 1000000 --out bench/data/access.log

The same --seed gives the same file. `--malformed 0.1` interleaves garbage lines
(for dead-letter tests). Used by pipelines/data/access.log and bench/grok.py.
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta, UTC
from collections.abc import Iterator

METHODS = ["GET"] * 14 + ["POST"] * 4 + ["PUT", "DELETE", "HEAD"]
PATHS = ["/", "/index.html", "/about", "/login", "/logout", "/search?q=spark+streaming", "/api/v1/orders",
         "/api/v1/orders/{n}", "/api/v1/users/{n}", "/static/app.js", "/static/app.css", "/images/logo.png",
         "/products/{n}", "/cart", "/checkout", "/favicon.ico", "/robots.txt", "/admin", "/wp-login.php",
         "/.env", "/health"]
STATUSES = [200] * 60 + [304] * 8 + [301, 302] * 3 + [404] * 8 + [401, 403, 400] + [500] * 3 + [502, 503, 504]
AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "curl/8.5.0",
    "python-requests/2.31.0",
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
]
REFERRERS = ["-", "-", "-", "https://www.google.com/", "https://example.com/", "https://example.com/products/7"]
USERS = ["-"] * 9 + ["alice", "bob"]
GARBAGE = ["", "-", "GET / HTTP/1.1", "connection reset by peer", "\x00\x01 binary noise",
           "127.0.0.1 - - [not a date] \"GET /\" 200", "{\"json\": \"in a log file\"}", "ERROR upstream timed out"]


def lines(n: int, seed: int = 7, malformed: float = 0.0,
          start: datetime = datetime(2026, 1, 10, 12, 0, 0, tzinfo=UTC)) -> Iterator[str]:
    rnd = random.Random(seed)
    ips = [f"{rnd.randint(1, 223)}.{rnd.randint(0, 255)}.{rnd.randint(0, 255)}.{rnd.randint(1, 254)}"
           for _ in range(64)]
    t = start
    for _ in range(n):
        if malformed and rnd.random() < malformed:
            yield rnd.choice(GARBAGE)
            continue
        t += timedelta(milliseconds=rnd.randint(50, 2500))
        path = rnd.choice(PATHS).replace("{n}", str(rnd.randint(1, 999)))
        status = rnd.choice(STATUSES)
        size = "-" if status in (304, 204) or rnd.random() < 0.02 else str(rnd.randint(120, 48000))
        yield (f'{rnd.choice(ips)} - {rnd.choice(USERS)} [{t.strftime("%d/%b/%Y:%H:%M:%S +0000")}] '
               f'"{rnd.choice(METHODS)} {path} HTTP/1.1" {status} {size} '
               f'"{rnd.choice(REFERRERS)}" "{rnd.choice(AGENTS)}"')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=400)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--malformed", type=float, default=0.0, help="fraction of garbage lines")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.out, "w", encoding="utf-8", newline="\n") as fh:
        for line in lines(args.lines, args.seed, args.malformed):
            fh.write(line + "\n")


if __name__ == "__main__":
    main()
