"""The P-V curve's nose against an independent load-stepping search with pandapower.runpp,
and the collapse margins hosting_capacity and contingency report."""

from __future__ import annotations

import copy
import math
import warnings

import pandapower as pp
import pandas as pd
import pytest

import grid

PF = 0.95
TAN = math.tan(math.acos(PF))


def runpp_nose(net, bus: int, coarse_mw: float, fine_mw: float, outage=None) -> float:
    """Independent nose: runpp warm-started from its own last result, coarse then fine."""
    ref = copy.deepcopy(net)
    if outage is not None:
        ref.line.loc[outage, "in_service"] = False
    load = pp.create_load(ref, bus, p_mw=0.0, q_mvar=0.0)

    def solves(p: float) -> bool:
        ref.load.loc[load, ["p_mw", "q_mvar"]] = [p, p * TAN]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pp.runpp(ref, lightsim2grid=False, numba=False, init="results",
                         max_iteration=50, tolerance_mva=1e-8)
        except pp.LoadflowNotConverged:
            return False
        return True

    ref.load.loc[load, ["p_mw", "q_mvar"]] = [0.0, 0.0]
    pp.runpp(ref, lightsim2grid=False, numba=False)
    p = 0.0
    for step in (coarse_mw, fine_mw):
        while solves(p + step):
            p += step
        solves(p)  # back to the last solved point for the next warm start
    return p


@pytest.mark.parametrize(("name", "bus", "outage", "coarse", "fine"), [
    ("case118", 49, None, 20.0, 0.5),
    ("case118", 49, 65, 5.0, 0.1),
    ("cigre_mv", 5, None, 0.5, 0.01),
])
def test_nose_agrees_with_a_fine_runpp_search(name, bus, outage, coarse, fine):
    net = grid.networks.load(name)
    curve = grid.pv_curve(net, bus=bus, power_factor=PF, enforce_q_lims=False,
                          outage=None if outage is None else f"line {outage}")
    reference = runpp_nose(net, bus, coarse, fine, outage)
    assert curve.nose_p_mw == pytest.approx(reference, rel=0.005)
    # the curve: power rises, voltage falls, to the nose
    assert curve.curve.p_mw.is_monotonic_increasing
    assert curve.curve.vm_pu.is_monotonic_decreasing
    assert curve.nose_vm_pu == pytest.approx(curve.curve.vm_pu.iloc[-1])


def test_line_65_outage_leaves_the_campus_a_few_mw_from_collapse():
    net = grid.networks.load("case118")
    idx = pd.date_range("2024-07-01", periods=2, freq="h", tz="UTC")
    load = pd.Series([80.0, 88.5], index=idx)
    table = grid.contingency(net, load, bus=49, power_factor=PF, n_peak=1,
                             enforce_q_lims=False).set_index("element")
    alone = grid.pv_curve(net, bus=49, power_factor=PF, outage="line 65", enforce_q_lims=False)
    row = table.loc["line 65"]
    assert row.nose_mw == pytest.approx(alone.nose_p_mw, rel=0.005)
    assert row.collapse_margin_mw == pytest.approx(row.nose_mw - 88.5)
    assert 0 < row.collapse_margin_mw < 0.05 * 88.5 and bool(row.low_margin)
    assert table.loc["none"].collapse_margin_mw > 100.0 and not table.loc["none"].low_margin
    assert table.low_margin.sum() == 1


def test_hosting_capacity_reports_the_collapse_margin():
    net = grid.networks.load("case118")
    limits = grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06)
    hc = grid.hosting_capacity(net, bus=49, limits=limits, power_factor=PF,
                               enforce_q_lims=False)
    curve = grid.pv_curve(net, bus=49, power_factor=PF, enforce_q_lims=False)
    assert hc.nose_p_mw == pytest.approx(curve.nose_p_mw, rel=0.005)
    assert hc.collapse_margin_mw == pytest.approx(hc.nose_p_mw - hc.p_mw)


def test_pv_curve_input_errors():
    net = grid.networks.load("cigre_mv")
    with pytest.raises(ValueError, match=r"outage: expected 'line N' or 'trafo N', got 'bus 3'"):
        grid.pv_curve(net, bus=5, outage="bus 3")
    with pytest.raises(ValueError, match="outage: line 99 is not an in-service line"):
        grid.pv_curve(net, bus=5, outage="line 99")
    with pytest.raises(ValueError, match="bus 6 is not supplied"):
        grid.pv_curve(net, bus=6, outage="line 4")  # the outage cuts the facility off
