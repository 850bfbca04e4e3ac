"""Dynamic-study tests run a real ANDES: generate its code once, at the session's start."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def andes_prepared():
    """ANDES's one-time code generation (~30 s on first use; a no-op once cached)."""
    from grid.dynamics import prepare

    prepare()
