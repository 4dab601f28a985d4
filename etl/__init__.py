"""etl: declarative streaming ETL on PySpark Structured Streaming."""

from __future__ import annotations

DISTRIBUTION = "etl-streams"  # `pip install etl-streams`; the import package and the command are `etl`


def version() -> str:
    """The installed distribution's version (setuptools-scm, from the git tags: pyproject.toml); 0+unknown for a
    source tree on sys.path that was never installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> str:  # etl.__version__, read when asked (importlib.metadata scans sys.path)
    if name == "__version__":
        return version()
    raise AttributeError(f"module 'etl' has no attribute {name!r}")
