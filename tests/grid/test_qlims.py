"""Generator Q limits in every study, against pandapower.runpp(enforce_q_lims=True)."""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pandapower as pp
import pandapower.networks as pn
import pandas as pd
import pytest

import grid
from aiload.errors import InputError

PF = 0.95
TAN = math.tan(math.acos(PF))
LIMITS = grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06)


def runpp_q(net, bus: int | None, p_mw: float, *, q_lims: bool = True, outage=None):
    """Independent reference: a copy with the facility load, solved by pandapower itself."""
    ref = copy.deepcopy(net)
    if outage is not None:
        ref[outage[0]].loc[outage[1], "in_service"] = False
    if bus is not None:
        pp.create_load(ref, bus, p_mw=p_mw, q_mvar=p_mw * TAN)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.runpp(ref, lightsim2grid=False, numba=False, tolerance_mva=1e-8,
                 enforce_q_lims=q_lims)
    return ref


@pytest.mark.parametrize(("net", "bus", "peak_mw"), [
    (grid.networks.load("case118"), 11, 300.0),
    (pn.case39(), 3, 400.0),
], ids=["case118", "case39"])
def test_timeseries_with_q_limits_equals_runpp(net, bus, peak_mw):
    idx = pd.date_range("2024-07-01", periods=4, freq="h", tz="UTC")
    load = pd.Series(np.linspace(0.25, 1.0, 4) * peak_mw, index=idx)
    res = grid.timeseries(net, load, bus=bus, power_factor=PF)
    assert res.enforce_q_lims and res.engine == "newton_qlims"
    assert "Q limits enforced" in res.engine_reason
    for k, p in enumerate(load):
        ref = runpp_q(net, bus, p)
        np.testing.assert_allclose(res.vm_pu.iloc[k], ref.res_bus.vm_pu, atol=1e-6)
        np.testing.assert_allclose(res.line_loading_percent.iloc[k], ref.res_line.loading_percent,
                                   atol=1e-4)
        assert res.ext_grid_p_mw.iloc[k] == pytest.approx(ref.res_ext_grid.p_mw.sum(), abs=1e-5)
    # the limits matter here: without them the peak step is elsewhere
    free = runpp_q(net, bus, peak_mw, q_lims=False)
    assert np.abs(free.res_bus.vm_pu - res.vm_pu.iloc[-1]).max() > 1e-3
    runpp = grid.timeseries(net, load.iloc[[-1]], bus=bus, power_factor=PF, engine="runpp")
    assert runpp.engine == "runpp_qlims"
    np.testing.assert_allclose(runpp.vm_pu.iloc[0], res.vm_pu.iloc[-1], atol=1e-6)


def _violates(ref) -> bool:
    vm = ref.res_bus.vm_pu.dropna()
    return bool((vm < LIMITS.vm_min_pu).any() or (vm > LIMITS.vm_max_pu).any()
                or (ref.res_line.loading_percent > LIMITS.loading_max_percent).any()
                or (ref.res_trafo.loading_percent > LIMITS.loading_max_percent).any())


def test_case118_bus_11_hosting_capacity_with_q_limits_by_independent_bisection():
    net = grid.networks.load("case118")
    hc = grid.hosting_capacity(net, bus=11, limits=LIMITS, power_factor=PF)
    assert hc.enforce_q_lims
    free = grid.hosting_capacity(net, bus=11, limits=LIMITS, power_factor=PF,
                                 enforce_q_lims=False)

    def bad(p: float) -> bool:
        try:
            return _violates(runpp_q(net, 11, p))
        except pp.LoadflowNotConverged:
            return True

    lo, hi = 0.0, 1000.0
    assert not bad(lo) and bad(hi)
    while hi - lo > 0.005:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if bad(mid) else (mid, hi)
    assert hc.p_mw == pytest.approx(lo, abs=0.01)
    assert hc.p_mw == pytest.approx(270.7, abs=0.1)  # issue 16's figure
    assert free.p_mw == pytest.approx(402.6, abs=0.1) and not free.enforce_q_lims


def test_contingency_and_load_loss_with_q_limits_equal_runpp():
    net = grid.networks.load("case118")
    idx = pd.date_range("2024-07-01", periods=2, freq="h", tz="UTC")
    load = pd.Series([150.0, 200.0], index=idx)
    table = grid.contingency(net, load, bus=11, outages="lines", n_peak=1,
                             power_factor=PF).set_index("element")
    assert table.attrs["enforce_q_lims"]
    for line in (7, 10, 20):  # two lines at bus 11 and one elsewhere
        ref = runpp_q(net, 11, 200.0, outage=("line", line))
        row = table.loc[f"line {line}"]
        assert row.min_vm_pu == pytest.approx(ref.res_bus.vm_pu.min(), abs=1e-6)
        assert row.max_vm_pu == pytest.approx(ref.res_bus.vm_pu.max(), abs=1e-6)
    ev = grid.load_loss(net, bus=11, p_mw=200.0, power_factor=PF)
    assert ev.enforce_q_lims
    np.testing.assert_allclose(ev.vm_pre_pu, runpp_q(net, 11, 200.0).res_bus.vm_pu, atol=1e-6)
    np.testing.assert_allclose(ev.vm_post_pu, runpp_q(net, None, 0.0).res_bus.vm_pu, atol=1e-6)


def test_default_per_network_and_what_cannot_be_done():
    from grid.qlims import default_enforce_q_lims

    assert default_enforce_q_lims(grid.networks.load("case118"))
    assert not default_enforce_q_lims(grid.networks.load("cigre_mv"))  # no generators
    assert not default_enforce_q_lims(grid.networks.load("cigre_hv"))  # gens without Q limits
    idx = pd.date_range("2024-07-01", periods=2, freq="h", tz="UTC")
    load = pd.Series([10.0, 20.0], index=idx)
    # case300 does not converge with Q limits even without a facility (pandapower agrees):
    # the default falls back and says so; asking for them explicitly is an error
    with pytest.raises(pp.LoadflowNotConverged):
        runpp_q(grid.networks.load("case300"), None, 0.0)
    res = grid.timeseries(grid.networks.load("case300"), load, bus=100)
    assert not res.enforce_q_lims
    assert "Q limits not enforced: the network does not converge" in res.engine_reason
    with pytest.raises(InputError, match="pass enforce_q_lims=False to study it without them"):
        grid.timeseries(grid.networks.load("case300"), load, bus=100, enforce_q_lims=True)
    with pytest.raises(InputError, match="engine='lightsim2grid' cannot enforce generator Q"):
        grid.timeseries(grid.networks.load("case118"), load, bus=11, engine="lightsim2grid")
    with pytest.raises(InputError, match="enforce_q_lims: expected True, False or None"):
        grid.timeseries(grid.networks.load("case118"), load, bus=11, enforce_q_lims="yes")
