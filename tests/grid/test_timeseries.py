"""grid.timeseries against pandapower's own runpp, and the input contract."""

from __future__ import annotations

import math

import numpy as np
import pandapower as pp
import pandas as pd
import pytest

import grid
from aiload.errors import InputError

PF = 0.97
TAN = math.tan(math.acos(PF))


@pytest.mark.parametrize(("name", "bus", "peak_mw"), [("cigre_mv", 5, 4.0), ("case118", 50, 150.0)])
def test_timeseries_equals_runpp_at_sampled_steps(name, bus, peak_mw, lumi_kw, scale_to, runpp_ref):
    net = grid.networks.load(name)
    before = pp.to_json(net)
    load = scale_to(lumi_kw.iloc[:48], peak_mw)
    background = pd.Series(np.linspace(0.6, 1.1, len(load)), index=load.index)
    res = grid.timeseries(net, load, bus=bus, power_factor=PF, background=background,
                          enforce_q_lims=False)  # as runpp_ref; Q limits: test_qlims.py
    assert pp.to_json(net) == before, "the input network was modified"
    assert res.converged.all()
    assert res.engine == "lightsim2grid", res.engine_reason
    for k in (0, 17, int(np.argmax(load.to_numpy()))):
        p = float(load.iloc[k])
        ref = runpp_ref(net, bus, p, p * TAN, background.iloc[k])
        np.testing.assert_allclose(res.vm_pu.iloc[k], ref.res_bus.vm_pu, atol=1e-6, rtol=0)
        np.testing.assert_allclose(res.line_loading_percent.iloc[k], ref.res_line.loading_percent,
                                   atol=1e-4, rtol=0)
        np.testing.assert_allclose(res.trafo_loading_percent.iloc[k],
                                   ref.res_trafo.loading_percent, atol=1e-4, rtol=0)
        assert res.ext_grid_p_mw.iloc[k] == pytest.approx(ref.res_ext_grid.p_mw.sum(), abs=1e-5)


def test_reference_engine_agrees_with_fast_engine(lumi_kw, scale_to):
    net = grid.networks.load("cigre_mv")
    load = scale_to(lumi_kw.iloc[:6], 3.0)
    fast = grid.timeseries(net, load, bus=9, engine="newton")
    slow = grid.timeseries(net, load, bus=9, engine="runpp")
    np.testing.assert_allclose(fast.vm_pu, slow.vm_pu, atol=1e-6, rtol=0)
    assert slow.engine == "runpp"


def test_kw_series_is_converted_to_mw_at_the_boundary(lumi_kw, scale_to):
    net = grid.networks.load("cigre_mv")
    mw = scale_to(lumi_kw.iloc[:4], 2.0)
    kw = (mw * 1000.0).rename("facility_kw")
    a = grid.timeseries(net, mw, bus=5)
    b = grid.timeseries(net, kw, bus=5)
    np.testing.assert_allclose(a.vm_pu, b.vm_pu, atol=1e-12)
    np.testing.assert_allclose(b.facility_mw, mw, rtol=1e-12)

    class FakeFacility:  # duck-typed FacilityLoad: .power with facility_kw
        power = pd.DataFrame({"facility_kw": kw})

    c = grid.timeseries(net, FakeFacility(), bus=5)
    np.testing.assert_allclose(c.vm_pu, a.vm_pu, atol=1e-12)


def test_non_converging_step_is_flagged_not_skipped(lumi_kw, scale_to, runpp_ref):
    net = grid.networks.load("cigre_mv")
    load = scale_to(lumi_kw.iloc[:5], 2.0)
    load.iloc[2] = 500.0  # far beyond what a 20 kV feeder can carry
    res = grid.timeseries(net, load, bus=5)
    assert res.converged.tolist() == [True, True, False, True, True]
    assert res.vm_pu.iloc[2].isna().all()
    with pytest.raises(pp.LoadflowNotConverged):
        runpp_ref(net, 5, 500.0, 500.0 * math.tan(math.acos(0.99)))
    ref = runpp_ref(net, 5, float(load.iloc[3]), float(load.iloc[3]) * math.tan(math.acos(0.99)))
    np.testing.assert_allclose(res.vm_pu.iloc[3], ref.res_bus.vm_pu, atol=1e-6)
    table = res.violations()
    failed = table[table.quantity == "converged"]
    assert failed.time.tolist() == [load.index[2]]


