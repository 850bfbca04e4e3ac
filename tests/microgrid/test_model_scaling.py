"""The per-unit scaling of the model: what HiGHS sees, and results that do not depend on it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyomo.environ as pyo
import pytest

import microgrid as mg
from microgrid.model import build_model, kw_per_pu
from microgrid.sizing import prepare_inputs

def test_peak_load_is_near_one_pu_and_the_unit_a_power_of_two(hawk_3d_kw, hawk_costs):
    # Hawk's measured 3 days peak at ~3.2 MW: the unit must be 2**12 = 4,096 kW (log2 3166
    # = 11.63 rounds to 12), so the balance rows' right-hand sides lie in [2**-0.5, 2**0.5].
    data, _ = prepare_inputs(
        hawk_3d_kw, pv_availability=None, costs=hawk_costs, battery=mg.Battery(),
        generator=mg.Generator(), import_limit_kw=5_000.0,
    )
    unit_kw = kw_per_pu(data)
    assert unit_kw == 4096.0
    m = build_model(data)
    rhs = np.array([c.upper for c in m.balance.values()])
    assert rhs.max() == pytest.approx(hawk_3d_kw.max() / 4096.0, rel=1e-12)
    assert 2**-0.5 <= rhs.max() <= 2**0.5
    # the given import limit is a bound of the import variables, not a row per step
    assert not hasattr(m, "import_max")
    assert {v.ub for v in m.import_pu.values()} == {5_000.0 / 4096.0}
    # costs keep their values: the objective's PV-capital term is 70 USD/kWp-year * P_pv [pu]
    m.pv_size_pu.fix(1.0)
    assert pyo.value(m.cost_terms_pu["pv_capital"]) == 70.0


def test_a_load_a_thousand_times_larger_costs_a_thousand_times_more(hawk_3d_kw, hawk_costs):
    # Every kW/kWh/t input times 1000 (load, limits, ramp, carbon cap) must give sizes,
    # dispatch and cost times 1000: a check of the unscaling of every reported figure. The
    # two models use different units (4,096 vs 4,194,304 kW), so HiGHS solves two different
    # (if related) LPs; agreement to 1e-6 is the solver tolerance, not bit equality.
    pv = mg.pv_availability(index=hawk_3d_kw.index)
    start = hawk_3d_kw.index[40]

    def run(k: float) -> mg.Sizing:
        return mg.size(
            hawk_3d_kw * k, pv_availability=pv, costs=hawk_costs,
            battery=mg.Battery(0.95, 0.94, 0.1),
            generator=mg.Generator(emission_kg_per_kwh=0.45),
            import_limit_kw=3_000.0 * k, export_limit_kw=500.0 * k,
            outages=[(start, start + pd.Timedelta(hours=3))],
            carbon=mg.Carbon(grid_kg_per_kwh=0.38, price_usd_per_t=60.0,
                             cap_t_per_year=2_000.0 * k),
            ramp_limit_kw_per_h=2_000.0 * k,
        )

    small, large = run(1.0), run(1000.0)
    assert small.status == large.status == "optimal"
    assert small.pv_kwp > 0 and small.battery_kwh > 0 and small.generator_kw > 0
    assert large.total_annual_cost_usd == pytest.approx(1000 * small.total_annual_cost_usd,
                                                        rel=1e-6)
    for key, value in small.annual_cost_usd.items():
        assert large.annual_cost_usd[key] == pytest.approx(
            1000 * value, rel=1e-5, abs=1e-6 * large.total_annual_cost_usd)
    assert large.emissions_t_per_year == pytest.approx(1000 * small.emissions_t_per_year,
                                                       rel=1e-5)
    assert large.lcoe_usd_per_mwh == pytest.approx(small.lcoe_usd_per_mwh, rel=1e-6)
    assert math.isclose(large.import_limit_kw, 3.0e6)
    # the carbon cap (a t/year right-hand side, scaled too) binds in both
    assert small.emissions_t_per_year == pytest.approx(2_000.0, rel=1e-6)
