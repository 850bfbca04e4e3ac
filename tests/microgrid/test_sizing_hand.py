"""Hand-solvable sizing cases: every expected number is worked out in the comments."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import microgrid as mg

NO_GEN = mg.Generator(max_power_kw=0.0)
NO_STORAGE = mg.Battery(max_energy_kwh=0.0, max_power_kw=0.0)


def annual(hours: int) -> float:
    return 8760.0 / hours


def test_cheap_unlimited_grid_builds_nothing(hawk_3d_kw):
    # Real 3 days of load (15 min). Grid energy at 0.02 USD/kWh: a kWp of PV yields at most
    # ~1,400 kWh/year here -> saves <= 28 USD/year against 70 USD/year of capital; flat
    # price -> a battery only loses energy; fuel 0.12 > 0.02 -> no generator.
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.02, fuel_usd_per_kwh=0.12)
    pv = mg.pv_availability(index=hawk_3d_kw.index)
    s = mg.size(hawk_3d_kw, pv_availability=pv, costs=costs, import_limit_kw=1e6)
    assert s.pv_kwp == pytest.approx(0, abs=1e-6)
    assert s.battery_kwh == pytest.approx(0, abs=1e-6)
    assert s.battery_kw == pytest.approx(0, abs=1e-6)
    assert s.generator_kw == pytest.approx(0, abs=1e-6)
    energy_kwh = hawk_3d_kw.sum() * 0.25
    expected = 0.02 * energy_kwh * annual(72)
    assert s.total_annual_cost_usd == pytest.approx(expected, rel=1e-9)
    assert s.lcoe_usd_per_mwh == pytest.approx(20.0, rel=1e-9)
    assert s.dispatch["grid_import_kw"].to_numpy() == pytest.approx(hawk_3d_kw.to_numpy())


@pytest.mark.parametrize("export_usd_per_kwh, export_limit_kw", [(0.0, 0.0), (-0.05, 1e4)])
def test_a_negative_export_price_curtails_pv_instead(hours_2d, export_usd_per_kwh,
                                                     export_limit_kw):
    # PV availability a triangle over 08:00-16:00: 0.25, 0.5, 0.75, 1, 0.75, 0.5, 0.25 at
    # 09..15 h (4 kWh/kWp a day). Flat 1,000 kW, grid at 0.12 USD/kWh, no battery or
    # generator. A kWp beyond P saves 0.12 USD/kWh in the hours where a*P < 1,000: below
    # P = 1,000/0.75 that is the 0.25/0.5/0.75 hours (3 kWh/day: 131 USD/year > 70), above
    # it only the 0.25/0.5 hours (1.5 kWh/day: 65.7 USD/year < 70) -> P = 1,333.3 kWp.
    # Exporting at a negative price only adds cost: the same optimum as with export
    # forbidden, and the surplus at 12:00 (1,333.3 - 1,000 kW) is curtailed.
    avail = pd.Series(np.clip(1.0 - np.abs(hours_2d.hour - 12) / 4.0, 0.0, None), index=hours_2d)
    load = pd.Series(1000.0, index=hours_2d)
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.12,
                     export_usd_per_kwh=export_usd_per_kwh)
    s = mg.size(load, pv_availability=avail, costs=costs, battery=NO_STORAGE, generator=NO_GEN,
                import_limit_kw=2000.0, export_limit_kw=export_limit_kw)
    p = 1000.0 / 0.75
    assert s.pv_kwp == pytest.approx(p, rel=1e-9)
    # PV used per day: 2 * (0.25 + 0.5) * P + 3 * 1,000 kWh = 5,000 kWh
    grid_kwh_per_day = 24 * 1000.0 - (1.5 * p + 3000.0)
    assert s.total_annual_cost_usd == pytest.approx(70 * p + 0.12 * grid_kwh_per_day * 365,
                                                    rel=1e-9)
    assert s.dispatch["grid_export_kw"].abs().max() == pytest.approx(0.0, abs=1e-6)
    noon = s.dispatch[s.dispatch.index.hour == 12]
    assert noon["pv_curtailed_kw"].to_numpy() == pytest.approx([p - 1000.0] * 2, rel=1e-9)


def test_a_positive_export_price_exports_the_surplus(hours_2d):
    # the case above at +0.05 USD/kWh: PV is built to the 10,000 kW export limit (the noon
    # hour exports 11,000 - 1,000 kW) -- the surplus the negative price left curtailed
    avail = pd.Series(np.clip(1.0 - np.abs(hours_2d.hour - 12) / 4.0, 0.0, None), index=hours_2d)
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.12, export_usd_per_kwh=0.05)
    s = mg.size(pd.Series(1000.0, index=hours_2d), pv_availability=avail, costs=costs,
                battery=NO_STORAGE, generator=NO_GEN, import_limit_kw=2000.0,
                export_limit_kw=1e4)
    assert s.dispatch["grid_export_kw"].max() == pytest.approx(1e4, rel=1e-9)


def peak_load(index: pd.DatetimeIndex) -> pd.Series:
    # 1,000 kW, 1,500 kW from 17:00 to 21:00 (4 hours) each day
    load = pd.Series(1000.0, index=index)
    load[(index.hour >= 17) & (index.hour < 21)] = 1500.0
    return load


@pytest.fixture
def shaved(hours_2d, plain_costs):
    battery = mg.Battery(charge_efficiency=0.9, discharge_efficiency=0.9, min_soc_fraction=0.2)
    load = peak_load(hours_2d)
    return load, battery, mg.size(
        load,
        pv_availability=None,
        costs=plain_costs,
        battery=battery,
        generator=NO_GEN,
        import_limit_kw=1200.0,
    )


def test_battery_sized_exactly_to_shave_the_peak(shaved):
    load, battery, s = shaved
    # 300 kW above the 1,200 kW limit for 4 h: P_b = 300 kW; 1,200 kWh delivered costs
    # 1,200 / 0.9 kWh of charge state; only 80 % of E_b is usable -> E_b = 1,666.67 kWh
    assert s.battery_kw == pytest.approx(300.0, rel=1e-7)
    assert s.battery_kwh == pytest.approx(1200 / 0.9 / 0.8, rel=1e-7)
    # the 1,333.3 kWh of charge state needs 1,333.3 / 0.9 = 1,481.5 kWh from the grid a day
    import_kwh = load.sum() - 2 * 1200.0 + 2 * 1200 / 0.9 / 0.9
    expected = 25 * 1200 / 0.9 / 0.8 + 15 * 300 + 0.06 * import_kwh * annual(48)
    assert s.total_annual_cost_usd == pytest.approx(expected, rel=1e-7)
    assert s.dispatch["grid_import_kw"].max() <= 1200.0 + 1e-6


def test_state_of_charge_is_cyclic_and_follows_the_dynamics(shaved):
    _, battery, s = shaved
    d = s.dispatch
    soc = d["battery_soc_kwh"].to_numpy()
    step = (
        battery.charge_efficiency * d["battery_charge_kw"]
        - d["battery_discharge_kw"] / battery.discharge_efficiency
    ).to_numpy()
    # soc at each label plus the step's change is the soc at the next label; after the
    # last step it must come back to the first label's value (s_0 = s_T)
    after = soc + step * 1.0
    assert after[:-1] == pytest.approx(soc[1:], abs=1e-6)
    assert after[-1] == pytest.approx(soc[0], abs=1e-6)
    assert soc.min() >= 0.2 * s.battery_kwh - 1e-6
    assert soc.max() <= s.battery_kwh + 1e-6


def test_dispatch_balances_every_step(shaved):
    load, _, s = shaved
    d = s.dispatch
    supply = d.pv_kw + d.battery_discharge_kw + d.grid_import_kw + d.generator_kw
    demand = load + d.battery_charge_kw + d.grid_export_kw
    assert (supply - demand).abs().max() < 1e-6
    assert sum(s.annual_cost_usd.values()) == pytest.approx(s.total_annual_cost_usd, rel=1e-12)


def test_demand_charge_is_annualised_by_month_share(hours_2d, plain_costs):
    # 48 h of a 31-day month at a flat 1,000 kW: the month's peak is 1,000 kW and, scaled
    # to a year, 12 such months -> 12 * 10 USD/kW * 1,000 kW = 120,000 USD/year
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.06, demand_charge_usd_per_kw_month=10)
    load = pd.Series(1000.0, index=hours_2d)
    s = mg.size(load, pv_availability=None, costs=costs, battery=NO_STORAGE,
                generator=NO_GEN, import_limit_kw=5000.0)
    assert s.annual_cost_usd["demand_charge"] == pytest.approx(120_000.0, rel=1e-9)


def test_outage_is_carried_by_the_generator(hours_2d, plain_costs):
    load = pd.Series(1000.0, index=hours_2d)
    start = hours_2d[10]
    s = mg.size(load, pv_availability=None, costs=plain_costs, battery=NO_STORAGE,
                generator=mg.Generator(emission_kg_per_kwh=0.5),
                carbon=mg.Carbon(grid_kg_per_kwh=0.4),
                import_limit_kw=5000.0, outages=[(start, start + pd.Timedelta(hours=4))])
    # the whole load during 4 h of outage; fuel (0.12) costs more than grid (0.06) after
    assert s.generator_kw == pytest.approx(1000.0, rel=1e-9)
    assert s.dispatch["grid_import_kw"].iloc[10:14].abs().max() < 1e-9
    expected = 60 * 1000 + (0.12 * 4000 + 0.06 * 44_000) * annual(48)
    assert s.total_annual_cost_usd == pytest.approx(expected, rel=1e-9)
    # 44,000 kWh of grid at 0.4 kg/kWh and 4,000 kWh generated at 0.5 kg/kWh, per year [t]
    assert s.emissions_t_per_year == pytest.approx(
        (0.4 * 44_000 + 0.5 * 4000) * annual(48) / 1000, rel=1e-9
    )


def test_unit_commitment_respects_minimum_load(hours_2d, plain_costs):
    # 200 kW above the 1,000 kW limit for 4 h; units of 500 kW that run at >= 50 %: one
    # unit, and while on it makes its minimum 250 kW (fuel costs more than grid energy)
    load = peak_load(hours_2d).where(lambda x: x < 1500, 1200.0)
    gen = mg.Generator(min_load_fraction=0.5, unit_size_kw=500.0)
    s = mg.size(load, pv_availability=None, costs=plain_costs, battery=NO_STORAGE,
                generator=gen, import_limit_kw=1000.0)
    assert s.generator_kw == pytest.approx(500.0, rel=1e-9)
    on = s.dispatch["generator_kw"].to_numpy()
    peak = (hours_2d.hour >= 17) & (hours_2d.hour < 21)
    assert on[peak] == pytest.approx(np.full(peak.sum(), 250.0), rel=1e-7)
    assert np.abs(on[~peak]).max() < 1e-7
    expected = 60 * 500 + (0.12 * 250 * 8 + 0.06 * (load.sum() - 250 * 8)) * annual(48)
    assert s.total_annual_cost_usd == pytest.approx(expected, rel=1e-6)


def test_ramp_limit_holds_at_the_interconnection(hours_2d, plain_costs):
    load = peak_load(hours_2d)
    s = mg.size(load, pv_availability=None, costs=plain_costs, generator=NO_GEN,
                import_limit_kw=5000.0, ramp_limit_kw_per_h=100.0)
    steps = np.diff(s.dispatch["grid_import_kw"].to_numpy())
    assert np.abs(steps).max() <= 100.0 + 1e-6
    # the 500 kW jump needs storage
    assert s.battery_kw > 0


@pytest.mark.parametrize("generator", [NO_GEN, mg.Generator(min_load_fraction=0.5,
                                                         unit_size_kw=500.0)],
                         ids=["lp", "unit-commitment"])
def test_the_ramp_limit_holds_the_net_flow_when_export_is_allowed(hours_2d, plain_costs,
                                                                  generator):
    # the load falls 1,000 -> 200 kW for 10:00-12:00 with a 300 kW/h ramp limit. Export paid
    # 0.05 USD/kWh (below import, 0.06) must not let import stay up while the surplus goes
    # out: the meter sees import minus export, so the ramp holds that (the LP formerly
    # exported 135 MWh and sized less storage). With nothing on site to export, allowing
    # export changes nothing: the optimum of export forbidden.
    load = pd.Series(1000.0, index=hours_2d)
    load[(hours_2d.hour >= 10) & (hours_2d.hour < 12)] = 200.0
    kwargs = dict(pv_availability=None, generator=generator, import_limit_kw=2000.0,
                  ramp_limit_kw_per_h=300.0)
    forbidden = mg.size(load, costs=plain_costs, **kwargs)
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.06, fuel_usd_per_kwh=0.12,
                     export_usd_per_kwh=0.05)
    allowed = mg.size(load, costs=costs, export_limit_kw=1e4, **kwargs)
    d = allowed.dispatch
    net = (d["grid_import_kw"] - d["grid_export_kw"]).to_numpy()
    assert np.abs(np.diff(net)).max() <= 300.0 + 1e-6
    assert d["grid_export_kw"].max() == pytest.approx(0.0, abs=1e-6)
    assert allowed.total_annual_cost_usd == pytest.approx(forbidden.total_annual_cost_usd,
                                                          rel=1e-7)
    assert allowed.battery_kwh == pytest.approx(forbidden.battery_kwh, rel=1e-6, abs=1e-6)


def test_import_limit_as_a_decision(hours_2d):
    # With capacity at 100 USD/kW-year, flat load 1,000 kW, no on-site option: M = 1,000 kW
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.06,
                     import_capacity_usd_per_kw_year=100.0)
    load = pd.Series(1000.0, index=hours_2d)
    s = mg.size(load, pv_availability=None, costs=costs, battery=NO_STORAGE,
                generator=NO_GEN, import_limit_kw=None)
    assert s.import_limit_kw == pytest.approx(1000.0, rel=1e-9)
    assert s.annual_cost_usd["import_capacity"] == pytest.approx(100_000.0, rel=1e-9)
