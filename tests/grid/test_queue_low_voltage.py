"""docs/grid.md's queue on case118 with line 65 (bus 48-49) out: hours that converge at
0.59-0.63 pu. Are they on the upper branch of the P-V curve (an operating point, however
poor) or on the low-voltage branch (a solution no load growth from the base case reaches)?

Upper branch, checked three ways with pandapower's own runpp (numba and lightsim2grid off,
Q limits on as case118's default): grid.timeseries equals a flat-start runpp; a runpp walked
up from 0 MW along the hour's own mix (warm starts) lands on the same solution; and the
voltage falls as the load rises (dV/dP < 0; on the low-voltage branch it rises)."""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pandapower as pp
import pandas as pd
import pytest

import grid

PF = 0.95
TAN = math.tan(math.acos(PF))
BUSES = (49, 59, 80)
# three hours of the docs' queue at their peak (MW at buses 49, 59, 80, rounded to 0.1 MW):
# 2024-07-01 00:00 and 2024-07-04 21:00 UTC converge, the weekly peak 2024-07-07 23:00 not
HOURS_MW = np.array([[83.8, 61.4, 45.0], [87.0, 61.6, 35.0], [92.6, 61.3, 45.0]])
KW = dict(lightsim2grid=False, numba=False, tolerance_mva=1e-8, max_iteration=30,
          enforce_q_lims=True)


@pytest.fixture(scope="module")
def line_65_out():
    net = grid.networks.load("case118")
    net.line.loc[65, "in_service"] = False
    return net


def _with_queue(net, row_mw):
    ref = copy.deepcopy(net)
    loads = [pp.create_load(ref, b, p_mw=p, q_mvar=p * TAN) for b, p in zip(BUSES, row_mw)]
    return ref, loads


def _set(ref, loads, row_mw):
    for i, p in zip(loads, row_mw):
        ref.load.loc[i, ["p_mw", "q_mvar"]] = [p, p * TAN]


def test_low_voltage_hours_are_on_the_upper_branch(line_65_out):
    idx = pd.date_range("2024-07-01", periods=len(HOURS_MW), freq="h", tz="UTC")
    queue = {b: pd.Series(HOURS_MW[:, j], idx, name="facility_mw") for j, b in enumerate(BUSES)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = grid.timeseries(line_65_out, queue, power_factor=PF)
    vm = res.vm_pu[49].to_numpy()
    assert np.isnan(vm[2])  # the peak hour: no solution (a flat-start runpp fails too)
    assert 0.55 < vm[1] < vm[0] < 0.65
    for k in (0, 1):
        ref, loads = _with_queue(line_65_out, HOURS_MW[k])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pp.runpp(ref, init="flat", **KW)
            np.testing.assert_allclose(res.vm_pu.iloc[k].to_numpy(), ref.res_bus.vm_pu,
                                       atol=1e-6)
            # dV/dP at the facility bus: 0.1 % more of the same mix, warm-started
            v0 = ref.res_bus.vm_pu.at[49]
            _set(ref, loads, 1.001 * HOURS_MW[k])
            pp.runpp(ref, init="results", **KW)
            assert ref.res_bus.vm_pu.at[49] < v0
            # walked up from 0 MW (a flat start there) in 20 warm-started steps: the same
            # solution
            walk, loads = _with_queue(line_65_out, 0.0 * HOURS_MW[k])
            pp.runpp(walk, init="flat", **KW)
            for x in np.linspace(0.05, 1.0, 20):
                _set(walk, loads, x * HOURS_MW[k])
                pp.runpp(walk, init="results", **KW)
        assert abs(walk.res_bus.vm_pu.at[49] - vm[k]) < 1e-6
    ref, _ = _with_queue(line_65_out, HOURS_MW[2])
    with warnings.catch_warnings(), pytest.raises(pp.LoadflowNotConverged):
        warnings.simplefilter("ignore")
        pp.runpp(ref, init="flat", **KW)


def test_the_low_voltage_branch_exists_and_the_slope_tells_it_apart(line_65_out):
    """The same hour has a second solution, 0.472 pu, on the low-voltage branch: reached by
    a warm start from a low-voltage state after a large drop of load (0.062 pu at 5 % of the
    hour's load, rising with the load). dV/dP > 0 there, so the check above can fail."""
    ref, loads = _with_queue(line_65_out, HOURS_MW[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.runpp(ref, init="flat", **KW)
        upper = ref.res_bus.vm_pu.at[49]
        _set(ref, loads, 1.001 * HOURS_MW[1])
        pp.runpp(ref, init="results", **KW)
        path = []
        for x in np.linspace(0.05, 1.0, 20):  # from there straight to 5 %, then up
            _set(ref, loads, x * HOURS_MW[1])
            pp.runpp(ref, init="results", **KW)
            path.append(ref.res_bus.vm_pu.at[49])
        lower = path[-1]
        _set(ref, loads, 1.001 * HOURS_MW[1])
        pp.runpp(ref, init="results", **KW)
    assert path[0] < 0.1 and np.all(np.diff(path) > 0)  # voltage rises with the load
    assert lower < upper - 0.1  # two solutions at the same load, 0.47 and 0.59 pu
    assert ref.res_bus.vm_pu.at[49] > lower  # dV/dP > 0: the low-voltage branch


def test_a_warm_start_that_fails_is_started_again_from_the_base_case(line_65_out):
    """From the hour at 0.59 pu the load drops to 5 %: Newton warm-started from 0.59 pu gave
    up (the step was reported not converged), though a flat-start runpp solves it at 0.917
    pu. The step is now started again from the base case's voltages."""
    idx = pd.date_range("2024-07-01", periods=2, freq="h", tz="UTC")
    rows = np.array([HOURS_MW[1], 0.05 * HOURS_MW[1]])
    queue = {b: pd.Series(rows[:, j], idx, name="facility_mw") for j, b in enumerate(BUSES)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = grid.timeseries(line_65_out, queue, power_factor=PF, engine="newton")
        ref, _ = _with_queue(line_65_out, rows[1])
        pp.runpp(ref, init="flat", **KW)
    assert res.vm_pu[49].iloc[0] < 0.6
    np.testing.assert_allclose(res.vm_pu.iloc[1].to_numpy(), ref.res_bus.vm_pu, atol=1e-6)
    assert ref.res_bus.vm_pu.at[49] > 0.9
