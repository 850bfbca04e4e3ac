"""Bad input is refused before the model is built; infeasible problems are explained."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import microgrid as mg
import microgrid.sizing as sizing_module
from aiload.errors import InputError


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if a model gets built."""

    def refuse(*args, **kwargs):
        raise AssertionError("the model was built before the input was checked")

    monkeypatch.setattr(sizing_module, "build_model", refuse)
    monkeypatch.setattr(sizing_module, "build_lp", refuse)  # the LP's builder


@pytest.mark.parametrize(
    "field, match",
    [
        ("pv_usd_per_kwp_year", r"Costs\.pv_usd_per_kwp_year: expected a non-negative number, got -1"),
        ("fuel_usd_per_kwh", r"Costs\.fuel_usd_per_kwh: .* got -1"),
    ],
)
def test_negative_costs(field, match):
    kwargs = dict(pv_usd_per_kwp_year=70, battery_usd_per_kwh_year=25,
                  battery_usd_per_kw_year=15, generator_usd_per_kw_year=60,
                  import_usd_per_kwh=0.06)
    kwargs[field] = -1
    with pytest.raises(InputError, match=match):
        mg.Costs(**kwargs)


def test_negative_price_series(hours_2d):
    # a market series with surplus hours: refused with the reason and the recipe
    prices = pd.Series(0.05, index=hours_2d)
    prices.iloc[12] = -0.01
    with pytest.raises(InputError, match=r"import_usd_per_kwh: expected non-negative numbers, "
                       r"got a series with minimum -0\.01\. Negative import prices .* "
                       r"charging and discharging the battery at once.*prices\.clip\(lower=0\)"):
        mg.Costs(70, 25, 15, 60, import_usd_per_kwh=prices)
    # the recipe gives prices that are taken
    assert mg.Costs(70, 25, 15, 60, import_usd_per_kwh=prices.clip(lower=0)) is not None


@pytest.mark.parametrize("field, value", [
    ("import_usd_per_kwh", 1e300), ("export_usd_per_kwh", -2e9), ("pv_usd_per_kwp_year", 1e10),
])
def test_a_price_beyond_any_market_is_refused_not_overflowed(hours_2d, field, value):
    # 1e300 USD/kWh times the year's hours overflowed float64 into an infinite cost term
    kwargs = dict(pv_usd_per_kwp_year=70, battery_usd_per_kwh_year=25,
                  battery_usd_per_kw_year=15, generator_usd_per_kw_year=60,
                  import_usd_per_kwh=0.06)
    kwargs[field] = pd.Series(value, index=hours_2d) if field.endswith("kwh") else value
    with pytest.raises(InputError, match=rf"Costs\.{field}: expected at most 1e\+09 .* got "
                       + re.escape(f"{abs(value):g}:")):
        mg.Costs(**kwargs)
    kwargs[field] = 1e9  # the bound itself is taken
    assert getattr(mg.Costs(**kwargs), field) == 1e9


@pytest.mark.parametrize("value, match", [
    (float("nan"), r"expected a number, got nan"),
    (float("-inf"), r"expected a finite number, got -inf"),
    (float("inf"), r"expected a finite number, got inf"),
    ("0.03", r"expected a number, got '0\.03'"),
])
def test_export_price_may_be_negative_but_must_be_a_finite_number(value, match):
    assert mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.06,
                    export_usd_per_kwh=-0.02).export_usd_per_kwh == -0.02
    with pytest.raises(InputError, match=r"Costs\.export_usd_per_kwh: " + match):
        mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.06, export_usd_per_kwh=value)


@pytest.mark.parametrize("name", ["charge_efficiency", "discharge_efficiency"])
def test_efficiency_above_one(name):
    with pytest.raises(InputError, match=rf"Battery\.{name}: expected a fraction in \(0, 1\], got 1\.2"):
        mg.Battery(**{name: 1.2})


def test_unit_commitment_needs_a_unit_size():
    with pytest.raises(InputError, match="needs unit_size_kw"):
        mg.Generator(min_load_fraction=0.3)


def test_naive_index(no_model, plain_costs):
    load = pd.Series(1000.0, index=pd.date_range("2025-01-01", periods=24, freq="1h"))
    with pytest.raises(InputError, match="load_kw: the DatetimeIndex has no time zone"):
        mg.size(load, pv_availability=None, costs=plain_costs, import_limit_kw=1e4)


def test_gap_in_the_load(no_model, hours_2d, plain_costs):
    load = pd.Series(1000.0, index=hours_2d).drop(hours_2d[5])
    load.index.freq = None
    with pytest.raises(InputError, match="load_kw: expected equally spaced.*step changes at label 5"):
        mg.size(load, pv_availability=None, costs=plain_costs, import_limit_kw=1e4)


def test_a_load_in_watts_is_taken_for_a_unit_error(no_model, hours_2d, plain_costs):
    # 100 MW given in W: 1e11 "kW" is above the 1 TW no site draws (and its year overflowed
    # float64 sums in the result before this check)
    load = pd.Series(100e6 * 1000, index=hours_2d)
    with pytest.raises(InputError, match=r"load_kw: peaks at 1e\+11 kW, above 1e\+09 kW .* given in W"):
        mg.size(load, pv_availability=None, costs=plain_costs, import_limit_kw=1e4)


