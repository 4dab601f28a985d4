from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark(spark):
    """The shared session (tests/conftest.py) with the fixed-batches test source registered."""
    from tests.windows.batches_source import register

    register(spark)
    return spark
