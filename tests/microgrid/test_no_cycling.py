"""Forbidden means forbidden: zero energy is zero battery power, and no dispatch charges and
discharges at once (the battery as a hidden dump load) unless the user allows it.

Every expected figure is computed here by hand: the least energy an import ramp limit
forces into a dump is a forward recursion, the battery power needed to burn it follows from
the round-trip efficiency."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import microgrid as mg
from microgrid.complementarity import untangle

RAMP_KW_PER_H = 2000.0
PRICE = 0.06


@pytest.fixture
def drop_load() -> pd.Series:
    """A day at 30 MW, then 20 MW: import may fall by only 2 MW per hour."""
    idx = pd.date_range("2025-03-03", periods=24, freq="1h", tz="UTC")
    return pd.Series(np.where(np.arange(24) < 12, 30_000.0, 20_000.0), index=idx, name="load_kw")


def forced_dump_kw(load: np.ndarray, ramp_kw: float) -> np.ndarray:
    """The least import above the load a ramp limit forces (no storage, PV or export)."""
    imp = load.astype(float).copy()
    for t in range(1, len(imp)):
        imp[t] = max(load[t], imp[t - 1] - ramp_kw)
    return imp - load


def _kwargs(costs: mg.Costs) -> dict:
    return {"pv_availability": None, "costs": costs, "generator": mg.Generator(max_power_kw=0),
            "import_limit_kw": 40_000.0, "ramp_limit_kw_per_h": RAMP_KW_PER_H}


def _costs(battery_usd_per_kwh_year: float = 25.0) -> mg.Costs:
    return mg.Costs(70, battery_usd_per_kwh_year, 15, 60, import_usd_per_kwh=PRICE,
                    fuel_usd_per_kwh=0.12)


def test_the_issue_case_zero_energy_is_no_battery_and_the_forced_surplus_is_named(drop_load):
    dump = forced_dump_kw(drop_load.to_numpy(), RAMP_KW_PER_H)
    assert dump.sum() == 20_000.0 and dump.max() == 8_000.0  # 8 + 6 + 4 + 2 MWh
    with pytest.raises(mg.SizingInfeasibleError) as err:
        mg.size(drop_load, battery=mg.Battery(max_energy_kwh=0), **_kwargs(_costs()))
    text = str(err.value)
    assert "battery.max_energy_kwh=0" in text
    assert ("The limits force more supply than the load takes in 4 of 24 steps (first at "
            "2025-03-03 12:00:00+00:00; worst 8000 kW at 2025-03-03 12:00:00+00:00; 20000 kWh "
            "in all)") in text
    assert "Allow a dump load (max_dump_load_kw >= 8000)" in text


def test_a_dump_load_takes_the_forced_surplus_and_the_battery_stays_at_zero(drop_load):
    load = drop_load.to_numpy()
    s = mg.size(drop_load, battery=mg.Battery(max_energy_kwh=0), max_dump_load_kw=np.inf,
                **_kwargs(_costs()))
    d = s.dispatch
    assert s.battery_kwh == 0.0 and s.battery_kw == 0.0
    assert (d.battery_charge_kw == 0).all() and (d.battery_discharge_kw == 0).all()
    np.testing.assert_allclose(d.dump_load_kw, forced_dump_kw(load, RAMP_KW_PER_H), atol=1e-6)
    # the cost: every imported kWh, dumped ones included, for 365 such days
    assert s.total_annual_cost_usd == pytest.approx(PRICE * (load.sum() + 20_000.0) * 365)
    np.testing.assert_allclose(d.grid_import_kw, d.load_kw + d.dump_load_kw, atol=1e-6)


def test_cycling_the_battery_as_a_dump_is_refused_unless_allowed(drop_load):
    # storage energy priced out of reach: the cheapest way to burn the surplus is to charge
    # and discharge at once with no energy capacity at all
    costs = _costs(battery_usd_per_kwh_year=10_000.0)
    with pytest.raises(mg.SizingInfeasibleError) as err:
        mg.size(drop_load, **_kwargs(costs))
    assert ("the least-cost dispatch burns 20000 kWh by charging and discharging the battery "
            "at once in 4 of 24 steps") in str(err.value)
    assert "allow_simultaneous_charge_discharge=True" in str(err.value)

    s = mg.size(drop_load, allow_simultaneous_charge_discharge=True, **_kwargs(costs))
    eta = mg.Battery().round_trip_efficiency
    assert s.burned_by_cycling_kwh == pytest.approx(20_000.0, rel=1e-9)
    # burning 8 MW in one hour at 90.25 % round trip needs 8000 / (1 - eta) kW of charging
    assert s.battery_kw == pytest.approx(8_000.0 / (1 - eta), rel=1e-9)
    assert s.battery_kwh == pytest.approx(0.0, abs=1e-6)


def test_a_dump_load_too_small_names_what_would_do(drop_load):
    costs = _costs(battery_usd_per_kwh_year=10_000.0)
    with pytest.raises(mg.SizingInfeasibleError) as err:
        mg.size(drop_load, max_dump_load_kw=5_000.0, **_kwargs(costs))
    assert "Allow a dump load (max_dump_load_kw >= 8000)" in str(err.value)


def test_untangle_keeps_balance_and_state_of_charge():
    eta = 0.9
    dispatch = pd.DataFrame({
        "load_kw": [100.0, 100.0, 100.0],
        "pv_kw": [50.0, 0.0, 0.0],
        "pv_curtailed_kw": [0.0, 0.0, 0.0],
        "battery_charge_kw": [40.0, 40.0, 40.0],
        "battery_discharge_kw": [30.0, 36.0, 0.0],
        "grid_import_kw": [60.0, 104.0, 140.0],
        "dump_load_kw": [0.0, 0.0, 0.0],
    })
    out, left = untangle(dispatch, eta, dump_max_kw=2.0, tol_kw=1e-9)
    # step 0: delta = min(40, 30 / 0.9) = 33.33; burned 3.33 kW comes off PV
    assert out.battery_discharge_kw[0] == pytest.approx(0.0)
    assert out.battery_charge_kw[0] == pytest.approx(40 - 30 / 0.9)
    assert out.pv_curtailed_kw[0] == pytest.approx(0.1 * 30 / 0.9)
    # step 1: burned 0.1 * 40 = 4 kW, no PV, a 2 kW dump: left as it was, and reported
    assert left.tolist() == [False, True, False]
    assert out.battery_charge_kw[1] == 40.0 and out.battery_discharge_kw[1] == 36.0
    supply = out.pv_kw + out.battery_discharge_kw + out.grid_import_kw
    sinks = out.load_kw + out.battery_charge_kw + out.dump_load_kw
    before = dispatch.pv_kw + dispatch.battery_discharge_kw + dispatch.grid_import_kw - (
        dispatch.load_kw + dispatch.battery_charge_kw)
    np.testing.assert_allclose(supply - sinks, [0.0, before[1], before[2]], atol=1e-12)
    stored = 0.95 * out.battery_charge_kw - out.battery_discharge_kw / (0.9 / 0.95)
    stored_before = 0.95 * dispatch.battery_charge_kw - dispatch.battery_discharge_kw / (0.9 / 0.95)
    np.testing.assert_allclose(stored, stored_before, atol=1e-12)


def test_no_step_charges_and_discharges_on_measured_load_with_curtailed_pv(
        hawk_3d_kw, linopy_reference):
    # PV larger than the load at noon, no export: curtailment and the battery's own losses
    # are two ways to shed it; the dispatch must never use both battery flows at once, and
    # the optimum must be that of the independent linopy formulation
    from microgrid.sizing import prepare_inputs

    load = hawk_3d_kw * (100_000.0 / 3166.0)
    pv = mg.pv_availability(index=load.index)
    kwargs = {"costs": mg.Costs(20, 25, 15, 60, import_usd_per_kwh=0.12, fuel_usd_per_kwh=0.2),
              "battery": mg.Battery(0.95, 0.94), "generator": mg.Generator(max_power_kw=0),
              "import_limit_kw": 80_000.0, "ramp_limit_kw_per_h": 10_000.0}
    s = mg.size(load, pv_availability=pv, **kwargs)
    d = s.dispatch
    assert s.pv_kwp > 0 and s.battery_kwh > 0 and d.pv_curtailed_kw.max() > 0
    assert np.minimum(d.battery_charge_kw, d.battery_discharge_kw).max() <= 1e-3
    balance = (d.pv_kw + d.battery_discharge_kw + d.grid_import_kw + d.generator_kw
               - d.load_kw - d.battery_charge_kw - d.grid_export_kw - d.dump_load_kw)
    assert np.abs(balance).max() <= 1e-3
    data, _ = prepare_inputs(load, pv_availability=pv, **kwargs)
    reference = linopy_reference.solve_linopy(linopy_reference.build_linopy(data))
    assert s.total_annual_cost_usd == pytest.approx(reference, rel=1e-6)


def test_max_c_rate_links_power_to_energy(hawk_3d_kw):
    load = hawk_3d_kw * (100_000.0 / 3166.0)
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.08,
                     demand_charge_usd_per_kw_month=30.0)
    free = mg.size(load, pv_availability=None, costs=costs, import_limit_kw=None)
    assert free.battery_kw > 0.25 * free.battery_kwh  # the link binds in this case
    linked = mg.size(load, pv_availability=None, costs=costs, import_limit_kw=None,
                     battery=mg.Battery(max_c_rate_per_h=0.25))
    assert linked.battery_kw <= 0.25 * linked.battery_kwh * (1 + 1e-9) + 1e-6
    assert linked.total_annual_cost_usd >= free.total_annual_cost_usd * (1 - 1e-9)


def test_bad_options_are_refused(drop_load):
    with pytest.raises(ValueError, match=r"size: max_dump_load_kw must be a number >= 0 \[kW\]"):
        mg.size(drop_load, max_dump_load_kw=-1.0, **_kwargs(_costs()))
    with pytest.raises(ValueError, match="allow_simultaneous_charge_discharge must be True or"):
        mg.size(drop_load, allow_simultaneous_charge_discharge="yes", **_kwargs(_costs()))
    with pytest.raises(ValueError, match=r"Battery.max_c_rate_per_h: expected a non-negative"):
        mg.Battery(max_c_rate_per_h=-2.0)


def test_a_generator_minimum_load_in_an_outage_is_dumped_not_cycled(hours_2d):
    # 200 kW of load, one 1,000 kW unit that runs at 50 % at least: in the outage the unit
    # must run and 300 kW of its output has nowhere to go but the dump load
    load = pd.Series(200.0, index=hours_2d, name="load_kw")
    outage = [(hours_2d[10], hours_2d[14])]
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.06, fuel_usd_per_kwh=0.12)
    gen = mg.Generator(min_load_fraction=0.5, unit_size_kw=1000.0)
    kwargs = {"pv_availability": None, "costs": costs, "generator": gen,
              "import_limit_kw": 1000.0, "outages": outage}
    with pytest.raises(mg.SizingInfeasibleError, match=r"force more supply than the load takes "
                       r"in 4 of 48 steps .*worst 300 kW.*max_dump_load_kw >= 300"):
        mg.size(load, battery=mg.Battery(max_energy_kwh=0), **kwargs)
    s = mg.size(load, battery=mg.Battery(max_energy_kwh=0), max_dump_load_kw=np.inf, **kwargs)
    d = s.dispatch
    np.testing.assert_allclose(d.dump_load_kw.iloc[10:14], 300.0, atol=1e-6)
    np.testing.assert_allclose(d.generator_kw.iloc[10:14], 500.0, atol=1e-6)
    assert d.dump_load_kw.drop(d.index[10:14]).abs().max() <= 1e-6
    # with storage allowed the battery may take it, but never by charging and discharging
    # at once
    stored = mg.size(load, max_dump_load_kw=np.inf, **kwargs).dispatch
    assert np.minimum(stored.battery_charge_kw, stored.battery_discharge_kw).max() <= 1e-6