def test_pv_on_another_index(no_model, hours_2d, plain_costs):
    load = pd.Series(1000.0, index=hours_2d)
    pv = mg.pv_availability(index=hours_2d.tz_convert("America/New_York") + pd.Timedelta("1h"))
    with pytest.raises(InputError, match="pv_availability is on another index than load_kw"):
        mg.size(load, pv_availability=pv, costs=plain_costs, import_limit_kw=1e4)


def test_price_series_on_another_index(no_model, hours_2d):
    load = pd.Series(1000.0, index=hours_2d)
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=pd.Series(0.05, index=hours_2d[:24]))
    with pytest.raises(InputError, match="costs.import_usd_per_kwh is a Series on another index"):
        mg.size(load, pv_availability=None, costs=costs, import_limit_kw=1e4)


def test_facility_load_object_is_accepted(hours_2d, plain_costs):
    # FacilityLoad's contract: .power with a facility_kw column
    facility = SimpleNamespace(power=pd.DataFrame({"facility_kw": 1000.0}, index=hours_2d))
    s = mg.size(facility, pv_availability=None, costs=plain_costs, import_limit_kw=1e4)
    assert s.served_energy_mwh_per_year == pytest.approx(8760.0)


def test_infeasible_names_the_binding_inputs(hours_2d, plain_costs):
    # peak 1,500 kW against 1,200 kW import + 200 kW generator and no storage:
    # 100 kW short in the 8 peak hours of the 2 days
    load = pd.Series(1000.0, index=hours_2d)
    load[(hours_2d.hour >= 17) & (hours_2d.hour < 21)] = 1500.0
    with pytest.raises(mg.SizingInfeasibleError) as info:
        mg.size(load, pv_availability=None, costs=plain_costs,
                battery=mg.Battery(max_energy_kwh=0.0), generator=mg.Generator(max_power_kw=200),
                import_limit_kw=1200.0)
    message = str(info.value)
    assert "import_limit_kw=1200 kW" in message
    assert "generator.max_power_kw=200" in message
    assert "battery.max_energy_kwh=0" in message
    assert "short in 8 of 48 steps" in message
    assert "worst 100 kW" in message


def test_unbounded_export_is_explained(hours_2d):
    # export at 0.5 USD/kWh pays more than generating at 0.1 (import dearer still: no wash
    # trade), with no export limit: the cost falls without bound
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.6, export_usd_per_kwh=0.5,
                     fuel_usd_per_kwh=0.1)
    load = pd.Series(1000.0, index=hours_2d)
    with pytest.raises(mg.SizingInfeasibleError, match="export_limit_kw=inf"):
        mg.size(load, pv_availability=None, costs=costs, import_limit_kw=1e4,
                export_limit_kw=float("inf"))


def test_export_paid_above_import_is_refused_not_traded_through_the_meter(hours_2d):
    # export 0.08 > import 0.06 USD/kWh: the LP imported 1,500 kW and exported 500 kW at once
    # (a flat 1,000 kW load), earning on a trade no meter allows
    load = pd.Series(1000.0, index=hours_2d)
    export = pd.Series(0.03, index=hours_2d)
    export.iloc[[5, 30]] = 0.08
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.06, export_usd_per_kwh=export)
    kwargs = dict(pv_availability=None, generator=mg.Generator(max_power_kw=0.0),
                  battery=mg.Battery(max_energy_kwh=0.0), import_limit_kw=2000.0)
    with pytest.raises(InputError, match=r"export is paid more than import costs in 2 of 48 "
                       r"steps \(first 2025-03-03 05:00:00\+00:00: 0\.08 against 0\.06 USD/kWh\)"
                       r".*np\.minimum\(export, import\)"):
        mg.size(load, costs=costs, export_limit_kw=500.0, **kwargs)
    # a carbon price on grid energy counts as import cost: 0.06 + 50 USD/t * 0.5 kg/kWh = 0.085
    carbon = mg.Carbon(grid_kg_per_kwh=0.5, price_usd_per_t=50.0)
    s = mg.size(load, costs=costs, export_limit_kw=500.0, carbon=carbon, **kwargs)
    assert s.dispatch["grid_export_kw"].max() == pytest.approx(0.0, abs=1e-6)
    # export forbidden (the default): nothing to trade, sized as before
    s = mg.size(load, costs=costs, **kwargs)
    assert s.total_annual_cost_usd == pytest.approx(0.06 * 1000.0 * 8760, rel=1e-9)
    # the recipe in the message is taken
    fixed = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.06,
                     export_usd_per_kwh=np.minimum(export, 0.06))
    s = mg.size(load, costs=fixed, export_limit_kw=500.0, **kwargs)
    assert s.total_annual_cost_usd == pytest.approx(0.06 * 1000.0 * 8760, rel=1e-9)
