"""The Pyomo model against an independent linopy formulation on HiGHS, on real load."""

from __future__ import annotations

import pandas as pd
import pytest

import microgrid as mg
from microgrid.sizing import prepare_inputs

SCALE = 100_000.0 / 3166.0  # Hawk's peak in these 3 days -> a 100 MW peak [-]


@pytest.fixture(scope="module")
def campus(hawk_3d_kw):
    load = hawk_3d_kw * SCALE
    return load, mg.pv_availability(index=load.index)


CASES = {
    "pv_battery_generator_export_demand_charge": dict(
        costs=mg.Costs(
            70, 25, 15, 60,
            import_usd_per_kwh=0.08, export_usd_per_kwh=0.03, fuel_usd_per_kwh=0.11,
            demand_charge_usd_per_kw_month=12.0,
        ),
        battery=mg.Battery(0.95, 0.94, 0.1),
        generator=mg.Generator(emission_kg_per_kwh=0.45),
        import_limit_kw=80_000.0,
        export_limit_kw=10_000.0,
    ),
    "priced_limit_outage_ramp_carbon": dict(
        costs=mg.Costs(
            55, 20, 12, 60, import_usd_per_kwh=0.07, fuel_usd_per_kwh=0.10,
            import_capacity_usd_per_kw_year=90.0, export_usd_per_kwh=0.02,
        ),
        battery=mg.Battery(0.95, 0.95),
        generator=mg.Generator(emission_kg_per_kwh=0.45),
        import_limit_kw=None,
        ramp_limit_kw_per_h=20_000.0,  # on the net flow: export allowed below
        export_limit_kw=5_000.0,
        carbon=mg.Carbon(grid_kg_per_kwh=0.38, price_usd_per_t=60.0, cap_t_per_year=60_000.0),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_optimum_as_linopy(campus, linopy_reference, name):
    load, pv = campus
    kwargs = dict(CASES[name])
    if name.startswith("priced"):
        start = load.index[40]
        kwargs["outages"] = [(start, start + pd.Timedelta(hours=3))]
    sizing = mg.size(load, pv_availability=pv, **kwargs)
    data, _ = prepare_inputs(load, pv_availability=pv, **kwargs)
    reference = linopy_reference.solve_linopy(linopy_reference.build_linopy(data))
    assert sizing.status == "optimal"
    assert sizing.total_annual_cost_usd == pytest.approx(reference, rel=1e-6)
    # the comparison must exercise the interesting parts, not a trivial corner
    assert sizing.pv_kwp > 0 and sizing.battery_kwh > 0


def test_coarser_step_reports_its_error_and_keeps_energy(hawk_3d_kw):
    agg = mg.coarsen(hawk_3d_kw, freq="1h")
    hourly = hawk_3d_kw.to_numpy().reshape(-1, 4).mean(axis=1)
    assert agg.load_kw.to_numpy() == pytest.approx(hourly)
    assert agg.energy_error_kwh == pytest.approx(0.0, abs=1e-6)
    assert agg.peak_error_kw == pytest.approx(hawk_3d_kw.max() - hourly.max())
    assert agg.peak_error_kw > 0  # the real series has sub-hourly peaks
    assert agg.load_kw.index.freq == pd.Timedelta("1h")


def test_coarsen_refuses_a_step_that_does_not_divide(hawk_3d_kw):
    with pytest.raises(ValueError, match="not a whole multiple"):
        mg.coarsen(hawk_3d_kw, freq="20min")
