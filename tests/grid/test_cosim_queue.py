"""grid.cosimulate with a queue (issue 30): the loops close in queue order, each with those
before it connected at their closed-loop power. The facility side is test_cosim's stand-in
(a perfect lever per control period) fed with LUMI's measured power, one shape per facility
(picked by its seed); the network side is checked against pandapower.runpp."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import grid
import grid.cosim as cosim
from aiload.errors import InputError
from tests.grid.conftest import runpp_with_loads, scaled_mw
from tests.grid.test_cosim import CASE118_LIMITS, FakeFacility, daily_background

TAN = math.tan(math.acos(0.99))
SEEDS = {15: 1, 20: 2}  # queue order: bus 15 first, then bus 20


class FakeQueue:
    """One FakeFacility per seed: each facility of the queue its own measured shape."""

    def __init__(self, demands: dict[int, pd.Series]) -> None:
        self.fakes = {seed: FakeFacility(d, 600.0) for seed, d in demands.items()}

    def __call__(self, spec_or_preset, *, seed, **kwargs):
        return self.fakes[seed](spec_or_preset, seed=seed, **kwargs)


@pytest.fixture(scope="module")
def run(lumi_kw):
    demand_15 = scaled_mw(lumi_kw, 170.0).rename("facility_kw") * 1e3
    # the second facility: the same measurement a day later in its shape, 50 MW peak
    shifted = np.roll(lumi_kw.to_numpy(), len(lumi_kw) // 2)
    demand_20 = scaled_mw(pd.Series(shifted, lumi_kw.index), 50.0).rename("facility_kw") * 1e3
    fake = FakeQueue({SEEDS[15]: demand_15, SEEDS[20]: demand_20})
    net = grid.networks.load("case118")
    background = daily_background(demand_15.index, 0.9, 1.0)
    kw = dict(start=demand_15.index[0], end=demand_15.index[-1] + pd.Timedelta("10min"),
              freq="10min", control_period="10min", controller="voltage",
              limits=CASE118_LIMITS, background=background)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cosim, "_facility_call", fake)
        res = grid.cosimulate(net, {15: "stand-in", 20: "stand-in"}, seed=SEEDS, **kw)
        alone = grid.cosimulate(net, "stand-in", bus=15, seed=SEEDS[15], open_loop=False, **kw)
    return net, background, res, alone


def runpp_all(net, loads_mw: dict[int, float], scale: float):
    return runpp_with_loads(net, loads_mw, tan_phi=TAN, scale=scale, enforce_q_lims=True)


def test_the_first_loop_is_the_facility_alone(run):
    _, _, res, alone = run
    first = res.facilities[15]
    assert res.buses == (15, 20) and res.seeds == SEEDS
    pd.testing.assert_frame_equal(first.control, alone.control)
    pd.testing.assert_frame_equal(first.load.power, alone.load.power)


def test_the_second_controller_sees_the_first_facility_by_runpp(run):
    """What the controller of bus 20 saw each period: runpp with bus 15 at its closed-loop
    mean power of that period and bus 20 at its own metered mean."""
    net, _, res, _ = run
    control = res.facilities[20].control
    first_kw = res.facilities[15].load.power["facility_kw"]
    period = pd.Timedelta("10min")
    rows = control.dropna(subset=["vm_pu"])
    assert len(rows) > 100
    for t in rows.index[:: len(rows) // 5]:
        row = rows.loc[t]
        held_mw = float(first_kw.loc[t - period:t - pd.Timedelta("1ns")].mean()) / 1e3
        ref = runpp_all(net, {15: held_mw, 20: row.facility_kw / 1e3}, row.background)
        assert ref.res_bus.vm_pu.at[20] == pytest.approx(row.vm_pu, abs=1e-6), t


def test_the_queue_grid_is_runpp_with_every_facility_and_the_loop_helps(run):
    net, background, res, _ = run
    power = res.facility_kw
    vm = res.grid.vm_pu
    for k in range(0, len(power), len(power) // 6):
        ref = runpp_all(net, (power.iloc[k] / 1e3).to_dict(), background.iloc[k])
        np.testing.assert_allclose(vm.iloc[k].to_numpy(), ref.res_bus.vm_pu, atol=1e-6)
    floor = CASE118_LIMITS.vm_min_pu
    before = (res.open_loop.vm_pu[[15, 20]] < floor).any(axis=1).sum()
    after = (vm[[15, 20]] < floor - 1e-6).any(axis=1).sum()
    assert before > 20 and after <= 2  # one control period of response at most
    for b in (15, 20):  # both loops act: each limits its facility in some periods
        assert np.isfinite(res.facilities[b].control.limit_kw).sum() > 10


def test_queue_input_errors(monkeypatch):
    net = grid.networks.load("cigre_mv")
    kw = dict(start=pd.Timestamp("2025-01-06", tz="UTC"), end="1h", freq="15min")
    with pytest.raises(InputError, match=r"got both bus=14 and a mapping .* omit bus="):
        grid.cosimulate(net, {14: "colocation-10mw"}, bus=14, **kw)
    with pytest.raises(InputError, match=r"seed: a mapping must give every facility's bus "
                                         r"a seed; missing \[12\]"):
        grid.cosimulate(net, {14: "colocation-10mw", 12: "colocation-10mw"}, seed={14: 1}, **kw)
    with pytest.raises(InputError, match=r"the mapping of facilities is empty"):
        grid.cosimulate(net, {}, **kw)

