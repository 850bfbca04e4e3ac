"""Shared test fixtures: where the real data lives.

Tests read the real measurements in ``../shared/data`` (read-only) and write only to
pytest's temporary directories.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("AILOAD_SHARED_DATA", ROOT.parent / "shared" / "data")).resolve()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real, openly licensed measurements (``../shared/data``)."""
    if not DATA.is_dir():
        pytest.fail(f"shared data not found at {DATA}; set AILOAD_SHARED_DATA")
    return DATA
