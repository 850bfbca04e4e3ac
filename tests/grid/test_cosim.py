"""grid.cosimulate: the closed loop between a facility and the network.

The facility side here is a stand-in with a perfect, instantaneous lever
(``facility_kw = min(demand, limit)`` per control period, the contract's FacilityState fields),
fed with LUMI's measured power (LLNL LAST, CC BY 4.0): the network side — what the controller
sees and what the loop does with it — is tested against ``pandapower.runpp`` without
depending on the facility model's levers (tests/grid/test_cosim_facility.py runs the real one).
"""

from __future__ import annotations

import copy
import math
import warnings
from types import SimpleNamespace

import numpy as np
import pandapower as pp
import pandas as pd
import pytest

import grid
import grid.cosim as cosim
from aiload.errors import InputError
from tests.grid.conftest import scaled_mw

CASE118_LIMITS = grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06)


class FakeFacility:
    """``aiload.facility`` with one perfect lever: each period draws ``min(demand, limit)``."""

    def __init__(self, demand_kw: pd.Series, period_s: float) -> None:
        self.demand = demand_kw
        self.period_s = period_s
        self.calls: list[tuple] = []

    def __call__(self, spec_or_preset, *, start, end, freq, seed, period_s, limit, overrides,
                 progress=False):
        self.progress = progress
        demand = self.demand.to_numpy(dtype=float)
        step_s = pd.Timedelta(freq).total_seconds()
        per = int((period_s or self.period_s) // step_s)
        out = demand.copy()
        lim = np.full(len(demand), np.inf)
        prev = None
        for k0 in range(0, len(demand), per):
            t = self.demand.index[k0]
            if prev is None:
                state = SimpleNamespace(time=t, period_s=per * step_s, facility_kw=math.nan,
                                        demand_kw=math.nan, limit_kw=math.inf)
            else:
                state = SimpleNamespace(time=t, period_s=per * step_s,
                                        facility_kw=float(out[prev].mean()),
                                        demand_kw=float(demand[prev].mean()),
                                        limit_kw=float(lim[prev][0]))
            value = float(limit(t, state))
            self.calls.append((t, state, value))
            here = slice(k0, k0 + per)
            lim[here] = math.inf if math.isnan(value) else value
            out[here] = np.minimum(demand[here], lim[here])
            prev = here
        power = pd.DataFrame({"facility_kw": out, "limit_kw": lim,
                              "curtailed_kw": demand - out}, index=self.demand.index)
        return SimpleNamespace(power=power, meta={}, flexibility=None)


def runpp_q(net, bus: int, p_mw: float, scale: float, q_lims: bool = True):
    """Independent reference: pandapower.runpp with the loads scaled and the facility added
    (generator Q limits enforced, as grid does by default on case118)."""
    ref = copy.deepcopy(net)
    ref.load["p_mw"] *= scale
    ref.load["q_mvar"] *= scale
    pp.create_load(ref, bus, p_mw=p_mw, q_mvar=p_mw * math.tan(math.acos(0.99)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.runpp(ref, lightsim2grid=False, numba=False, tolerance_mva=1e-8,
                 enforce_q_lims=q_lims)
    return ref


def daily_background(index: pd.DatetimeIndex, low: float, high: float) -> pd.Series:
    """Illustrative multipliers of the network's loads: a daily cosine, peak at 18:00 UTC."""
    hour = index.hour + index.minute / 60
    mid, amp = 0.5 * (low + high), 0.5 * (high - low)
    return pd.Series(mid + amp * np.cos(2 * np.pi * (hour - 18) / 24), index=index)


@pytest.fixture
def case118_run(monkeypatch, lumi_kw):
    """LUMI's two measured days at 10 min scaled to 170 MW at bus 15 of case118 (firm 141 MW)."""
    demand = scaled_mw(lumi_kw, 170.0).rename("facility_kw") * 1e3
    fake = FakeFacility(demand, 600.0)
    monkeypatch.setattr(cosim, "_facility_call", fake)
    net = grid.networks.load("case118")
    background = daily_background(demand.index, 0.9, 1.0)
    return net, demand, background, fake


def test_voltage_controller_keeps_the_floor_after_one_period(case118_run):
    net, demand, background, fake = case118_run
    res = grid.cosimulate(net, "stand-in", bus=15, start=demand.index[0],
                          end=demand.index[-1] + pd.Timedelta("10min"), freq="10min",
                          control_period="10min", controller="voltage",
                          limits=CASE118_LIMITS, background=background)
    floor = CASE118_LIMITS.vm_min_pu
    before = res.open_loop.vm_pu[15]
    after = res.grid.vm_pu[15]
    assert (before < floor).sum() > 20  # the open loop breaks the floor
    limited = np.isfinite(res.load.power["limit_kw"].to_numpy())
    low = (after < floor - 1e-6).to_numpy()
    # a step below the floor only where no limit was in force yet (the loop's response time)
    assert not (low & limited).any()
    assert low.sum() <= 2
    # the reference: pandapower.runpp at sampled steps of the closed loop
    for k in np.flatnonzero(limited)[:: max(1, limited.sum() // 6)]:
        ref = runpp_q(net, 15, res.grid.facility_mw.iloc[k], background.iloc[k])
        assert ref.res_bus.vm_pu.at[15] >= floor - 1e-6
        assert ref.res_bus.vm_pu.at[15] == pytest.approx(after.iloc[k], abs=1e-6)


def test_voltage_controller_limit_is_the_headroom_by_runpp(case118_run):
    """Where engaged, the limit is the power at which runpp puts bus 15 at the floor + margin."""
    net, demand, background, fake = case118_run
    res = grid.cosimulate(net, "stand-in", bus=15, start=demand.index[0], end="2D",
                          freq="10min", controller="voltage", limits=CASE118_LIMITS,
                          background=background, open_loop=False)
    assert res.open_loop is None
    engaged = res.control[np.isfinite(res.control.limit_kw)]
    assert len(engaged) > 10
    target = CASE118_LIMITS.vm_min_pu + 0.002
    for t in engaged.index[:: max(1, len(engaged) // 4)]:
        row = engaged.loc[t]
        p = row.limit_kw / 1e3
        at = runpp_q(net, 15, p, row.background).res_bus.vm_pu.at[15]
        above = runpp_q(net, 15, p + 0.1, row.background).res_bus.vm_pu.at[15]
        assert target <= at < target + 5e-5
        assert above < target


def test_controller_state_is_the_previous_period(case118_run):
    net, demand, background, fake = case118_run
    seen = []

    def spy(time, network, facility):
        seen.append((time, network, facility))
        return 150_000.0

    res = grid.cosimulate(net, "stand-in", bus=15, start=demand.index[0], end="2D",
                          freq="10min", control_period="20min", controller=spy,
                          limits=CASE118_LIMITS, background=background)
    # 144 periods of 20 min; the first has no measurement and is not handed to the controller
    assert len(fake.calls) == 144 and len(seen) == 143
    assert res.controller == "spy"
    time, network, facility = seen[10]
    assert time == demand.index[0] + pd.Timedelta("220min")
    prev = slice(20, 22)  # the two 10-min steps of the period before
    assert network.facility_mw == pytest.approx(
        np.minimum(demand.iloc[prev], 150_000).mean() / 1e3)
    assert network.background == pytest.approx(background.iloc[prev].mean())
    ref = runpp_q(net, 15, network.facility_mw, network.background)
    assert network.bus_vm_pu == pytest.approx(ref.res_bus.vm_pu.at[15], abs=1e-6)
    np.testing.assert_allclose(network.line_loading_percent,
                               ref.res_line.loading_percent.to_numpy(), atol=1e-4)
    assert (res.load.power["facility_kw"].iloc[2:] <= 150_000 + 1e-9).all()


def test_loading_controller_holds_the_named_line(monkeypatch, lumi_kw):
    """CIGRE MV, bus 14 at background 0.6-0.8: line 10 binds near 5.8 MW; 7.5 MW peak."""
    demand = scaled_mw(lumi_kw, 7.5).rename("facility_kw") * 1e3
    monkeypatch.setattr(cosim, "_facility_call", FakeFacility(demand, 600.0))
    net = grid.networks.load("cigre_mv")
    limits = grid.Limits(vm_min_pu=0.9, vm_max_pu=1.1)
    background = daily_background(demand.index, 0.6, 0.8)
    res = grid.cosimulate(net, "stand-in", bus=14, start=demand.index[0], end="2D",
                          freq="10min", controller="loading", branches=["line 10"],
                          limits=limits, background=background)
    before = res.open_loop.line_loading_percent[10]
    after = res.grid.line_loading_percent[10]
    assert (before > 100).sum() > 20
    limited = np.isfinite(res.load.power["limit_kw"].to_numpy())
    over = (after > 100 + 1e-6).to_numpy()
    assert not (over & limited).any() and over.sum() <= 2
    k = int(np.flatnonzero(limited)[0])
    p = res.grid.facility_mw.iloc[k]
    ref = runpp_q(net, 14, p, background.iloc[k], q_lims=False)
    assert ref.res_line.loading_percent.at[10] == pytest.approx(after.iloc[k], abs=1e-4)
    assert ref.res_line.loading_percent.at[10] <= 100.0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"controller": "volts"}, "controller: expected one of ('voltage', 'loading') or a "
                              "callable (time, network_state, facility_state) -> kW, got 'volts'"),
    ({"controller": "loading", "branches": ["line 999"]},
     "branches: 'line 999' is not a branch of this network"),
    ({"controller": "loading", "branches": "line 3"}, "expected a list of names"),
    ({"control_period": "soon"}, "control_period: expected a positive duration"),
    ({"limits": (0.9, 1.1)}, "limits: expected a grid.Limits, got tuple"),
    ({"bus": 999}, "bus 999 does not exist"),
    ({"power_factor": 1.5}, "power_factor: expected a number in (0, 1]"),
    ({"background": pd.Series([1.0, 1.0])}, "background: its index"),
    ({"end": pd.Timestamp("2024-12-31", tz="UTC")},
     "end: expected a time after start (2025-01-01 00:00:00+00:00)"),
    ({"freq": "1 fortnightish"}, "freq: expected an interval such as '5min'"),
    ({"branches": ["line 10"]}, ("branches: only controller='loading' watches branches, got "
                                 "controller='voltage'")),
])
def test_bad_inputs_are_named(monkeypatch, kwargs, message):
    monkeypatch.setattr(cosim, "_facility_call", lambda *a, **k: pytest.fail("ran"))
    args = {"bus": 5, "start": pd.Timestamp("2025-01-01", tz="UTC"), "end": "1D",
            "freq": "1h"} | kwargs
    with pytest.raises(InputError) as err:
        grid.cosimulate(grid.networks.load("cigre_mv"), "colocation-10mw", **args)
    assert message in str(err.value)


@pytest.mark.parametrize(("controller", "message"), [
    (lambda t, n, f: 1 / 0, "at 2025-01-06 00:10:00+00:00 raised ZeroDivisionError"),
    (lambda t, n, f: "5000", "expected a number of kW (NaN or inf for no limit), got '5000' (str)"),
    (lambda t, n, f: None, "got None (NoneType)"),
])
def test_a_controller_that_fails_or_returns_no_number_is_named(monkeypatch, controller, message):
    """What the user's controller raises or returns is reported with the controller and time."""
    index = pd.date_range("2025-01-06", periods=6, freq="10min", tz="UTC")
    monkeypatch.setattr(cosim, "_facility_call",
                        FakeFacility(pd.Series(5000.0, index, name="facility_kw"), 600.0))
    with pytest.raises(InputError) as err:
        grid.cosimulate(grid.networks.load("cigre_mv"), "stand-in", bus=14, start=index[0],
                        end="1h", freq="10min", controller=controller, open_loop=False)
    assert "controller '<lambda>'" in str(err.value) and message in str(err.value)


def test_naive_start_is_refused(monkeypatch):
    monkeypatch.setattr(cosim, "_facility_call", lambda *a, **k: pytest.fail("ran"))
    with pytest.raises(InputError, match="start: expected a tz-aware timestamp, got "
                                         "'2025-01-01'"):
        grid.cosimulate(grid.networks.load("cigre_mv"), "colocation-10mw", bus=5,
                        start="2025-01-01", end="1D")


@pytest.mark.parametrize("progress", [False, True])
def test_progress_is_a_keyword_of_the_loop(monkeypatch, progress):
    # issue 26: cosimulate(..., progress=False) went to aiload.facility beside its own
    # progress=False: a raw TypeError ("got multiple values for keyword argument")
    index = pd.date_range("2025-01-06", periods=6, freq="10min", tz="UTC")
    fake = FakeFacility(pd.Series(5000.0, index, name="facility_kw"), 600.0)
    monkeypatch.setattr(cosim, "_facility_call", fake)
    grid.cosimulate(grid.networks.load("cigre_mv"), "stand-in", bus=14, start=index[0],
                    end="1h", freq="10min", open_loop=False, progress=progress)
    assert fake.progress is progress


@pytest.mark.parametrize("key", ["power_limit_kw", "replicates", "stream_to"])
def test_keywords_the_loop_sets_itself_are_refused(key):
    with pytest.raises(InputError, match=rf"cosimulate: {key}= cannot be set here"):
        cosim._facility_call("colocation-10mw", start=pd.Timestamp("2025-01-06", tz="UTC"),
                             end="1h", freq="10min", seed=0, period_s=None, limit=None,
                             overrides={key: 1})
