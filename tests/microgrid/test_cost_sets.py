"""Sourced cost sets and generator technologies: annualisation by hand, messages."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest

import microgrid as mg
from aiload.errors import InputError

DATA = Path(mg.__file__).parent / "data"
CPI = {2019: 255.657, 2022: 292.655, 2023: 304.702}  # BLS CPI-U annual averages


def crf(rate: float, years: float) -> float:
    growth = (1 + rate) ** years
    return rate * growth / (growth - 1)


def test_atb_costs_annualised_by_hand():
    c = mg.costs("atb2024-moderate", year=2025, discount_rate=0.07)
    # PV: 1,050 USD/kWdc over 30 years at 7 % + 16 USD/kWdc-yr, already in 2022 USD
    assert c.pv_usd_per_kwp_year == pytest.approx(1050 * 0.0805864 + 16, rel=1e-6)
    # battery: 310 USD/kWh and 360 USD/kW over 15 years + 2.5 %/yr fixed O&M
    assert c.battery_usd_per_kwh_year == pytest.approx(310 * (0.1097946 + 0.025), rel=1e-6)
    assert c.battery_usd_per_kw_year == pytest.approx(360 * (0.1097946 + 0.025), rel=1e-6)
    # gas engines (EIA 2020, 2019 USD): 1,810 USD/kW over 25 years + 35.16 USD/kW-yr
    to_2022 = CPI[2022] / CPI[2019]
    assert c.generator_usd_per_kw_year == pytest.approx(
        to_2022 * (1810 * 0.0858105 + 35.16), rel=1e-6)
    # 8,295 Btu/kWh of gas at 4.4 USD/MMBtu (2023 USD) + 5.69 USD/MWh (2019 USD)
    assert c.fuel_usd_per_kwh == pytest.approx(
        8295e-6 * 4.4 * CPI[2022] / CPI[2023] + 5.69e-3 * to_2022, rel=1e-9)
    assert c.import_usd_per_kwh == pytest.approx(0.080 * CPI[2022] / CPI[2023], rel=1e-9)


def test_later_year_and_lower_rate_are_cheaper():
    base = mg.costs("atb2024-moderate", year=2025, discount_rate=0.07)
    later = mg.costs("atb2024-moderate", year=2030, discount_rate=0.07)
    cheap_money = mg.costs("atb2024-moderate", year=2025, discount_rate=0.03)
    assert later.pv_usd_per_kwp_year < base.pv_usd_per_kwp_year
    assert later.battery_usd_per_kwh_year < base.battery_usd_per_kwh_year
    assert cheap_money.pv_usd_per_kwp_year == pytest.approx(1050 * crf(0.03, 30) + 16)


def test_overrides_and_generator_choice():
    c = mg.costs("atb2024-moderate", generator="diesel", import_usd_per_kwh=0.1,
                 demand_charge_usd_per_kw_month=12.0)
    assert c.import_usd_per_kwh == 0.1 and c.demand_charge_usd_per_kw_month == 12.0
    # diesel at 30.6 USD/MMBtu (2023 USD) and 10,600 Btu/kWh: fuel dominates
    assert c.fuel_usd_per_kwh > 0.3
    none = mg.costs("atb2024-moderate", generator=None)
    assert none.generator_usd_per_kw_year == 0 and none.fuel_usd_per_kwh == 0


def test_technologies_emissions_and_generator():
    gas = mg.technology("gas_engine")
    assert gas.emission_kg_per_kwh == pytest.approx(8295 * 53.06e-6)  # EPA 53.06 kg/MMBtu
    assert mg.technology("diesel").emission_kg_per_kwh == pytest.approx(10600 * 73.96e-6)
    g = mg.technology("diesel").generator()
    assert g.max_run_hours_per_year == 100.0 and g.min_load_fraction == 0.0
    uc = gas.generator(unit_commitment=True, max_power_kw=50_000)
    assert uc.unit_size_kw == 5600 and uc.min_load_fraction == gas.min_load_fraction
    assert uc.max_power_kw == 50_000
    assert math.isinf(gas.generator().max_run_hours_per_year)
    assert set(mg.technology_names()) == {"gas_engine", "gas_turbine", "fuel_cell", "diesel"}


def test_cost_set_citations_and_carbon():
    cs = mg.cost_set("atb2024-moderate")
    text = " ".join(cs.citations.values())
    for needle in ("Annual Technology Baseline", "NREL/TP-6A40-85332", "Social Cost",
                   "Electric Power Annual", "NREL/TP-6A20-56290"):
        assert needle in text
    # EPA's 190 USD/t is in 2020 USD
    assert cs.carbon_price_usd_per_t(2025) == pytest.approx(190 * CPI[2022] / 258.811)


def test_every_value_names_a_known_source_and_entry():
    sets = tomllib.loads((DATA / "cost_sets.toml").read_text())
    gens = tomllib.loads((DATA / "generators.toml").read_text())
    for table in (*sets["sets"].values(), gens["technologies"]):
        for part in table.values():
            if isinstance(part, dict) and "source" in part:
                assert part["source"] in {**sets["sources"], **gens["sources"]}
                assert part["entry"] in {"transcribed", "approximate", "derived"}


def test_pv_density_derived_from_ong_2013():
    # 7.6 acres/MWac total area, 0.404686 ha/acre, dc/ac 1.3 -> ~420 kWdc/ha
    assert mg.pv_kwp_per_ha() == pytest.approx(1000 / (7.6 * 0.404686) * 1.3, rel=0.01)


@pytest.mark.parametrize("call, message", [
    (lambda: mg.costs("atb2024-moderat"),
     "unknown cost set 'atb2024-moderat'.*Did you mean 'atb2024-moderate'"),
    (lambda: mg.costs("atb2024-moderate", year=2027),
     r"no figures for year 2027; expected one of \[2025, 2030\]"),
    (lambda: mg.costs("atb2024-moderate", fuel_usd=0.1),
     "'fuel_usd' is not a field of microgrid.Costs.*fuel_usd_per_kwh"),
    (lambda: mg.costs("atb2024-moderate", discount_rate=7), "discount_rate"),
    (lambda: mg.technology("gas engine"), "Did you mean 'gas_engine'"),
    (lambda: mg.costs("atb2024-moderate", import_usd_per_kwh=-1), "non-negative"),
])
def test_messages(call, message):
    with pytest.raises(InputError, match=message):
        call()
