"""The sizing LP/MILP as a Pyomo model, assembled from small ``add_*`` functions.

Each function adds one block of ``docs/formulation.md`` and cites its equation numbers. All
power is in kW, energy in kWh, money in USD, time steps of ``dt_h`` hours. The inputs arrive
already validated, as plain arrays, in :class:`ModelInputs` (built by :func:`microgrid.size`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from microgrid.inputs import Battery, Costs, Generator

__all__ = [
    "ModelInputs",
    "build_model",
    "add_sizes",
    "add_pv",
    "add_battery",
    "add_generator",
    "add_grid",
    "add_balance",
    "add_demand_charge",
    "add_ramp_limit",
    "add_emissions",
    "add_objective",
    "solution_array",
]


@dataclass(frozen=True)
class ModelInputs:
    """Validated, array-valued inputs of one sizing model.

    Attributes
    ----------
    load_kw, pv_kw_per_kwp, import_usd_per_kwh, export_usd_per_kwh, grid_kg_per_kwh : ndarray
        Per-step load [kW], PV availability [kW/kWp], prices [USD/kWh], grid intensity [kg/kWh].
    outage : ndarray of bool
        Steps in which the grid is unavailable (eq. 13).
    month : ndarray of int
        Calendar-month number (0..K-1) of each step, for the demand charge (eq. 11).
    month_weight : ndarray
        Annualisation weight of each month's peak (eq. 12) [-].
    dt_h : float
        Step length [h].
    annual_factor : float
        8760 / (T * dt_h): scales horizon sums to a year (eq. 19) [-].
    """

    load_kw: np.ndarray
    pv_kw_per_kwp: np.ndarray
    import_usd_per_kwh: np.ndarray
    export_usd_per_kwh: np.ndarray
    grid_kg_per_kwh: np.ndarray
    outage: np.ndarray
    month: np.ndarray
    month_weight: np.ndarray
    dt_h: float
    annual_factor: float
    costs: Costs
    battery: Battery
    generator: Generator
    import_limit_kw: float | None
    export_limit_kw: float
    max_pv_kwp: float
    ramp_limit_kw_per_h: float | None
    carbon_price_usd_per_t: float
    carbon_cap_t_per_year: float | None
    unserved_usd_per_kwh: float | None = None


def _bound(value: float) -> float | None:
    return None if math.isinf(value) else float(value)


def add_sizes(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Size decisions P_pv, E_b, P_b, P_g and, when priced, the import limit M (eq. 18)."""
    m.pv_kwp = pyo.Var(domain=pyo.NonNegativeReals, bounds=(0, _bound(d.max_pv_kwp)))
    m.battery_kwh = pyo.Var(
        domain=pyo.NonNegativeReals, bounds=(0, _bound(d.battery.max_energy_kwh))
    )
    m.battery_kw = pyo.Var(domain=pyo.NonNegativeReals, bounds=(0, _bound(d.battery.max_power_kw)))
    m.generator_kw = pyo.Var(
        domain=pyo.NonNegativeReals, bounds=(0, _bound(d.generator.max_power_kw))
    )
    if d.import_limit_kw is None:
        m.import_limit_kw = pyo.Var(domain=pyo.NonNegativeReals)
    else:
        m.import_limit_kw = pyo.Param(initialize=float(d.import_limit_kw), mutable=False)


