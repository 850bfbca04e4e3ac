"""Fixtures of the scenario tests: the composed packages must be importable."""

from __future__ import annotations

import importlib

import pytest



def _needs(module: str, attr: str | None, issue: str):
    try:
        mod = importlib.import_module(module)
        if attr is not None:
            getattr(mod, attr)
    except (ImportError, AttributeError) as exc:
        pytest.skip(f"{module}{'.' + attr if attr else ''} is not available yet ({issue}): {exc}")
    return mod


@pytest.fixture
def facility_fn():
    """``aiload.facility`` (issue 3) and ``aiload.metrics.summary`` (issue 4)."""
    _needs("aiload.metrics", "summary", "issue 4")
    return _needs("aiload.facility", "facility", "issue 3").facility


@pytest.fixture
def grid_pkg(facility_fn):
    return _needs("grid", "timeseries", "issue 5")


@pytest.fixture
def microgrid_pkg(facility_fn):
    return _needs("microgrid", "size", "issue 6")
