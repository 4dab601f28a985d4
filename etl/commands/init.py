"""`etl init`: write a starter pipeline (etl/templates/<template>/) with sample data and its tests."""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

import typer

from etl.commands.app import app

TEMPLATES = ("filter", "grok", "window", "sigma", "sql")


def template_files(template: str) -> dict[str, bytes]:
    """The template's files by their path in the new folder (`data/orders.jsonl`), sorted."""
    out: dict[str, bytes] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif not child.name.endswith((".pyc", ".py")):
                out[prefix + child.name] = child.read_bytes()

    walk(files("etl.templates").joinpath(template), "")
    return dict(sorted(out.items()))


@app.command()
def init(
    folder: str = typer.Argument(".", help="where to write it (made when missing)"),
    template: str = typer.Option("filter", "--template", "-t", help=f"one of {', '.join(TEMPLATES)}"),
) -> None:
    """Write a runnable starter pipeline with small sample data and its tests (`etl test` passes on it); an
    existing file is never overwritten."""
    if template not in TEMPLATES:
        raise typer.BadParameter(f"expected one of {', '.join(TEMPLATES)}, got {template!r}", param_hint="--template")
    root = Path(folder)
    wanted = template_files(template)
    taken = [rel for rel in wanted if (root / rel).exists()]
    if taken:
        typer.echo(f"etl init: {root / taken[0]} exists" + (f" (and {len(taken) - 1} more of the template's files)"
                   if len(taken) > 1 else "") + ": nothing written (choose another FOLDER, or move them)", err=True)
        raise typer.Exit(1)
    for rel, data in wanted.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "xb") as fh:  # exclusive: a file made meanwhile is not overwritten either
            fh.write(data)
    main = root / ("pipeline.sql" if template == "sql" else "pipeline.yaml")
    typer.echo(f"wrote {len(wanted)} file{'s' if len(wanted) != 1 else ''} into {root}: the {template} pipeline {main}\n"
               f"next: etl validate {main}   etl test {main}   etl run {main} --once")
