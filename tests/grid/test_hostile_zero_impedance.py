"""Hostile networks: branches without impedance give a clear error, not FloatingPointError."""

from __future__ import annotations

import pandas as pd
import pytest

import grid
from aiload.errors import InputError


def _series() -> pd.Series:
    idx = pd.date_range("2024-01-01", periods=3, freq="h", tz="UTC")
    return pd.Series([1.0, 2.0, 1.5], idx, name="facility_mw")


def _zero_length(net):
    net.line.at[4, "length_km"] = 0.0  # line 4 feeds bus 6, next to the facility at bus 5


def _zero_x(net):
    net.line.at[4, "x_ohm_per_km"] = 0.0


def _zero_vk(net):
    net.trafo.at[0, "vk_percent"] = 0.0
    net.trafo.at[0, "vkr_percent"] = 0.0


@pytest.mark.parametrize("edit, named", [(_zero_length, "line 4"), (_zero_x, "line 4"),
                                         (_zero_vk, "trafo 0")])
@pytest.mark.parametrize("study", ["timeseries", "hosting_capacity"])
def test_zero_impedance_branch_is_named(edit, named, study):
    net = grid.networks.load("cigre_mv")
    edit(net)
    with pytest.raises(InputError, match="zero series reactance") as err:
        if study == "timeseries":
            grid.timeseries(net, _series(), bus=5)
        else:
            grid.hosting_capacity(net, bus=5)
    text = str(err.value)
    assert named in text and "bus-bus switch" in text


def test_series_capacitor_is_not_refused():
    net = grid.networks.load("cigre_mv")
    net.line.at[4, "x_ohm_per_km"] = -0.1  # a negative reactance is legitimate
    res = grid.timeseries(net, _series(), bus=5)
    assert len(res.vm_pu) == 3


def test_floating_point_error_in_runpp_is_explained(monkeypatch):
    """A divide-by-zero the pre-check does not foresee still comes back as an InputError."""
    from grid import engines

    def broken(*args, **kwargs):
        raise FloatingPointError("divide by zero encountered in divide")

    monkeypatch.setattr(engines.pp, "runpp", broken)
    with pytest.raises(InputError, match="FloatingPointError.*bus-bus switch"):
        grid.timeseries(grid.networks.load("cigre_mv"), _series(), bus=5)