def test_violations_table_matches_a_direct_count(lumi_kw, scale_to):
    net = grid.networks.load("cigre_mv")
    load = scale_to(lumi_kw.iloc[:12], 6.0)
    res = grid.timeseries(net, load, bus=11)
    limits = grid.Limits(vm_min_pu=0.92, loading_max_percent=80.0)
    table = res.violations(limits)
    low = int((res.vm_pu < 0.92).to_numpy().sum())
    over = int((res.line_loading_percent > 80).to_numpy().sum()
               + (res.trafo_loading_percent > 80).to_numpy().sum())
    assert low > 0 and over > 0
    assert (table.quantity == "vm_pu").sum() == low
    assert (table.quantity == "loading_percent").sum() == over
    assert list(table.columns) == ["time", "element", "quantity", "value", "limit"]
    row = table[table.quantity == "vm_pu"].iloc[0]
    bus = int(row.element.split()[1])
    assert res.vm_pu.at[row.time, bus] == row.value < row.limit


# --- bad input: clear errors before any long run -------------------------------------------


@pytest.fixture
def hourly():
    idx = pd.date_range("2024-06-01", periods=4, freq="h", tz="UTC")
    return pd.Series([1.0, 2.0, 1.5, 1.0], index=idx, name="facility_mw")


def test_missing_bus(hourly):
    net = grid.networks.load("cigre_mv")
    with pytest.raises(InputError, match=r"bus 99 does not exist .*15 buses"):
        grid.timeseries(net, hourly, bus=99)


def test_series_with_gap(hourly):
    gappy = hourly.drop(hourly.index[2])
    gappy.index.freq = None
    with pytest.raises(InputError, match="step changes"):
        grid.timeseries(grid.networks.load("cigre_mv"), gappy, bus=5)


def test_naive_index(hourly):
    naive = hourly.tz_localize(None)
    with pytest.raises(InputError, match=r"naive.*tz_localize"):
        grid.timeseries(grid.networks.load("cigre_mv"), naive, bus=5)


@pytest.mark.parametrize("pf", [0.0, -0.9, 1.2, float("nan")])
def test_power_factor_outside_range(hourly, pf):
    with pytest.raises(InputError, match=r"power_factor: expected a number in \(0, 1\]"):
        grid.timeseries(grid.networks.load("cigre_mv"), hourly, bus=5, power_factor=pf)


def test_network_that_does_not_converge_without_facility(hourly):
    net = grid.networks.load("case33bw")
    net.load["p_mw"] *= 40.0  # far past the feeder's voltage-collapse point
    with pytest.raises(pp.LoadflowNotConverged):
        pp.runpp(net, numba=False)
    with pytest.raises(InputError, match="does not converge even without the facility"):
        grid.timeseries(net, hourly, bus=5)


def test_watt_series_is_refused(hourly):
    with pytest.raises(InputError, match=r"named 'power_w'.*MW"):
        grid.timeseries(grid.networks.load("cigre_mv"), hourly.rename("power_w"), bus=5)


def test_unknown_engine(hourly):
    with pytest.raises(InputError, match="engine: expected one of"):
        grid.timeseries(grid.networks.load("cigre_mv"), hourly, bus=5, engine="fast")


def test_long_series_is_solved_in_chunks_with_the_same_result(lumi_kw, scale_to, monkeypatch):
    from grid import powerflow

    net = grid.networks.load("cigre_mv")
    load = scale_to(lumi_kw.iloc[:30], 3.0)
    whole = grid.timeseries(net, load, bus=5)
    monkeypatch.setattr(powerflow, "CHUNK_STEPS", 7)
    chunked = grid.timeseries(net, load, bus=5)
    np.testing.assert_allclose(chunked.vm_pu, whole.vm_pu, atol=1e-9)
    np.testing.assert_allclose(chunked.ext_grid_p_mw, whole.ext_grid_p_mw, atol=1e-7)
    assert chunked.engine == whole.engine == "lightsim2grid"


def test_a_real_facility_load_is_taken_in_kw(runpp_ref):
    import aiload

    site = aiload.facility("inference-1mw", start=pd.Timestamp("2024-01-01", tz="UTC"),
                           end="1D", freq="1h", seed=1, progress=False)
    net = grid.networks.load("cigre_mv")
    res = grid.timeseries(net, site, bus=9)
    np.testing.assert_allclose(res.facility_mw, site.power["facility_kw"] / 1000.0, rtol=1e-12)
    k = int(np.argmax(res.facility_mw.to_numpy()))
    p = float(site.power["facility_kw"].iloc[k]) / 1000.0
    ref = runpp_ref(net, 9, p, p * math.tan(math.acos(0.99)))
    np.testing.assert_allclose(res.vm_pu.iloc[k], ref.res_bus.vm_pu, atol=1e-6)
