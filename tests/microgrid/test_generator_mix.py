"""More than one generator technology in one sizing: a hand-solved case and the linopy check."""

from __future__ import annotations

import pandas as pd
import pytest

import microgrid as mg
from aiload.errors import InputError
from microgrid.sizing import prepare_inputs

SCALE = 100_000.0 / 3166.0  # Hawk's peak in these 3 days -> a 100 MW peak [-]


def _spiky_load() -> pd.Series:
    """46 h at 1000 kW and 2 h at 1500 kW: 365 h/yr of the top 500 kW once annualised."""
    idx = pd.date_range("2025-03-03", periods=48, freq="1h", tz="UTC")
    load = pd.Series(1000.0, index=idx)
    load.iloc[20:22] = 1500.0
    return load


def test_a_capped_peaker_beside_baseload_by_hand():
    # islanded (no grid, no storage, no PV). Per kW of the bottom 1000 kW (8760 h/yr):
    # baseload 200 + 0.04 * 8760 = 550.4 USD/yr < peaker 60 + 0.30 * 8760. The top 500 kW
    # is needed 2 h * 8760/48 = 365 h/yr; the peaker may run 300 h/yr (eq. 25, an energy
    # cap), so 1 kW served for 365 h needs 365/300 kW of peaker: 365/300 * 60 + 0.30 * 365 =
    # 182.5 USD/yr < baseload 200 + 0.04 * 365 = 214.6. Hence baseload 1000 kW, peaker
    # 500 * 365 / 300 = 608.33 kW, at 200e3 + 350,400 + 36,500 + 54,750 = 641,650 USD/yr.
    costs = mg.Costs(70, 25, 15, 200, import_usd_per_kwh=0.1, fuel_usd_per_kwh=0.04)
    peaker = mg.PricedGenerator("peaker", mg.Generator(max_run_hours_per_year=300),
                                usd_per_kw_year=60, fuel_usd_per_kwh=0.30)
    s = mg.size(_spiky_load(), pv_availability=None, costs=costs,
                battery=mg.Battery(max_energy_kwh=0), import_limit_kw=0,
                extra_generators=[peaker], generator_name="baseload")
    assert s.generator_kw_by_technology["baseload"] == pytest.approx(1000.0, rel=1e-7)
    assert s.generator_kw_by_technology["peaker"] == pytest.approx(500 * 365 / 300, rel=1e-7)
    assert s.generator_kw == pytest.approx(1000.0 + 500 * 365 / 300, rel=1e-7)
    assert s.total_annual_cost_usd == pytest.approx(641_650.0, rel=1e-7)
    assert s.annual_cost_usd["generator_capital"] == pytest.approx(200e3 + 36_500.0, rel=1e-7)
    d = s.dispatch
    assert (d["generator_baseload_kw"] + d["generator_peaker_kw"]).to_numpy() == \
        pytest.approx(d["generator_kw"].to_numpy())
    assert d["generator_peaker_kw"].iloc[20:22].to_numpy() == pytest.approx([500.0, 500.0])


def test_gas_engines_and_diesel_backup_same_optimum_as_linopy(hawk_3d_kw, linopy_reference):
    # a 30-minute outage at the peak (61 h/yr once annualised) with no storage: the whole
    # load must come from site; gas engines (at most 50 MW, 2,000 h/yr) and diesel (100 h/yr,
    # cheap capital, dear fuel) share it; the independent formulation agrees
    load = hawk_3d_kw * SCALE
    peak = load.index.get_loc(load.idxmax())
    pv = None  # no PV and no storage: at the peak in the outage, only generators serve
    kwargs = dict(
        costs=mg.costs("atb2024-moderate", generator="gas_engine",
                       demand_charge_usd_per_kw_month=15.0),
        battery=mg.Battery(max_energy_kwh=0),
        generator=mg.technology("gas_engine").generator(max_run_hours_per_year=2000.0,
                                                         max_power_kw=50_000.0),
        import_limit_kw=80_000.0,
        outages=[(load.index[peak], load.index[peak + 2])],
        extra_generators=[mg.priced_generator("atb2024-moderate", "diesel")],
        generator_name="gas_engine",
    )
    sizing = mg.size(load, pv_availability=pv, **kwargs)
    data, _ = prepare_inputs(load, pv_availability=pv, **kwargs)
    reference = linopy_reference.solve_linopy(linopy_reference.build_linopy(data))
    assert sizing.status == "optimal"
    assert sizing.total_annual_cost_usd == pytest.approx(reference, rel=1e-6)
    by_tech = sizing.generator_kw_by_technology
    assert set(by_tech) == {"gas_engine", "diesel"} and by_tech["diesel"] > 0
    annual = 8760.0 / 72
    diesel = sizing.dispatch["generator_diesel_kw"]
    assert diesel.sum() * 0.25 * annual / by_tech["diesel"] <= 100.0 * (1 + 1e-7)
    # the bundled diesel is an emergency engine: it runs in the two outage steps only
    assert mg.technology("diesel").emergency_only
    assert (diesel.drop(load.index[peak:peak + 2]) == 0).all()
    assert diesel.iloc[peak:peak + 2].max() > 0


def test_an_emergency_only_generator_stays_off_outside_outages():
    # 1000 kW flat, grid up to 800 kW: without an outage an emergency-only generator may not
    # serve the 200 kW gap; the battery is forbidden, so no sizing exists
    costs = mg.Costs(70, 25, 15, 60, import_usd_per_kwh=0.1, fuel_usd_per_kwh=0.2)
    load = _spiky_load().clip(upper=1000.0)
    with pytest.raises(mg.SizingInfeasibleError, match=r"short in 48 of 48 steps"):
        mg.size(load, pv_availability=None, costs=costs, battery=mg.Battery(max_energy_kwh=0),
                generator=mg.Generator(emergency_only=True), import_limit_kw=800.0)
    # with the grid out for 2 h it covers exactly those 2 h: 1000 kW, 2 h * 8760/48 a year
    s = mg.size(load, pv_availability=None, costs=costs, battery=mg.Battery(max_energy_kwh=0),
                generator=mg.Generator(emergency_only=True), import_limit_kw=2000.0,
                outages=[(load.index[5], load.index[7])])
    assert s.generator_kw == pytest.approx(1000.0, rel=1e-7)
    assert (s.dispatch["generator_kw"].drop(load.index[5:7]) == 0).all()
    assert s.annual_cost_usd["fuel"] == pytest.approx(0.2 * 1000 * 2 * 8760 / 48, rel=1e-7)


def test_extra_generators_are_checked():
    costs = mg.Costs(70, 25, 15, 200, import_usd_per_kwh=0.1)
    with pytest.raises(InputError, match=r"unique names other than the main generator's"):
        mg.size(_spiky_load(), pv_availability=None, costs=costs, import_limit_kw=0,
                extra_generators=[mg.PricedGenerator("generator", mg.Generator(), 1, 1)])
    with pytest.raises(InputError, match=r"wrap a single one in a list"):
        mg.size(_spiky_load(), pv_availability=None, costs=costs, import_limit_kw=0,
                extra_generators=mg.PricedGenerator("x", mg.Generator(), 1, 1))
    with pytest.raises(InputError, match=r"unit commitment .* is\s+available only for the main"):
        mg.PricedGenerator("x", mg.Generator(min_load_fraction=0.3, unit_size_kw=100), 1, 1)
