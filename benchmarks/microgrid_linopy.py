"""A second, independent formulation of the microgrid sizing LP, in linopy.

Written array-wise from ``docs/formulation.md`` (not from ``microgrid/model.py``) so that the
tests and the benchmark can check the Pyomo model's optimum against it. It covers the LP
(no unit commitment): PV, battery, generator, import limit (given or priced), export,
demand charge, outages, ramp limit, carbon price and cap, generator run-hour cap (eq. 25),
battery cycle cap (eq. 26) and throughput price (eq. 27), and further generator technologies
(``ModelInputs.generators``, each with its own size, prices, emissions and run-hour cap). Lives outside the package on
purpose: ``microgrid`` does not depend on linopy.
"""

from __future__ import annotations

import math

import linopy
import numpy as np
import pandas as pd
import xarray as xr

from microgrid.model import ModelInputs

__all__ = ["build_linopy", "solve_linopy"]


def build_linopy(d: ModelInputs) -> linopy.Model:
    """The sizing LP of ``d`` as a linopy model; its objective is in USD/year."""
    if d.generator.unit_commitment:
        raise ValueError("the linopy reference covers the LP only (no unit commitment)")
    n = len(d.load_kw)
    time = pd.RangeIndex(n, name="time")
    arr = lambda a: xr.DataArray(np.asarray(a, dtype=float), coords=[time])  # noqa: E731
    inf = lambda v: np.inf if math.isinf(v) else float(v)  # noqa: E731

    m = linopy.Model()
    pv_kwp = m.add_variables(0, inf(d.max_pv_kwp), name="pv_kwp")
    e_b = m.add_variables(0, inf(d.battery.max_energy_kwh), name="e_b")
    p_b = m.add_variables(0, inf(d.battery.max_power_kw), name="p_b")
    p_g = m.add_variables(0, inf(d.generator.max_power_kw), name="p_g")
    upper_grid = xr.where(arr(d.outage) > 0, 0.0, np.inf)
    upper_export = xr.where(arr(d.outage) > 0, 0.0, inf(d.export_limit_kw))
    pv = m.add_variables(0, coords=[time], name="pv")
    c = m.add_variables(0, coords=[time], name="c")
    dis = m.add_variables(0, coords=[time], name="d")
    s = m.add_variables(0, coords=[time], name="s")
    g = m.add_variables(0, xr.where(arr(d.outage) > 0, np.inf, 0.0)
                        if d.generator.emergency_only else np.inf, coords=[time], name="g")
    imp = m.add_variables(0, upper_grid, name="imp")
    exp = m.add_variables(0, upper_export, name="exp")

    # further generator technologies (eqs. 9, 25 per technology), each with its own prices
    extra = []
    for j, tech in enumerate(getattr(d, "generators", ()) or ()):
        size_j = m.add_variables(0, inf(tech.generator.max_power_kw), name=f"p_g{j}")
        # emergency-only: no output outside the outage steps
        up = (xr.where(arr(d.outage) > 0, np.inf, 0.0) if tech.generator.emergency_only
              else np.inf)
        out_j = m.add_variables(0, up, coords=[time], name=f"g{j}")
        m.add_constraints(out_j - size_j <= 0, name=f"g{j}_max")
        if math.isfinite(tech.generator.max_run_hours_per_year):
            m.add_constraints(d.annual_factor * d.dt_h * out_j.sum()
                              <= tech.generator.max_run_hours_per_year * size_j,
                              name=f"run_hours{j}")
        extra.append((tech, size_j, out_j))
    m.add_constraints(pv - arr(d.pv_kw_per_kwp) * pv_kwp <= 0, name="pv_avail")
    supply = pv + dis + imp + g
    for _, _, out_j in extra:
        supply = supply + out_j
    m.add_constraints(supply - c - exp == arr(d.load_kw), name="balance")
    m.add_constraints(c - p_b <= 0, name="c_max")
    m.add_constraints(dis - p_b <= 0, name="d_max")
    m.add_constraints(s - e_b <= 0, name="s_max")
    m.add_constraints(s - d.battery.min_soc_fraction * e_b >= 0, name="s_min")
    # s_t - s_{t-1} with the previous step of step 0 being the last one (cyclic)
    s_prev = s.roll(time=1)
    eta_c, eta_d = d.battery.charge_efficiency, d.battery.discharge_efficiency
    m.add_constraints(
        s - s_prev - eta_c * d.dt_h * c + (d.dt_h / eta_d) * dis == 0, name="soc"
    )
    m.add_constraints(g - p_g <= 0, name="g_max")
    f = d.annual_factor * d.dt_h
    if math.isfinite(d.generator.max_run_hours_per_year):
        m.add_constraints(f * g.sum() <= d.generator.max_run_hours_per_year * p_g,
                          name="run_hours")
    if math.isfinite(d.battery.max_cycles_per_year):
        m.add_constraints(f * dis.sum() <= d.battery.max_cycles_per_year * e_b, name="cycles")
    if d.import_limit_kw is None:
        limit = m.add_variables(0, name="import_limit")
        m.add_constraints(imp - limit <= 0, name="imp_max")
        capacity_cost = d.costs.import_capacity_usd_per_kw_year * limit
    else:
        m.add_constraints(imp <= d.import_limit_kw, name="imp_max")
        capacity_cost = 0
    if d.ramp_limit_kw_per_h is not None:
        step = d.ramp_limit_kw_per_h * d.dt_h
        net = imp - exp  # the net flow at the point of interconnection
        diff = net - net.shift(time=1).fillna(0)
        later = time[1:]
        m.add_constraints(diff.sel(time=later) <= step, name="ramp_up")
        m.add_constraints(diff.sel(time=later) >= -step, name="ramp_down")

    emissions = (f / 1000.0) * (
        (arr(d.grid_kg_per_kwh) * imp).sum() + d.generator.emission_kg_per_kwh * g.sum()
    )
    for tech, _, out_j in extra:
        emissions = emissions + (f / 1000.0) * tech.generator.emission_kg_per_kwh * out_j.sum()
    if d.carbon_cap_t_per_year is not None:
        m.add_constraints(emissions <= d.carbon_cap_t_per_year, name="carbon_cap")
    cost = (
        d.costs.pv_usd_per_kwp_year * pv_kwp
        + d.costs.battery_usd_per_kwh_year * e_b
        + d.costs.battery_usd_per_kw_year * p_b
        + d.costs.generator_usd_per_kw_year * p_g
        + f * (arr(d.import_usd_per_kwh) * imp).sum()
        - f * (arr(d.export_usd_per_kwh) * exp).sum()
        + f * d.costs.fuel_usd_per_kwh * g.sum()
        + f * d.costs.battery_throughput_usd_per_kwh * dis.sum()
        + d.carbon_price_usd_per_t * emissions
    )
    if not isinstance(capacity_cost, int):
        cost = cost + capacity_cost
    for tech, size_j, out_j in extra:
        cost = cost + tech.usd_per_kw_year * size_j + f * tech.fuel_usd_per_kwh * out_j.sum()
    if d.costs.demand_charge_usd_per_kw_month > 0:
        months = pd.RangeIndex(int(d.month.max()) + 1, name="month")
        peak = m.add_variables(0, coords=[months], name="peak")
        # peak of the step's month, picked per step
        m.add_constraints(
            peak.isel(month=xr.DataArray(d.month, coords=[time])) - imp >= 0, name="peak_def"
        )
        weight = xr.DataArray(d.month_weight, coords=[months])
        cost = cost + d.costs.demand_charge_usd_per_kw_month * (weight * peak).sum()
    m.add_objective(cost)
    return m


def solve_linopy(m: linopy.Model) -> float:
    """Solve with HiGHS; return the optimal objective [USD/year]."""
    status, condition = m.solve(solver_name="highs", io_api="direct", progress=False,
                                output_flag=False)
    if status != "ok":
        raise RuntimeError(f"linopy/HiGHS: {status} {condition}")
    return float(m.objective.value)
