"""Hostile network files: saved power-flow options must not change a study (issue 26)."""

from __future__ import annotations

import numpy as np
import pandapower as pp
import pandas as pd
import pytest

import grid
from aiload.errors import InputWarning


def _series() -> pd.Series:
    idx = pd.date_range("2024-01-01", periods=3, freq="h", tz="UTC")
    return pd.Series([1.0, 2.0, 1.5], idx, name="facility_mw")


@pytest.mark.parametrize("engine", ["auto", "runpp"])
def test_saved_pf_options_do_not_change_timeseries(engine, tmp_path):
    clean = grid.timeseries(grid.networks.load("cigre_mv"), _series(), bus=5, engine=engine)
    net = grid.networks.load("cigre_mv")
    # cigre_mv has open switches: this option moves voltages by 3e-4 pu when applied
    pp.set_user_pf_options(net, neglect_open_switch_branches=True)
    path = tmp_path / "net.json"
    pp.to_json(net, str(path))
    saved = grid.networks.load(path)
    assert saved.user_pf_options  # the file keeps them
    with pytest.warns(InputWarning, match="neglect_open_switch_branches"):
        res = grid.timeseries(saved, _series(), bus=5, engine=engine)
    np.testing.assert_allclose(res.vm_pu.to_numpy(), clean.vm_pu.to_numpy(), atol=1e-9)
    np.testing.assert_allclose(res.line_loading_percent.to_numpy(),
                               clean.line_loading_percent.to_numpy(), atol=1e-6)
    assert saved.user_pf_options == {"neglect_open_switch_branches": True}  # input untouched


def test_saved_algorithm_does_not_break_the_study():
    net = grid.networks.load("cigre_mv")
    pp.set_user_pf_options(net, algorithm="bfsw")  # made the base case "not converge"
    with pytest.warns(InputWarning, match="algorithm='bfsw'"):
        res = grid.timeseries(net, _series(), bus=5)
    assert bool(res.converged.all())
