"""`etl schema`: write the JSON Schema of the pipeline format to schemas/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from etl.commands.app import app

SCHEMA_FILE = "pipeline.schema.json"


TEMPLATE = {"type": "string", "pattern": "\\{\\{.*\\}\\}", "description": "a {{ ... }} template rendered before validation"}


def _allow_templates(node: Any, key: str | None = None) -> Any:
    """Let editors accept `'{{ env("PORT", "3306") }}'` where a number, boolean or choice is expected.

    Component `type` tags stay strict (editors use them to pick the component's schema)."""
    if isinstance(node, list):
        return [_allow_templates(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _allow_templates(v, k) for k, v in node.items()}
    if key == "properties" or key == "$defs":
        return out
    scalar = out.get("type") in ("integer", "number", "boolean") or ("enum" in out and out.get("type") == "string")
    if scalar and key != "type":
        meta = {k: out.pop(k) for k in ("description", "default", "title") if k in out}
        return {**meta, "anyOf": [out, TEMPLATE]}
    return out


def _shorthands(schema: dict) -> dict:
    """Teach the schema the shorthands the loader accepts: `input: x`, `checkpoint: path`,
    and a `dead_letter` sink without an `id`."""
    import copy

    defs = schema.get("$defs", {})
    for d in list(defs.values()):
        props = d.get("properties", {})
        if "inputs" in props and "input" not in props:
            props["input"] = {"description": "shorthand for `inputs: [id]`",
                              "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
            inputs = props["inputs"]
            meta = {k: inputs.pop(k) for k in ("description", "default", "title") if k in inputs}
            props["inputs"] = {**meta, "anyOf": [{"type": "string"}, inputs]}
    props = schema.get("properties", {})
    if "checkpoint" in props:
        cp = props["checkpoint"]
        meta = {k: cp.pop(k) for k in ("description", "default", "title") if k in cp}
        props["checkpoint"] = {**meta, "anyOf": [{"type": "string", "description": "checkpoint folder"}, cp]}
    dl = props.get("dead_letter")
    if isinstance(dl, dict):
        for alt in dl.get("anyOf", []):
            if "oneOf" not in alt:
                continue
            for ref in alt["oneOf"]:
                name = ref["$ref"].rsplit("/", 1)[-1]
                new = f"DeadLetter{name}"
                if new not in defs:
                    d = copy.deepcopy(defs[name])
                    d["required"] = [r for r in d.get("required", []) if r != "id"]
                    d["title"] = f"Dead letter {d.get('title', name)}"
                    defs[new] = d
                ref["$ref"] = f"#/$defs/{new}"
            mapping = alt.get("discriminator", {}).get("mapping", {})
            for k, v in mapping.items():
                mapping[k] = v.replace("/$defs/", "/$defs/DeadLetter")
    schema["$defs"] = dict(sorted(defs.items()))
    return schema


def schema_text() -> str:
    from etl.spec.pipeline import Pipeline

    schema = Pipeline.model_json_schema(by_alias=True, mode="validation")
    schema = _allow_templates(_shorthands(schema))
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "etl pipeline"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


@app.command()
def schema(out_dir: str = typer.Option("schemas", "--out", help="folder to write pipeline.schema.json into"),
           check: bool = typer.Option(False, "--check", help="exit 1 if the file on disk is stale")) -> None:
    """Write the JSON Schema of the pipeline format (for editors and CI)."""
    path = Path(out_dir) / SCHEMA_FILE
    text = schema_text()
    if check:
        current = path.read_text() if path.exists() else ""
        if current != text:
            typer.echo(f"{path} is stale: run `etl schema`", err=True)
            raise typer.Exit(1)
        typer.echo(f"{path} is up to date")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    typer.echo(f"wrote {path}")
