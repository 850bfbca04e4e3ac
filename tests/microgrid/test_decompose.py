"""size(method="decompose") against the exact LP: the certified gap holds, and where the
decomposition does not apply the exact LP is solved."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import microgrid as mg
from aiload.errors import InputError
from microgrid.decompose import MIN_STEPS, block_steps
from microgrid.sizing import DECOMPOSITION_TOL, prepare_inputs

SCALE = 100_000.0 / 3166.0  # Hawk's peak in these 3 days -> a 100 MW peak [-]


@pytest.fixture(scope="module")
def long_load(hawk_3d_kw) -> pd.Series:
    """Three measured Hawk days repeated 8 times: 2,304 steps of 15 min (24 days) [kW]."""
    values = np.tile(hawk_3d_kw.to_numpy() * SCALE, 8)
    idx = pd.date_range("2025-06-01", periods=len(values), freq="15min", tz="UTC")
    return pd.Series(values, index=idx)


def test_decomposed_cost_is_within_the_certified_gap_of_the_exact_lp(long_load):
    kwargs = dict(
        pv_availability=mg.pv_availability(index=long_load.index),
        costs=mg.costs("atb2024-moderate", generator="gas_engine",
                       demand_charge_usd_per_kw_month=10.0),
        battery=mg.Battery(max_cycles_per_year=365.0),
        generator=mg.technology("gas_engine").generator(),
        import_limit_kw=70_000.0,
        pv_area_ha=100.0,
    )
    assert len(long_load) >= MIN_STEPS
    exact = mg.size(long_load, **kwargs, method="exact")
    dec = mg.size(long_load, **kwargs, method="decompose")
    assert exact.method == "exact" and dec.method == "decompose"
    assert dec.cost_lower_bound_usd <= exact.total_annual_cost_usd * (1 + 1e-9)
    assert "certified within" in dec.method_reason
    # a feasible sizing: never below the optimum, and within the gap it certifies
    assert dec.mip_gap <= DECOMPOSITION_TOL
    assert exact.total_annual_cost_usd * (1 - 1e-9) <= dec.total_annual_cost_usd
    assert dec.total_annual_cost_usd <= exact.total_annual_cost_usd * (1 + dec.mip_gap + 1e-9)
    # its dispatch is the full-resolution one and serves the load in every step
    d = dec.dispatch
    supply = (d.pv_kw + d.battery_discharge_kw + d.generator_kw + d.grid_import_kw
              - d.battery_charge_kw - d.grid_export_kw - d.dump_load_kw)
    assert np.abs(supply - d.load_kw).max() < 1e-6 * d.load_kw.max()
    assert d.grid_import_kw.max() <= 70_000.0 * (1 + 1e-9)
    assert d.generator_kw.max() <= dec.generator_kw * (1 + 1e-9)


def test_decompose_falls_back_where_blocks_would_not_be_a_relaxation(long_load):
    # a price that changes every step: the aggregated year is no lower bound -> exact LP
    price = pd.Series(np.where(np.arange(len(long_load)) % 2, 0.05, 0.09), index=long_load.index)
    costs = mg.Costs(70, 25, 15, 200, import_usd_per_kwh=price, fuel_usd_per_kwh=0.08)
    data, _ = prepare_inputs(long_load, pv_availability=None, costs=costs, battery=mg.Battery(),
                             generator=mg.Generator(), import_limit_kw=90_000.0)
    assert block_steps(data) is None
    s = mg.size(long_load, pv_availability=None, costs=costs, import_limit_kw=90_000.0,
                method="decompose")
    assert s.method == "exact" and s.status == "optimal"
    assert "change too often" in s.method_reason


def test_unknown_method_is_an_error(long_load):
    with pytest.raises(InputError, match=r"method must be one of \['auto', 'exact', 'decompose'\], "
                                         r"got 'fast'"):
        mg.size(long_load, pv_availability=None, costs=mg.Costs(1, 1, 1, 1, 0.1),
                import_limit_kw=1e6, method="fast")


def test_decomposed_with_an_emergency_generator_and_an_outage(long_load):
    # diesel may run only in the outage: steps held at 0 by that rule, not by its size, must
    # not enter the size's cut (they did once: the lower bound then exceeded the optimum and
    # this test failed, with a negative gap)
    kwargs = dict(
        pv_availability=mg.pv_availability(index=long_load.index),
        costs=mg.costs("atb2024-moderate", generator="gas_engine",
                       demand_charge_usd_per_kw_month=10.0),
        battery=mg.Battery(max_cycles_per_year=365.0),
        generator=mg.technology("gas_engine").generator(max_power_kw=35_000.0),
        import_limit_kw=60_000.0,
        outages=[(long_load.index[1000], long_load.index[1016])],
        extra_generators=[mg.priced_generator("atb2024-moderate", "diesel")],
        generator_name="gas_engine",
    )
    exact = mg.size(long_load, **kwargs, method="exact")
    dec = mg.size(long_load, **kwargs)  # the default, "auto"
    assert dec.method == "decompose"
    assert 0.0 <= dec.mip_gap <= DECOMPOSITION_TOL
    assert exact.total_annual_cost_usd * (1 - 1e-9) <= dec.total_annual_cost_usd
    assert dec.total_annual_cost_usd <= exact.total_annual_cost_usd * (1 + dec.mip_gap + 1e-9)


def test_master_and_subproblem_share_one_power_unit():
    # issue 31: a load whose 8-hour block means peak lower than its hourly peak, across a
    # power of two (hourly 12,000 kW -> unit 16,384; block means ~10,600 kW -> 8,192). The
    # master read the subproblem's sizes at half their value; its "lower bound" came out
    # 21 % above the exact optimum and was certified (gap -0.96 accepted).
    idx = pd.date_range("2025-01-01", periods=2_400, freq="1h", tz="UTC")
    h = np.arange(len(idx))
    load = pd.Series(10_000.0 + 2_000.0 * (h % 8 == 3), index=idx)
    data, _ = prepare_inputs(load, pv_availability=None, costs=mg.Costs(
        100, 40, 30, 120, import_usd_per_kwh=0.07, fuel_usd_per_kwh=0.08,
        demand_charge_usd_per_kw_month=15.0), battery=mg.Battery(),
        generator=mg.Generator(), import_limit_kw=11_000.0)
    from microgrid.decompose import coarse_inputs
    from microgrid.model import kw_per_pu
    k = block_steps(data)
    assert kw_per_pu(coarse_inputs(data, k)) != kw_per_pu(data)  # the case that failed
    kwargs = dict(pv_availability=None, costs=data.costs, import_limit_kw=11_000.0)
    exact = mg.size(load, **kwargs, method="exact")
    dec = mg.size(load, **kwargs, method="decompose")
    assert dec.method == "decompose", dec.method_reason
    assert dec.cost_lower_bound_usd <= exact.total_annual_cost_usd * (1 + 1e-9)
    assert dec.total_annual_cost_usd <= exact.total_annual_cost_usd * (1 + dec.mip_gap + 1e-9)
