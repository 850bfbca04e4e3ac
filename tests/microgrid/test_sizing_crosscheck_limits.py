"""The Pyomo model against the independent linopy formulation with the terms of issue 17:
generator run-hour cap (eq. 25), battery cycle cap (eq. 26), throughput price (eq. 27) and
PV land limit (eq. 28), on real load priced by the bundled ATB cost set."""

from __future__ import annotations

import pytest

import microgrid as mg
from microgrid.sizing import prepare_inputs

SCALE = 100_000.0 / 3166.0  # Hawk's peak in these 3 days -> a 100 MW peak [-]


def test_new_terms_same_optimum_as_linopy(hawk_3d_kw, linopy_reference):
    load = hawk_3d_kw * SCALE
    pv = mg.pv_availability(index=load.index)
    gas = mg.technology("gas_engine")
    kwargs = dict(
        costs=mg.costs("atb2024-moderate", year=2030, generator="gas_engine",
                       demand_charge_usd_per_kw_month=15.0,
                       battery_throughput_usd_per_kwh=0.01),
        battery=mg.Battery(0.95, 0.95, max_cycles_per_year=120.0),
        generator=gas.generator(max_run_hours_per_year=600.0),
        import_limit_kw=80_000.0,
        pv_area_ha=60.0,
    )
    sizing = mg.size(load, pv_availability=pv, **kwargs)
    data, _ = prepare_inputs(load, pv_availability=pv, **kwargs)
    reference = linopy_reference.solve_linopy(linopy_reference.build_linopy(data))
    assert sizing.status == "optimal"
    assert sizing.total_annual_cost_usd == pytest.approx(reference, rel=1e-6)
    annual = 8760.0 / 72
    disp = sizing.dispatch
    # every new term is exercised and the caps bind (otherwise this checks nothing new)
    assert sizing.pv_kwp == pytest.approx(60.0 * 420.0, rel=1e-7)
    discharged = disp["battery_discharge_kw"].sum() * 0.25 * annual
    assert sizing.battery_kwh > 0
    assert discharged == pytest.approx(120.0 * sizing.battery_kwh, rel=1e-6)
    generated = disp["generator_kw"].sum() * 0.25 * annual
    assert sizing.generator_kw > 0
    assert generated == pytest.approx(600.0 * sizing.generator_kw, rel=1e-6)
    assert sizing.annual_cost_usd["battery_throughput"] == pytest.approx(0.01 * discharged)
