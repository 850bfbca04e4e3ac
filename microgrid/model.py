"""The sizing LP/MILP as a Pyomo model, assembled from small ``add_*`` functions.

Each function adds one block of ``docs/formulation.md`` and cites its equation numbers. The
inputs arrive validated, in kW, kWh, USD and t, as plain arrays in :class:`ModelInputs`
(built by :func:`microgrid.size`).

Inside the model every power is in per-unit (pu) of ``m.kw_per_pu`` kW, every energy in
pu·h and the objective in USD / ``m.kw_per_pu``: the load's peak is near 1 pu instead of
1e5 kW, so HiGHS sees bounds and right-hand sides of the same order as the costs (the
section "Scaling" of ``docs/formulation.md``). ``kw_per_pu`` is a power of two, so scaling
and unscaling are exact in floating point; prices per kWh and costs per kW-year keep their
values. Read results back in kW, kWh and USD with :func:`solution_unscaled`,
:func:`value_unscaled` and :func:`cost_terms_usd`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
from pyomo.common.gc_manager import PauseGC

from microgrid.inputs import Battery, Costs, Generator

__all__ = [
    "ModelInputs",
    "build_model",
    "kw_per_pu",
    "add_sizes",
    "add_pv",
    "add_battery",
    "add_generator",
    "add_run_hours",
    "add_cycle_limit",
    "add_dump_load",
    "no_storage",
    "add_grid",
    "add_balance",
    "add_demand_charge",
    "add_ramp_limit",
    "add_emissions",
    "add_objective",
    "solution_array",
    "solution_unscaled",
    "value_unscaled",
    "cost_terms_usd",
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
    dump_load_max_kw : float
        W̄, the largest power the dump load may burn (eq. 21) [kW]; 0: no dump load.
    dump_usd_per_kwh : float
        Price of dumped energy [USD/kWh]; 0 for a user's dump load, high in the
        infeasibility diagnosis.
    cycling_penalty_usd_per_kwh : float
        epsilon, a tie-break price on charge and discharge (eq. 23) [USD/kWh]; 0 except in
        the re-solve of :func:`microgrid.size` that decides whether simultaneous charge and
        discharge is needed. Not part of the reported cost.
    generators : tuple of PricedGenerator
        Further generator technologies beside ``generator`` (``microgrid.lp`` only; the
        Pyomo model, used for unit commitment, has one generator).
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
    dump_load_max_kw: float = 0.0
    dump_usd_per_kwh: float = 0.0
    cycling_penalty_usd_per_kwh: float = 0.0
    generators: tuple = ()
    generator_name: str = "generator"


def kw_per_pu(d: ModelInputs) -> float:
    """The model's power unit: the power of two nearest the peak load [kW/pu] (1 for no load)."""
    peak_kw = float(np.max(np.abs(d.load_kw))) if len(d.load_kw) else 0.0
    if not math.isfinite(peak_kw) or peak_kw <= 0:
        return 1.0
    return 2.0 ** round(math.log2(peak_kw))


def _pu(m: pyo.ConcreteModel, value_kw: float | None) -> float | None:
    """A kW (or kWh) bound in pu (pu·h); None and inf mean unbounded."""
    if value_kw is None or math.isinf(value_kw):
        return None
    return float(value_kw) / m.kw_per_pu


def _values(var: pyo.Var) -> list:
    """The variable's data objects in index order (indexing a Var per step is slow)."""
    return list(var.values())


def no_storage(d: ModelInputs) -> bool:
    """True when the battery's energy or power cap is 0 or its C-rate is 0 (eq. 22)."""
    b = d.battery
    return b.max_energy_kwh == 0 or b.max_power_kw == 0 or b.max_c_rate_per_h == 0