def add_pv(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """PV used at most what is available, pv_t <= a_t * P_pv (eq. 3)."""
    a = d.pv_kw_per_kwp
    # steps without sun (half of a year) need a bound, not a constraint row
    m.pv_kw = pyo.Var(m.T, bounds=lambda m, t: (0, None) if a[t] > 0 else (0, 0))
    sunny = [int(t) for t in np.flatnonzero(a > 0)]
    m.pv_available = pyo.Constraint(sunny, rule=lambda m, t: m.pv_kw[t] <= a[t] * m.pv_kwp)


def add_battery(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Charge/discharge limits (eqs. 5-6), SOC bounds (eq. 7) and cyclic dynamics (eq. 8).

    ``soc_kwh[t]`` is the state of charge at the END of step t; step 0 starts from the end
    of step T-1, which makes s_0 = s_T.
    """
    eta_c = d.battery.charge_efficiency
    eta_d = d.battery.discharge_efficiency
    sigma = d.battery.min_soc_fraction
    dt = d.dt_h
    last = len(d.load_kw) - 1
    m.charge_kw = pyo.Var(m.T, domain=pyo.NonNegativeReals)
    m.discharge_kw = pyo.Var(m.T, domain=pyo.NonNegativeReals)
    m.soc_kwh = pyo.Var(m.T, domain=pyo.NonNegativeReals)
    m.charge_max = pyo.Constraint(m.T, rule=lambda m, t: m.charge_kw[t] <= m.battery_kw)
    m.discharge_max = pyo.Constraint(m.T, rule=lambda m, t: m.discharge_kw[t] <= m.battery_kw)
    m.soc_max = pyo.Constraint(m.T, rule=lambda m, t: m.soc_kwh[t] <= m.battery_kwh)
    if sigma > 0:
        m.soc_min = pyo.Constraint(m.T, rule=lambda m, t: m.soc_kwh[t] >= sigma * m.battery_kwh)
    m.soc_dynamics = pyo.Constraint(
        m.T,
        rule=lambda m, t: m.soc_kwh[t]
        == m.soc_kwh[last if t == 0 else t - 1]
        + (eta_c * m.charge_kw[t] - m.discharge_kw[t] / eta_d) * dt,
    )


def add_generator(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Generation within the size (eq. 9), or unit commitment with minimum load (eq. 17)."""
    m.generator_out_kw = pyo.Var(m.T, domain=pyo.NonNegativeReals)
    gen = d.generator
    if not gen.unit_commitment:
        m.generator_max = pyo.Constraint(
            m.T, rule=lambda m, t: m.generator_out_kw[t] <= m.generator_kw
        )
        return
    unit = float(gen.unit_size_kw)
    max_units = None if math.isinf(gen.max_power_kw) else math.floor(gen.max_power_kw / unit)
    m.generator_units = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, max_units))
    m.generator_on = pyo.Var(m.T, domain=pyo.NonNegativeIntegers, bounds=(0, max_units))
    m.generator_size_def = pyo.Constraint(expr=m.generator_kw == unit * m.generator_units)
    m.generator_on_max = pyo.Constraint(
        m.T, rule=lambda m, t: m.generator_on[t] <= m.generator_units
    )
    m.generator_max = pyo.Constraint(
        m.T, rule=lambda m, t: m.generator_out_kw[t] <= unit * m.generator_on[t]
    )
    lo = gen.min_load_fraction * unit
    m.generator_min = pyo.Constraint(
        m.T, rule=lambda m, t: m.generator_out_kw[t] >= lo * m.generator_on[t]
    )


