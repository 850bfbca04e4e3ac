"""The grid searches refuse search bounds and steps that are not finite numbers (issue 14,
class 4): an infinite bound would double forever or report inf as a capacity."""

from __future__ import annotations

import pandapower.networks as pn
import pytest

import grid
from aiload.errors import InputError


@pytest.fixture(scope="module")
def net():
    return pn.example_simple()


@pytest.mark.parametrize("kwargs", [{"p_max_mw": float("inf")}, {"p_max_mw": float("nan")},
                                    {"tolerance_mw": float("inf")}, {"tolerance_mw": 0.0}])
def test_hosting_capacity_refuses_non_finite_bounds(net, kwargs):
    with pytest.raises(InputError, match="need finite 0 < tolerance_mw < p_max_mw"):
        grid.hosting_capacity(net, bus=6, limits=grid.Limits(vm_min_pu=0.9, vm_max_pu=1.1),
                              **kwargs)


@pytest.mark.parametrize("kwargs", [{"p_max_mw": float("inf")}, {"step_mw": float("inf")}])
def test_pv_curve_refuses_non_finite_bounds(net, kwargs):
    with pytest.raises(InputError, match="p_max_mw|step_mw"):
        grid.pv_curve(net, bus=6, **kwargs)


@pytest.mark.parametrize("dp", [float("inf"), float("nan"), -1.0])
def test_load_loss_refuses_a_non_finite_step(net, dp):
    with pytest.raises(InputError, match="dp_mw: expected a finite positive step"):
        grid.load_loss(net, bus=6, p_mw=1.0, dp_mw=dp)
