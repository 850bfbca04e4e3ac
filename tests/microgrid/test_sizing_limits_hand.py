"""Run-hour cap (eq. 25), cycle cap (eq. 26), throughput price (eq. 27) and PV land
limit (eq. 28) on hand-solvable cases: every expected number is worked out in comments."""

from __future__ import annotations

import pandas as pd
import pytest

import microgrid as mg
from aiload.errors import InputError
from scenarios.schema import MicrogridSection, SiteSection
from scenarios.studies import prepare_microgrid

NO_GEN = mg.Generator(max_power_kw=0.0)
NO_STORAGE = mg.Battery(max_energy_kwh=0.0, max_power_kw=0.0)
ANNUAL = 8760.0 / 48  # two days scaled to a year


def test_run_hour_cap_makes_the_generator_bigger(hours_2d, plain_costs):
    # 1,000 kW flat behind a 600 kW limit: 400 kW from the generator every hour. Without
    # a cap P_g = 400 kW. Capped at H = 4,380 h/yr: 400 kW * 8,760 h <= 4,380 h * P_g, so
    # P_g = 800 kW (eq. 25: the energy cap of a fleet that runs at full output when on).
    load = pd.Series(1000.0, index=hours_2d)
    free = mg.size(load, pv_availability=None, costs=plain_costs, battery=NO_STORAGE,
                   import_limit_kw=600.0)
    capped = mg.size(load, pv_availability=None, costs=plain_costs, battery=NO_STORAGE,
                     generator=mg.Generator(max_run_hours_per_year=4380.0),
                     import_limit_kw=600.0)
    assert free.generator_kw == pytest.approx(400.0, rel=1e-9)
    assert capped.generator_kw == pytest.approx(800.0, rel=1e-9)
    assert capped.total_annual_cost_usd - free.total_annual_cost_usd == pytest.approx(
        400.0 * plain_costs.generator_usd_per_kw_year, rel=1e-9)


def test_run_hour_cap_too_small_is_infeasible_with_a_message(hours_2d, plain_costs):
    load = pd.Series(1000.0, index=hours_2d)
    with pytest.raises(mg.SizingInfeasibleError, match="max_run_hours_per_year=100"):
        mg.size(load, pv_availability=None, costs=plain_costs, battery=NO_STORAGE,
                generator=mg.Generator(max_power_kw=1000.0, max_run_hours_per_year=100.0),
                import_limit_kw=600.0)


def evening_peak(index: pd.DatetimeIndex) -> pd.Series:
    # 800 kW; 1,500 kW from 18:00 to 20:00 (2 hours) each day
    load = pd.Series(800.0, index=index)
    load[(index.hour >= 18) & (index.hour < 20)] = 1500.0
    return load


LOSSLESS = dict(charge_efficiency=1.0, discharge_efficiency=1.0)


def test_cycle_cap_and_throughput_price(hours_2d, plain_costs):
    # A 1,000 kW limit: the battery delivers 500 kW for 2 h a day = 1,000 kWh a day,
    # 2,000 kWh in 48 h = 365,000 kWh a year. Lossless: E_b = 1,000 kWh, P_b = 500 kW.
    load = evening_peak(hours_2d)
    base = dict(pv_availability=None, generator=NO_GEN, import_limit_kw=1000.0)
    free = mg.size(load, costs=plain_costs, battery=mg.Battery(**LOSSLESS), **base)
    assert free.battery_kwh == pytest.approx(1000.0, rel=1e-7)
    # at most 100 cycles a year: 365,000 kWh <= 100 * E_b -> E_b = 3,650 kWh (eq. 26)
    capped = mg.size(load, costs=plain_costs,
                     battery=mg.Battery(**LOSSLESS, max_cycles_per_year=100.0), **base)
    assert capped.battery_kwh == pytest.approx(3650.0, rel=1e-7)
    assert capped.battery_kw == pytest.approx(500.0, rel=1e-7)
    # a wear price of 0.05 USD/kWh discharged: 0.05 * 365,000 = 18,250 USD/yr (eq. 27)
    worn = mg.size(load, costs=mg.Costs(**{**plain_costs.__dict__,
                                           "battery_throughput_usd_per_kwh": 0.05}),
                   battery=mg.Battery(**LOSSLESS), **base)
    assert worn.annual_cost_usd["battery_throughput"] == pytest.approx(18_250.0, rel=1e-7)
    assert worn.total_annual_cost_usd - free.total_annual_cost_usd == pytest.approx(
        18_250.0, rel=1e-7)
    assert worn.dispatch["battery_discharge_kw"].sum() * ANNUAL == pytest.approx(365_000.0)


