"""The folders the session etl builds writes: none in the current folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.spark


def test_the_sql_warehouse_is_in_etl_s_temporary_folder_not_the_current_one(spark):
    """Spark makes its warehouse folder when the catalog is first used: by default spark-warehouse/ in the
    current folder, left behind by every run."""
    want = Path(tempfile.gettempdir(), f"etl-warehouse-{os.getuid()}")
    located = [spark.conf.get("spark.sql.warehouse.dir"), spark.catalog.getDatabase("default").locationUri]
    assert [(urlparse(u).scheme, Path(urlparse(u).path)) for u in located] == [("file", want)] * 2
    assert want.is_dir()