def add_grid(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Import within the limit and export within its cap (eq. 10); none in outages (eq. 13)."""
    x_max = _bound(d.export_limit_kw)
    out = d.outage

    def import_bounds(m, t):
        return (0, 0) if out[t] else (0, None)

    def export_bounds(m, t):
        return (0, 0) if out[t] else (0, x_max)

    m.import_kw = pyo.Var(m.T, bounds=import_bounds)
    m.export_kw = pyo.Var(m.T, bounds=export_bounds)
    m.import_max = pyo.Constraint(m.T, rule=lambda m, t: m.import_kw[t] <= m.import_limit_kw)


def add_balance(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Power balance pv + d + m + g (+ unserved) = L + c + x in every step (eq. 4)."""
    load = d.load_kw
    if d.unserved_usd_per_kwh is not None:
        m.unserved_kw = pyo.Var(m.T, domain=pyo.NonNegativeReals)

        def rule(m, t):
            return (
                m.pv_kw[t] + m.discharge_kw[t] + m.import_kw[t] + m.generator_out_kw[t]
                + m.unserved_kw[t]
                == load[t] + m.charge_kw[t] + m.export_kw[t]
            )
    else:

        def rule(m, t):
            return (
                m.pv_kw[t] + m.discharge_kw[t] + m.import_kw[t] + m.generator_out_kw[t]
                == load[t] + m.charge_kw[t] + m.export_kw[t]
            )

    m.balance = pyo.Constraint(m.T, rule=rule)


def add_demand_charge(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Monthly peak import, peak_k >= m_t for t in month k (eq. 11)."""
    if d.costs.demand_charge_usd_per_kw_month <= 0:
        return
    n_months = int(d.month.max()) + 1
    m.K = pyo.RangeSet(0, n_months - 1)
    m.peak_import_kw = pyo.Var(m.K, domain=pyo.NonNegativeReals)
    month = d.month
    m.peak_def = pyo.Constraint(
        m.T, rule=lambda m, t: m.peak_import_kw[int(month[t])] >= m.import_kw[t]
    )


def add_ramp_limit(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """|m_t - m_{t-1}| <= R * dt at the point of interconnection (eq. 16)."""
    if d.ramp_limit_kw_per_h is None:
        return
    step = d.ramp_limit_kw_per_h * d.dt_h
    m.T1 = pyo.RangeSet(1, len(d.load_kw) - 1)
    m.ramp_up = pyo.Constraint(m.T1, rule=lambda m, t: m.import_kw[t] - m.import_kw[t - 1] <= step)
    m.ramp_down = pyo.Constraint(
        m.T1, rule=lambda m, t: m.import_kw[t - 1] - m.import_kw[t] <= step
    )


def add_emissions(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Annualised emissions [t/year] (eq. 14) and the optional cap (eq. 15)."""
    if d.carbon_price_usd_per_t <= 0 and d.carbon_cap_t_per_year is None:
        return  # nothing in the model depends on it; Sizing computes it from the dispatch
    ci = d.grid_kg_per_kwh
    ef = d.generator.emission_kg_per_kwh
    scale = d.dt_h * d.annual_factor / 1000.0
    m.emissions_t = pyo.Expression(
        expr=scale
        * pyo.quicksum(float(ci[t]) * m.import_kw[t] + ef * m.generator_out_kw[t] for t in m.T)
    )
    if d.carbon_cap_t_per_year is not None:
        m.carbon_cap = pyo.Constraint(expr=m.emissions_t <= d.carbon_cap_t_per_year)


def add_objective(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Annual cost: capital (eq. 2) + scaled operation (eq. 1) + demand charge (eq. 12)."""
    c = d.costs
    f = d.annual_factor * d.dt_h
    price, export = d.import_usd_per_kwh, d.export_usd_per_kwh
    terms = {
        "pv_capital": c.pv_usd_per_kwp_year * m.pv_kwp,
        "battery_energy_capital": c.battery_usd_per_kwh_year * m.battery_kwh,
        "battery_power_capital": c.battery_usd_per_kw_year * m.battery_kw,
        "generator_capital": c.generator_usd_per_kw_year * m.generator_kw,
        "import_capacity": (
            c.import_capacity_usd_per_kw_year * m.import_limit_kw
            if d.import_limit_kw is None
            else 0.0
        ),
        "grid_energy": f * pyo.quicksum(float(price[t]) * m.import_kw[t] for t in m.T),
        "export_revenue": -f * pyo.quicksum(float(export[t]) * m.export_kw[t] for t in m.T),
        "fuel": f * c.fuel_usd_per_kwh * pyo.quicksum(m.generator_out_kw[t] for t in m.T),
        "demand_charge": (
            c.demand_charge_usd_per_kw_month
            * pyo.quicksum(float(w) * m.peak_import_kw[k] for k, w in enumerate(d.month_weight))
            if hasattr(m, "peak_import_kw")
            else 0.0
        ),
        "carbon": (
            d.carbon_price_usd_per_t * m.emissions_t if hasattr(m, "emissions_t") else 0.0
        ),
    }
    if d.unserved_usd_per_kwh is not None:
        terms["unserved"] = (
            f * d.unserved_usd_per_kwh * pyo.quicksum(m.unserved_kw[t] for t in m.T)
        )
    m.cost_terms = pyo.Expression(list(terms), initialize=terms)
    m.total_cost = pyo.Objective(expr=sum(m.cost_terms[k] for k in terms), sense=pyo.minimize)


def build_model(d: ModelInputs) -> pyo.ConcreteModel:
    """Assemble the whole model (eqs. 1-19) from the ``add_*`` blocks."""
    m = pyo.ConcreteModel(name="microgrid_sizing")
    m.T = pyo.RangeSet(0, len(d.load_kw) - 1)
    for add in (
        add_sizes,
        add_pv,
        add_battery,
        add_generator,
        add_grid,
        add_balance,
        add_demand_charge,
        add_ramp_limit,
        add_emissions,
        add_objective,
    ):
        add(m, d)
    return m


def solution_array(var: pyo.Var) -> np.ndarray:
    """Solution values of an indexed variable in index order, in its own unit (0 where unset)."""
    return np.array([v if v is not None else 0.0 for v in var.extract_values().values()])