def add_sizes(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Size decisions P_pv, E_b, P_b, P_g and, when priced, the import limit M (eq. 18) [pu].

    A battery with no energy (or no power) is no battery: both sizes are fixed at 0 (eq. 22).
    """
    m.pv_size_pu = pyo.Var(domain=pyo.NonNegativeReals, bounds=(0, _pu(m, d.max_pv_kwp)))
    none = no_storage(d)
    m.battery_energy_puh = pyo.Var(
        domain=pyo.NonNegativeReals, bounds=(0, 0.0 if none else _pu(m, d.battery.max_energy_kwh))
    )
    m.battery_power_pu = pyo.Var(
        domain=pyo.NonNegativeReals, bounds=(0, 0.0 if none else _pu(m, d.battery.max_power_kw))
    )
    m.generator_size_pu = pyo.Var(
        domain=pyo.NonNegativeReals, bounds=(0, _pu(m, d.generator.max_power_kw))
    )
    if d.import_limit_kw is None:
        m.import_limit_pu = pyo.Var(domain=pyo.NonNegativeReals)
    else:
        m.import_limit_pu = pyo.Param(initialize=_pu(m, d.import_limit_kw), mutable=False)


def add_pv(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """PV used at most what is available, pv_t <= a_t * P_pv (eq. 3) [pu]."""
    a = d.pv_kw_per_kwp
    # steps without sun (half of a year) need a bound, not a constraint row
    m.pv_pu = pyo.Var(m.T, bounds=lambda m, t: (0, None) if a[t] > 0 else (0, 0))
    pv, size = _values(m.pv_pu), m.pv_size_pu
    sunny = [int(t) for t in np.flatnonzero(a > 0)]
    coef = a.tolist()
    m.pv_available = pyo.Constraint(sunny, rule=lambda m, t: pv[t] - coef[t] * size <= 0)


def add_battery(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Charge/discharge limits (eqs. 5-6), SOC bounds (eq. 7), cyclic dynamics (eq. 8),
    the C-rate link (eq. 20) and no flow at all without storage (eq. 22).

    ``soc_puh[t]`` is the state of charge at the END of step t [pu·h]; step 0 starts from
    the end of step T-1, which makes s_0 = s_T.
    """
    gain = d.battery.charge_efficiency * d.dt_h
    loss = d.dt_h / d.battery.discharge_efficiency
    sigma = d.battery.min_soc_fraction
    flow_bounds = (0, 0) if no_storage(d) else (0, None)
    m.charge_pu = pyo.Var(m.T, domain=pyo.NonNegativeReals, bounds=flow_bounds)
    m.discharge_pu = pyo.Var(m.T, domain=pyo.NonNegativeReals, bounds=flow_bounds)
    m.soc_puh = pyo.Var(m.T, domain=pyo.NonNegativeReals)
    c, dis, s = _values(m.charge_pu), _values(m.discharge_pu), _values(m.soc_puh)
    p_b, e_b = m.battery_power_pu, m.battery_energy_puh
    m.charge_max = pyo.Constraint(m.T, rule=lambda m, t: c[t] - p_b <= 0)
    m.discharge_max = pyo.Constraint(m.T, rule=lambda m, t: dis[t] - p_b <= 0)
    m.soc_max = pyo.Constraint(m.T, rule=lambda m, t: s[t] - e_b <= 0)
    if sigma > 0:
        m.soc_min = pyo.Constraint(m.T, rule=lambda m, t: s[t] - sigma * e_b >= 0)
    # s[t - 1] with t = 0 is s[-1], the last step: the cyclic condition of eq. 8
    m.soc_dynamics = pyo.Constraint(
        m.T, rule=lambda m, t: s[t] - s[t - 1] - gain * c[t] + loss * dis[t] == 0
    )
    rho = d.battery.max_c_rate_per_h
    if math.isfinite(rho) and rho > 0:
        m.battery_c_rate = pyo.Constraint(expr=p_b - rho * e_b <= 0)


def add_dump_load(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """A dump load (load bank) burning 0 <= w_t <= W̄ (eq. 21) [pu]; only when W̄ > 0."""
    if not d.dump_load_max_kw > 0:
        return
    m.dump_pu = pyo.Var(m.T, domain=pyo.NonNegativeReals,
                        bounds=(0, _pu(m, d.dump_load_max_kw)))


def add_generator(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Generation within the size (eq. 9), or unit commitment with minimum load (eq. 17)."""
    gen = d.generator
    off = (~d.outage if gen.emergency_only else np.zeros(len(d.outage), bool)).tolist()
    # an emergency-only generator runs in outage steps only (eq. 9)
    m.generator_out_pu = pyo.Var(m.T, domain=pyo.NonNegativeReals,
                                 bounds=lambda m, t: (0, 0) if off[t] else (0, None))
    g = _values(m.generator_out_pu)
    if not gen.unit_commitment:
        size = m.generator_size_pu
        m.generator_max = pyo.Constraint(m.T, rule=lambda m, t: g[t] - size <= 0)
        return
    unit = _pu(m, gen.unit_size_kw)
    max_units = (
        None if math.isinf(gen.max_power_kw)
        else math.floor(gen.max_power_kw / gen.unit_size_kw)
    )
    m.generator_units = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, max_units))
    m.generator_on = pyo.Var(m.T, domain=pyo.NonNegativeIntegers, bounds=(0, max_units))
    on, units = _values(m.generator_on), m.generator_units
    m.generator_size_def = pyo.Constraint(expr=m.generator_size_pu == unit * units)
    m.generator_on_max = pyo.Constraint(m.T, rule=lambda m, t: on[t] - units <= 0)
    m.generator_max = pyo.Constraint(m.T, rule=lambda m, t: g[t] - unit * on[t] <= 0)
    lo = gen.min_load_fraction * unit
    m.generator_min = pyo.Constraint(m.T, rule=lambda m, t: g[t] - lo * on[t] >= 0)


def add_run_hours(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """An air permit's running hours as an energy cap, F Σ_t g_t Δt <= H P_g (eq. 25) [pu·h].

    Exact for a fleet that runs at full output whenever it runs; at part load the fleet may
    run more hours than H (the LP has no on/off state, see "Minimum load in the LP").
    """
    hours = d.generator.max_run_hours_per_year
    if not math.isfinite(hours):
        return
    f = d.annual_factor * d.dt_h
    m.generator_run_hours = pyo.Constraint(
        expr=f * pyo.quicksum(_values(m.generator_out_pu)) - hours * m.generator_size_pu <= 0
    )


def add_cycle_limit(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Cycle-limited life: F Σ_t d_t Δt <= N E_b, N equivalent full cycles a year (eq. 26)."""
    cycles = d.battery.max_cycles_per_year
    if not math.isfinite(cycles) or no_storage(d):
        return
    f = d.annual_factor * d.dt_h
    m.battery_cycles = pyo.Constraint(
        expr=f * pyo.quicksum(_values(m.discharge_pu)) - cycles * m.battery_energy_puh <= 0
    )


def add_grid(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Import within the limit and export within its cap (eq. 10); none in outages (eq. 13).

    A given import limit is a bound of each import variable; only a priced (variable) limit
    needs one row per step.
    """
    out = d.outage.tolist()
    x_max = _pu(m, d.export_limit_kw)
    m_max = None if d.import_limit_kw is None else _pu(m, d.import_limit_kw)
    m.import_pu = pyo.Var(m.T, bounds=lambda m, t: (0, 0) if out[t] else (0, m_max))
    m.export_pu = pyo.Var(m.T, bounds=lambda m, t: (0, 0) if out[t] else (0, x_max))
    if d.import_limit_kw is None:
        imp, limit = _values(m.import_pu), m.import_limit_pu
        m.import_max = pyo.Constraint(m.T, rule=lambda m, t: imp[t] - limit <= 0)


def add_balance(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Power balance pv + d + m + g (+ unserved) = L + c + x (+ w) in every step (eqs. 4, 21)."""
    load = (d.load_kw / m.kw_per_pu).tolist()
    flows = [
        _values(m.pv_pu), _values(m.discharge_pu), _values(m.import_pu),
        _values(m.generator_out_pu),
    ]
    if d.unserved_usd_per_kwh is not None:
        m.unserved_pu = pyo.Var(m.T, domain=pyo.NonNegativeReals)
        flows.append(_values(m.unserved_pu))
    supply = list(zip(*flows))
    sinks = [_values(m.charge_pu), _values(m.export_pu)]
    if hasattr(m, "dump_pu"):
        sinks.append(_values(m.dump_pu))
    demand = list(zip(*sinks))
    m.balance = pyo.Constraint(
        m.T, rule=lambda m, t: sum(supply[t]) - sum(demand[t]) == load[t]
    )


def add_demand_charge(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Monthly peak import, peak_k >= m_t for t in month k (eq. 11) [pu].

    A given import limit also bounds each peak: no step imports more.
    """
    if d.costs.demand_charge_usd_per_kw_month <= 0:
        return
    n_months = int(d.month.max()) + 1
    m.K = pyo.RangeSet(0, n_months - 1)
    upper = None if d.import_limit_kw is None else _pu(m, d.import_limit_kw)
    m.peak_import_pu = pyo.Var(m.K, bounds=(0, upper))
    peak, imp = _values(m.peak_import_pu), _values(m.import_pu)
    month = d.month.tolist()
    m.peak_def = pyo.Constraint(m.T, rule=lambda m, t: peak[month[t]] - imp[t] >= 0)


def add_ramp_limit(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """|n_t - n_{t-1}| <= R * dt for the net flow n = m - x at the point of interconnection
    (eq. 16) [pu]."""
    if d.ramp_limit_kw_per_h is None:
        return
    step = _pu(m, d.ramp_limit_kw_per_h * d.dt_h)
    imp, exp = _values(m.import_pu), _values(m.export_pu)
    m.T1 = pyo.RangeSet(1, len(d.load_kw) - 1)
    m.ramp_up = pyo.Constraint(
        m.T1, rule=lambda m, t: imp[t] - exp[t] - imp[t - 1] + exp[t - 1] <= step)
    m.ramp_down = pyo.Constraint(
        m.T1, rule=lambda m, t: imp[t - 1] - exp[t - 1] - imp[t] + exp[t] <= step)


def add_emissions(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Annualised emissions (eq. 14) [t/year / kw_per_pu] and the optional cap (eq. 15)."""
    if d.carbon_price_usd_per_t <= 0 and d.carbon_cap_t_per_year is None:
        return  # nothing in the model depends on it; Sizing computes it from the dispatch
    scale = d.dt_h * d.annual_factor / 1000.0
    kg = d.grid_kg_per_kwh.tolist()
    ef = d.generator.emission_kg_per_kwh
    m.emissions_t_pu = pyo.Expression(
        expr=scale * (
            pyo.quicksum(k * v for k, v in zip(kg, _values(m.import_pu)))
            + ef * pyo.quicksum(_values(m.generator_out_pu))
        )
    )
    if d.carbon_cap_t_per_year is not None:
        m.carbon_cap = pyo.Constraint(
            expr=m.emissions_t_pu <= _pu(m, d.carbon_cap_t_per_year)
        )


def add_objective(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    """Annual cost: capital (eq. 2) + scaled operation (eq. 1) + demand charge (eq. 12).

    In USD / kw_per_pu: a cost per kW times a size in pu, a price per kWh times pu·h.
    """
    c = d.costs
    f = d.annual_factor * d.dt_h
    price, export = d.import_usd_per_kwh.tolist(), d.export_usd_per_kwh.tolist()
    terms = {
        "pv_capital": c.pv_usd_per_kwp_year * m.pv_size_pu,
        "battery_energy_capital": c.battery_usd_per_kwh_year * m.battery_energy_puh,
        "battery_power_capital": c.battery_usd_per_kw_year * m.battery_power_pu,
        "generator_capital": c.generator_usd_per_kw_year * m.generator_size_pu,
        "import_capacity": (
            c.import_capacity_usd_per_kw_year * m.import_limit_pu
            if d.import_limit_kw is None
            else 0.0
        ),
        "grid_energy": f * pyo.quicksum(p * v for p, v in zip(price, _values(m.import_pu))),
        "export_revenue": -f * pyo.quicksum(
            p * v for p, v in zip(export, _values(m.export_pu))
        ),
        "fuel": f * c.fuel_usd_per_kwh * pyo.quicksum(_values(m.generator_out_pu)),
        # eq. 27: battery wear per kWh discharged
        "battery_throughput": (
            f * c.battery_throughput_usd_per_kwh * pyo.quicksum(_values(m.discharge_pu))
            if c.battery_throughput_usd_per_kwh > 0
            else 0.0
        ),
        "demand_charge": (
            c.demand_charge_usd_per_kw_month
            * pyo.quicksum(float(w) * m.peak_import_pu[k] for k, w in enumerate(d.month_weight))
            if hasattr(m, "peak_import_pu")
            else 0.0
        ),
        "carbon": (
            d.carbon_price_usd_per_t * m.emissions_t_pu if hasattr(m, "emissions_t_pu") else 0.0
        ),
    }
    if d.unserved_usd_per_kwh is not None:
        terms["unserved"] = f * d.unserved_usd_per_kwh * pyo.quicksum(_values(m.unserved_pu))
    if hasattr(m, "dump_pu") and d.dump_usd_per_kwh > 0:
        terms["dump_load"] = f * d.dump_usd_per_kwh * pyo.quicksum(_values(m.dump_pu))
    m.cost_terms_pu = pyo.Expression(list(terms), initialize=terms)
    total = sum(m.cost_terms_pu[k] for k in terms)
    if d.cycling_penalty_usd_per_kwh > 0:
        # eq. 23: a tie-break, kept out of the reported cost terms and total
        m.cycling_penalty_pu = pyo.Expression(expr=f * d.cycling_penalty_usd_per_kwh * (
            pyo.quicksum(_values(m.charge_pu)) + pyo.quicksum(_values(m.discharge_pu))))
        total = total + m.cycling_penalty_pu
    m.total_cost_pu = pyo.Objective(expr=total, sense=pyo.minimize)


def build_model(d: ModelInputs) -> pyo.ConcreteModel:
    """Assemble the whole model (eqs. 1-27) from the ``add_*`` blocks, in pu of ``kw_per_pu``."""
    m = pyo.ConcreteModel(name="microgrid_sizing")
    m.kw_per_pu = kw_per_pu(d)
    m.T = pyo.RangeSet(0, len(d.load_kw) - 1)
    # ~1e5 new objects per block would trigger Python's cyclic collector over and over
    with PauseGC():
        _add_blocks(m, d)
    return m


def _add_blocks(m: pyo.ConcreteModel, d: ModelInputs) -> None:
    for add in (
        add_sizes,
        add_pv,
        add_battery,
        add_generator,
        add_run_hours,
        add_cycle_limit,
        add_dump_load,
        add_grid,
        add_balance,
        add_demand_charge,
        add_ramp_limit,
        add_emissions,
        add_objective,
    ):
        add(m, d)


def solution_array(var: pyo.Var) -> np.ndarray:
    """Solution values of an indexed variable in index order, in its own unit (0 where unset)."""
    return np.array([v if v is not None else 0.0 for v in var.extract_values().values()])


def solution_unscaled(m: pyo.ConcreteModel, var: pyo.Var) -> np.ndarray:
    """An indexed pu (pu·h) variable's solution in kW (kWh), in index order."""
    return solution_array(var) * m.kw_per_pu


def value_unscaled(m: pyo.ConcreteModel, component) -> float:
    """A scalar pu (pu·h) variable, parameter or expression in kW (kWh; t/year)."""
    return float(pyo.value(component)) * m.kw_per_pu


def cost_terms_usd(m: pyo.ConcreteModel) -> dict[str, float]:
    """The annual cost by term, and ``"total"``, of a solved model [USD/year]."""
    terms = {k: value_unscaled(m, m.cost_terms_pu[k]) for k in m.cost_terms_pu}
    terms["total"] = value_unscaled(m, m.total_cost_pu)
    if hasattr(m, "cycling_penalty_pu"):
        terms["total"] -= value_unscaled(m, m.cycling_penalty_pu)
    return terms
