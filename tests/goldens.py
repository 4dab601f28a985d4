"""The one switch that rewrites golden files (explain texts of tests/golden and tests/fixtures/optimize) from the
current output: `ETL_UPDATE_GOLDEN=1` (`make goldens`); then review the diff."""

from __future__ import annotations

import os

SWITCH = "ETL_UPDATE_GOLDEN"


def update_goldens() -> bool:
    if "ETL_UPDATE_GOLDENS" in os.environ:  # the optimizer fixtures' old name: one switch now
        raise RuntimeError(f"ETL_UPDATE_GOLDENS is gone: set {SWITCH}=1 (it updates every golden file)")
    return os.environ.get(SWITCH, "").strip() not in ("", "0")
