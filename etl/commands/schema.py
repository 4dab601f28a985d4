"""`etl schema`: write the JSON Schema of the pipeline format to schemas/."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from etl.cli import app

SCHEMA_FILE = "pipeline.schema.json"


def schema_text() -> str:
    from etl.spec import Pipeline

    schema = Pipeline.model_json_schema(by_alias=True, mode="validation")
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
