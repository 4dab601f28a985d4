"""Plain YAML data (dicts and lists) for the property tests' mutations: walked by paths, dumped as text."""
from __future__ import annotations

import io


def paths(node, prefix=()):
    """Every path in `node`, its own () first, parents before children."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))


def get(node, path):
    for p in path:
        node = node[p]
    return node


def put(node, path, value):
    get(node, path[:-1])[path[-1]] = value


def dump(data) -> str:
    from ruamel.yaml import YAML

    out = io.StringIO()
    y = YAML(typ="safe", pure=True)
    y.default_flow_style = False
    y.dump(data, out)
    return out.getvalue()