def test_land_limits_pv(hours_2d):
    # PV at 1 USD/kWp-yr against grid at 1 USD/kWh: PV is built to the land limit.
    # 2 ha at the default 420 kWp/ha = 840 kWp; at 500 kWp/ha, 1,000 kWp (eq. 28).
    load = pd.Series(1000.0, index=hours_2d)
    pv = mg.pv_availability(index=hours_2d)
    costs = mg.Costs(1.0, 25.0, 15.0, 60.0, import_usd_per_kwh=1.0)
    kw = dict(pv_availability=pv, costs=costs, battery=NO_STORAGE, generator=NO_GEN,
              import_limit_kw=2000.0)
    assert mg.size(load, pv_area_ha=2.0, **kw).pv_kwp == pytest.approx(840.0, rel=1e-9)
    assert mg.size(load, pv_area_ha=2.0, pv_kwp_per_ha=500.0, **kw).pv_kwp == pytest.approx(
        1000.0, rel=1e-9)
    # the tighter of land and max_pv_kwp
    assert mg.size(load, pv_area_ha=2.0, max_pv_kwp=300.0, **kw).pv_kwp == pytest.approx(300.0)
    with pytest.raises(InputError, match=r"pv_area_ha.*-1"):
        mg.size(load, pv_area_ha=-1.0, **kw)


@pytest.mark.parametrize("make, message", [
    (lambda: mg.Generator(max_run_hours_per_year=9000.0), "at most 8784 h.*got 9000"),
    (lambda: mg.Generator(max_run_hours_per_year=-1.0), "max_run_hours_per_year"),
    (lambda: mg.Battery(max_cycles_per_year=-5.0), "max_cycles_per_year.*-5"),
])
def test_bad_limits(make, message):
    with pytest.raises(InputError, match=message):
        make()


def test_scenario_names_a_cost_set_and_overrides_one_price():
    section = MicrogridSection(cost_set="atb2024-moderate", cost_year=2030,
                               generator_technology="gas_turbine",
                               costs={"import_usd_per_kwh": 0.09},
                               generator={"max_power_kw": 50_000.0})
    plan = prepare_microgrid(section, SiteSection())
    expected = mg.costs("atb2024-moderate", year=2030, generator="gas_turbine",
                        import_usd_per_kwh=0.09)
    assert plan.costs == expected and plan.costs.import_usd_per_kwh == 0.09
    assert plan.generator.emission_kg_per_kwh == pytest.approx(9124 * 53.06e-6)
    assert plan.generator.max_power_kw == 50_000.0


def test_scenario_cost_set_without_a_generator_price_is_refused():
    section = MicrogridSection(cost_set="atb2024-moderate")
    with pytest.raises(InputError, match="prices a generator only through "
                                         "generator_technology"):
        prepare_microgrid(section, SiteSection())


def test_scenario_carbon_price_from_the_cost_set():
    section = MicrogridSection(cost_set="atb2024-moderate", generator_technology="gas_engine",
                               carbon={"grid_kg_per_kwh": 0.373, "price_usd_per_t": "cost_set"})
    plan = prepare_microgrid(section, SiteSection())
    # EPA's 190 USD/t (2020 USD) in 2022 USD by CPI-U 292.655 / 258.811
    assert plan.carbon.price_usd_per_t == pytest.approx(190 * 292.655 / 258.811)
    assert plan.carbon.grid_kg_per_kwh == 0.373
    no_set = MicrogridSection(carbon={"grid_kg_per_kwh": 0.4, "price_usd_per_t": "cost_set"},
                              costs={"pv_usd_per_kwp_year": 1, "battery_usd_per_kwh_year": 1,
                                     "battery_usd_per_kw_year": 1,
                                     "generator_usd_per_kw_year": 1, "import_usd_per_kwh": 1})
    with pytest.raises(InputError, match="'cost_set' needs \\[microgrid\\] cost_set"):
        prepare_microgrid(no_set, SiteSection())


def test_scenario_carbon_reaches_the_sizing(hours_2d):
    from scenarios.studies import run_microgrid

    load = pd.Series(1000.0, index=hours_2d, name="facility_kw")
    load.index.freq = "1h"
    section = MicrogridSection(cost_set="atb2024-moderate", generator_technology="gas_engine",
                               import_limit_kw=600.0, pv=None,
                               costs={"import_usd_per_kwh": 0.02},
                               carbon={"grid_kg_per_kwh": 0.4, "price_usd_per_t": 100.0})
    sizing, _ = run_microgrid(prepare_microgrid(section, SiteSection()), load)
    # grid at 0.02 + 0.04 USD/kWh of carbon beats the engines (0.042 + 0.044 + capital):
    # 600 kW of grid at 0.4 kg/kWh and 400 kW of engines at 0.440 kg/kWh, every hour
    tonnes = (400 * 8295 * 53.06e-6 + 600 * 0.4) * 8760 / 1000
    assert sizing.emissions_t_per_year == pytest.approx(tonnes, rel=1e-6)
    assert sizing.annual_cost_usd["carbon"] == pytest.approx(100.0 * tonnes, rel=1e-6)
