"""`etl docs`: write the generated reference pages (docs/reference/, etl.commands.reference) or check them."""

from __future__ import annotations

from pathlib import Path

import typer

from etl.commands.app import app
from etl.commands.reference import pages


def stale(out_dir: Path) -> list[Path]:
    """The pages under `out_dir` whose text is not what `etl docs` writes (missing ones too)."""
    return [out_dir / name for name, text in pages().items()
            if not (out_dir / name).is_file() or (out_dir / name).read_text() != text]


@app.command()
def docs(out_dir: Path = typer.Option(Path("docs/reference"), "--out",
                                      help="folder to write the reference pages into (a checkout's docs/reference)"),
         check: bool = typer.Option(False, "--check", help="exit 1 naming the pages that are stale")) -> None:
    """Write the reference pages (components, error codes, settings, metrics, SQL functions) from the code."""
    if check:
        old = stale(out_dir)
        for path in old:
            typer.echo(f"{path} is stale: run `etl docs` (make docs)", err=True)
        if old:
            raise typer.Exit(1)
        typer.echo(f"{out_dir}: {len(pages())} pages up to date")
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        (out_dir / name).write_text(text)
        typer.echo(f"wrote {out_dir / name}")
