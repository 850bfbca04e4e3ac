"""grid.cosimulate and grid.curtailment_cost with the real facility model (issue 15).

The case: ``campus-100mw`` at bus 12 of case118 (the ``campus-100mw-flexible`` scenario),
limits 0.94-1.06 pu, generator Q limits on, the network's loads on the ILLUSTRATIVE cosine
background of ``grid.flexible_run.cosine_background`` (0.62-0.98, made up): the firm hosting
capacity at the bus (84.6 MW) is below the campus's peak, and in mid-July the open loop breaks
the voltage floor every evening.
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pandapower as pp
import pandas as pd
import pytest

import grid
from grid.flexible_run import cosine_background

LIMITS = grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06)
BUS = 12
START = pd.Timestamp("2025-07-14", tz="UTC")


def runpp_q(net, p_mw: float, scale: float):
    """pandapower.runpp (Q limits on) with the loads scaled and the facility at bus 12."""
    ref = copy.deepcopy(net)
    ref.load["p_mw"] *= scale
    ref.load["q_mvar"] *= scale
    pp.create_load(ref, BUS, p_mw=p_mw, q_mvar=p_mw * math.tan(math.acos(0.99)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.runpp(ref, lightsim2grid=False, numba=False, tolerance_mva=1e-8,
                 enforce_q_lims=True)
    return ref


@pytest.fixture(scope="module")
def closed_loop():
    net = grid.networks.load("case118")
    index = pd.date_range(START, periods=2 * 288, freq="5min")
    background = cosine_background(index)
    res = grid.cosimulate(net, "campus-100mw", bus=BUS, start=START, end="2D", freq="5min",
                          control_period="5min", controller="voltage", limits=LIMITS,
                          background=background, seed=0)
    return net, background, res


def test_voltage_floor_held_outside_the_response_time(closed_loop):
    net, background, res = closed_loop
    floor = LIMITS.vm_min_pu
    vm = res.grid.vm_pu[BUS]
    assert (res.open_loop.vm_pu[BUS] < floor).sum() > 50
    # response time: one control period to see the network, then the slowest lever
    spec = __import__("aiload").facility.presets.resolve_spec("campus-100mw", {})
    levers = spec.flexibility
    slowest = max(lever.response_s for lever in (levers.battery, levers.inference,
                                                 levers.power_cap, levers.deferral)
                  if lever is not None)
    response = pd.Timedelta(seconds=res.control_period_s + slowest)
    limit = res.load.power["limit_kw"].to_numpy()
    released = np.r_[True, ~np.isfinite(limit[:-1])]  # no limit in force the step before
    since = pd.Series(np.where(released, vm.index.asi8, np.nan), vm.index).ffill()
    age = vm.index.asi8 - since.to_numpy()
    low = (vm < floor - 1e-9).to_numpy()
    assert low.any()  # the first period runs without a limit: the loop cannot act before
    assert (age[low] <= response.value).all()
    assert (vm[vm.index >= START + response] >= floor - 1e-9).mean() > 0.99
    # pandapower.runpp at sampled closed-loop steps outside the response time
    held = np.flatnonzero((age > response.value) & np.isfinite(limit))
    assert held.size > 100
    for k in held[:: held.size // 5]:
        ref = runpp_q(net, res.grid.facility_mw.iloc[k], background.iloc[k])
        assert ref.res_bus.vm_pu.at[BUS] == pytest.approx(vm.iloc[k], abs=1e-6)
        assert ref.res_bus.vm_pu.at[BUS] >= floor - 1e-9


def test_closed_loop_curtails_what_the_open_loop_would_draw(closed_loop):
    _, _, res = closed_loop
    power = res.load.power
    open_kw = power["facility_kw"] + power["curtailed_kw"]
    np.testing.assert_allclose(res.open_loop.facility_mw.to_numpy(), open_kw.to_numpy() / 1e3)
    assert power["curtailed_kw"].clip(lower=0).sum() > 0
    assert res.violation_steps < res.open_loop_violation_steps
    assert len(res.control) == 576 and res.control_period_s == 300.0
    assert res.events is not None and len(res.events) >= 1


def test_closed_loop_grid_result_is_grid_timeseries_of_the_closed_loop_series(closed_loop,
                                                                             monkeypatch):
    """The closed-loop GridResult is built from the loop's own per-period power flows (Q
    limits on, control period = step), not from a second grid.timeseries; it must equal
    grid.timeseries on the closed-loop series step for step."""
    from grid import cosim

    net, background, res = closed_loop
    # grid.timeseries restarts its warm start at every chunk: make chunks short to cover that
    monkeypatch.setattr("grid.powerflow.CHUNK_STEPS", 100)
    ref = grid.timeseries(net, res.load.power["facility_kw"], bus=BUS, background=background,
                          limits=LIMITS)
    assert res.load.power["curtailed_kw"].max() > 1000.0  # the loop did act
    for name in ("vm_pu", "line_loading_percent", "trafo_loading_percent"):
        got, want = getattr(res.grid, name), getattr(ref, name)
        assert got.index.equals(want.index) and got.columns.equals(want.columns)
        np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=0,
                                   atol=1e-9 if name == "vm_pu" else 1e-7)
    np.testing.assert_allclose(res.grid.ext_grid_p_mw, ref.ext_grid_p_mw, rtol=0, atol=1e-7)
    assert res.grid.converged.equals(ref.converged)
    assert (res.grid.engine, res.grid.engine_reason) == (ref.engine, ref.engine_reason)
    pd.testing.assert_series_equal(res.grid.facility_mw, ref.facility_mw)
    # and it was built without running grid.timeseries on the closed-loop series again
    calls = []
    real = cosim.timeseries
    monkeypatch.setattr(cosim, "timeseries", lambda *a, **k: calls.append(1) or real(*a, **k))
    again = grid.cosimulate(net, "campus-100mw", bus=BUS, start=START, end="6h",
                            freq="5min", control_period="5min", controller="voltage",
                            limits=LIMITS, background=background[:72], seed=0,
                            open_loop=False)
    assert calls == []
    short = grid.timeseries(net, again.load.power["facility_kw"], bus=BUS,
                            background=background[:72], limits=LIMITS)
    np.testing.assert_allclose(again.grid.vm_pu.to_numpy(), short.vm_pu.to_numpy(), rtol=0,
                               atol=1e-9)
    # a control period longer than the step is not a step's power flow: grid.timeseries runs
    calls.clear()
    grid.cosimulate(net, "campus-100mw", bus=BUS, start=START, end="6h", freq="5min",
                    control_period="15min", controller="voltage", limits=LIMITS,
                    background=background[:72], seed=0, open_loop=False)
    assert calls == [1]


def test_curtailment_cost_cross_check():
    """The implied limit of the campus's own size, run through the facility; grid.timeseries
    on the result breaks no limit except where the facility reports a shortfall."""
    import aiload

    net = grid.networks.load("case118")
    load = aiload.facility("campus-100mw", start=START, end="3D", freq="1h", seed=0,
                           progress=False)
    background = cosine_background(load.power.index)
    study = grid.flexible_interconnection(net, load, bus=BUS, limits=LIMITS,
                                          background=background)
    size = float(study.load_mw.max())
    uncut = grid.timeseries(net, load, bus=BUS, background=background, limits=LIMITS)
    cost = grid.curtailment_cost(study, size, net, "campus-100mw")
    assert cost.factor == pytest.approx(1.0)
    pd.testing.assert_series_equal(cost.limit_kw, (study.headroom_mw * 1e3).rename("limit_kw"))
    before = uncut.violations()["time"].nunique()
    assert before > 10 and cost.violation_steps <= 2
    events = cost.events
    for t in cost.violations["time"].unique():  # only inside an event left short of the limit
        inside = events[(events.start < t + pd.Timedelta("1h")) & (events.end > t)]
        assert (inside.shortfall_kw > 0).any()
    assert (cost.violations["value"] > LIMITS.vm_min_pu - 1e-4).all()
    costs = cost.costs.set_index("quantity")
    curtailed = costs.at["curtailed_energy_mwh", "modelled"]
    by_hand = load.power["facility_kw"].sub(cost.load.power["facility_kw"]).clip(lower=0).sum()
    assert curtailed == pytest.approx(by_hand / 1e3, rel=1e-9)
    assert costs.at["events", "modelled"] == len(events) > 0


def test_loading_controller_with_the_facility():
    """colocation-10mw on feeder 2 of CIGRE MV: line 10 held under 100 % after the response."""
    net = grid.networks.load("cigre_mv")
    start = pd.Timestamp("2025-01-06", tz="UTC")
    index = pd.date_range(start, periods=96, freq="15min")
    background = pd.Series(0.7, index)
    res = grid.cosimulate(net, "colocation-10mw", bus=14, start=start, end="1D", freq="15min",
                          controller="loading", branches=["line 10"],
                          limits=grid.Limits(vm_min_pu=0.9, vm_max_pu=1.1),
                          background=background)
    line = res.grid.line_loading_percent[10]
    assert (res.open_loop.line_loading_percent[10] > 100).sum() > 50
    over = np.flatnonzero(line.to_numpy() > 100 + 1e-9)
    assert (over < 2).all()  # the first period has no limit; the levers act in the next
    k = int(np.flatnonzero(np.isfinite(res.load.power["limit_kw"].to_numpy()))[5])
    ref = copy.deepcopy(net)
    ref.load["p_mw"] *= 0.7
    ref.load["q_mvar"] *= 0.7
    p = res.grid.facility_mw.iloc[k]
    pp.create_load(ref, 14, p_mw=p, q_mvar=p * math.tan(math.acos(0.99)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.runpp(ref, lightsim2grid=False, numba=False, tolerance_mva=1e-8)
    assert ref.res_line.loading_percent.at[10] == pytest.approx(line.iloc[k], abs=1e-4)
    assert ref.res_line.loading_percent.at[10] <= 100.0
