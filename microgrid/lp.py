"""The sizing LP built directly as sparse arrays and handed to HiGHS (``highspy``).

The same formulation as :mod:`microgrid.model` (``docs/formulation.md``, eqs. 1-28), written
block by block with numpy: each ``_add_*`` function appends columns and rows as index arrays,
so an hourly year is built in ~0.1 s and passed to HiGHS in one call (Pyomo's writer took
~4 s to hand the same LP over, more than the solve budget). Units as in the Pyomo model:
powers in pu of ``kw_per_pu`` kW, energies in pu·h, the objective in USD / ``kw_per_pu``.

Only LPs: unit commitment (eq. 17) stays in the Pyomo model (a MILP).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from microgrid._highs import silence_banner
from microgrid.model import ModelInputs, kw_per_pu, no_storage

__all__ = ["Lp", "build_lp", "generator_specs", "GeneratorSpec"]

_INF = math.inf


@dataclass(frozen=True)
class GeneratorSpec:
    """One generator technology of a sizing, with its prices [USD/kW/year, USD/kWh]."""

    name: str
    usd_per_kw_year: float
    fuel_usd_per_kwh: float
    emission_kg_per_kwh: float
    max_power_kw: float
    max_run_hours_per_year: float
    emergency_only: bool = False


def generator_specs(d: ModelInputs) -> list[GeneratorSpec]:
    """The generators of ``d``: ``d.generator`` priced by ``d.costs``, then ``d.generators``."""
    specs = [GeneratorSpec(d.generator_name, d.costs.generator_usd_per_kw_year,
                           d.costs.fuel_usd_per_kwh, d.generator.emission_kg_per_kwh,
                           d.generator.max_power_kw, d.generator.max_run_hours_per_year,
                           d.generator.emergency_only)]
    for g in getattr(d, "generators", ()) or ():
        specs.append(GeneratorSpec(g.name, g.usd_per_kw_year, g.fuel_usd_per_kwh,
                                   g.generator.emission_kg_per_kwh, g.generator.max_power_kw,
                                   g.generator.max_run_hours_per_year,
                                   g.generator.emergency_only))
    return specs


@dataclass
class Lp:
    """A sizing LP as arrays: columns, rows (COO), index maps and the cost terms.

    Attributes
    ----------
    kw_per_pu : float
        The power unit [kW/pu].
    cols : dict
        Block name -> column indices (an int for a scalar, an ndarray for a series).
    cost, lower, upper : ndarray
        Objective coefficients [USD/kw_per_pu per pu], column bounds [pu].
    terms : dict
        Cost term -> (column indices, coefficients): the objective split as reported.
    """

    kw_per_pu: float
    cols: dict = field(default_factory=dict)
    lower: list = field(default_factory=list)
    upper: list = field(default_factory=list)
    row_lo: list = field(default_factory=list)
    row_hi: list = field(default_factory=list)
    a_row: list = field(default_factory=list)
    a_col: list = field(default_factory=list)
    a_val: list = field(default_factory=list)
    terms: dict = field(default_factory=dict)
    n_col: int = 0
    n_row: int = 0
    rows: dict = field(default_factory=dict)
    fixed: bool = False
    links: list = field(default_factory=list)
    size_keys: list = field(default_factory=list)
    size_upper: dict = field(default_factory=dict)
    capital: dict = field(default_factory=dict)

    def var(self, name: str, n: int | None, lo, hi) -> np.ndarray | int:
        """Add ``n`` columns (a scalar for None) with bounds ``lo, hi`` [pu]."""
        k = 1 if n is None else n
        idx = np.arange(self.n_col, self.n_col + k)
        self.n_col += k
        self.lower.append(np.broadcast_to(np.asarray(lo, dtype=float), (k,)))
        self.upper.append(np.broadcast_to(np.asarray(hi, dtype=float), (k,)))
        self.cols[name] = int(idx[0]) if n is None else idx
        return self.cols[name]

    def rows_add(self, name: str, n: int, parts, lo, hi) -> np.ndarray:
        """Add ``n`` rows ``lo <= sum(coef * x[col]) <= hi``; ``parts`` are (row offset,
        column, coefficient) triples of arrays (or scalars broadcast to ``n``)."""
        base = self.n_row
        for r, c, v in parts:
            r, c, v = np.broadcast_arrays(np.asarray(r), np.asarray(c), np.asarray(v, float))
            self.a_row.append(base + r.ravel())
            self.a_col.append(c.ravel())
            self.a_val.append(v.ravel())
        self.row_lo.append(np.broadcast_to(np.asarray(lo, dtype=float), (n,)))
        self.row_hi.append(np.broadcast_to(np.asarray(hi, dtype=float), (n,)))
        self.n_row += n
        self.rows[name] = np.arange(base, base + n)
        return self.rows[name]

    def term(self, name: str, cols, coefs) -> None:
        """Add ``coefs * x[cols]`` to the cost term ``name`` (and the objective)."""
        cols, coefs = np.broadcast_arrays(np.atleast_1d(cols), np.atleast_1d(
            np.asarray(coefs, dtype=float)))
        old = self.terms.get(name)
        if old is not None:
            cols, coefs = np.concatenate([old[0], cols]), np.concatenate([old[1], coefs])
        self.terms[name] = (cols, coefs)

    def arrays(self) -> dict[str, np.ndarray]:
        """Bounds, objective and the matrix in COO, ready for HiGHS."""
        cost = np.zeros(self.n_col)
        for cols, coefs in self.terms.values():
            np.add.at(cost, cols, coefs)
        return {
            "cost": cost,
            "lower": np.concatenate(self.lower),
            "upper": np.concatenate(self.upper),
            "row_lo": np.concatenate(self.row_lo) if self.row_lo else np.zeros(0),
            "row_hi": np.concatenate(self.row_hi) if self.row_hi else np.zeros(0),
            "a_row": np.concatenate(self.a_row) if self.a_row else np.zeros(0, int),
            "a_col": np.concatenate(self.a_col) if self.a_col else np.zeros(0, int),
            "a_val": np.concatenate(self.a_val) if self.a_val else np.zeros(0),
        }

    def term_values(self, x: np.ndarray, sizes: dict | None = None) -> dict[str, float]:
        """Each cost term at the solution ``x`` (and, with ``fixed``, the ``sizes`` [pu])
        [USD/year], unscaled."""
        out = {k: float(coefs @ x[cols]) * self.kw_per_pu for k, (cols, coefs) in
               self.terms.items()}
        for key, (term, price) in self.capital.items():
            if self.fixed:
                out[term] = out.get(term, 0.0) + price * sizes[key] * self.kw_per_pu
            else:
                out.setdefault(term, 0.0)
        return out

    def size_values(self, x: np.ndarray) -> dict[str, float]:
        """The size decisions of a solution (not ``fixed``) [pu]."""
        return {key: float(x[self.cols[key]]) for key in self.size_keys}

    def bounds_for(self, sizes: dict[str, float], base: dict) -> tuple:
        """Column and row bounds that fix the sizes (``fixed`` only): ``(cols, lower, upper,
        rows, row_upper)``; ``base`` is :meth:`arrays`' output."""
        lower, upper = base["lower"].copy(), base["upper"].copy()
        row_hi = base["row_hi"].copy()
        cols, rows = [], []
        for key, kind, idx, coef in self.links:
            value = coef * sizes[key]
            if kind == "col_upper":
                upper[idx] = np.minimum(upper[idx], value)
                cols.append(idx)
            elif kind == "col_lower":
                lower[idx] = value
                cols.append(idx)
            else:
                row_hi[idx] = value
                rows.append(idx)
        cols = np.unique(np.concatenate(cols)) if cols else np.zeros(0, int)
        rows = np.unique(np.concatenate(rows)) if rows else np.zeros(0, int)
        return cols, lower[cols], upper[cols], rows, row_hi[rows]

    def size_gradient(self, col_dual: np.ndarray, row_dual: np.ndarray) -> dict[str, float]:
        """d(operating cost)/d(size) of a solved ``fixed`` LP, from the duals of the bounds
        and rows the sizes set [USD/kw_per_pu per pu]: a subgradient, since the optimum is
        convex in the sizes."""
        grad = dict.fromkeys(self.size_keys, 0.0)
        for key, kind, idx, coef in self.links:
            if kind == "col_upper":
                grad[key] += float(coef @ np.minimum(col_dual[idx], 0.0))
            elif kind == "col_lower":
                grad[key] += float(coef @ np.maximum(col_dual[idx], 0.0))
            else:
                grad[key] += float(coef @ row_dual[idx])
        return grad


def _pu(value_kw: float | None, u: float) -> float:
    return _INF if value_kw is None or math.isinf(value_kw) else float(value_kw) / u


def build_lp(d: ModelInputs, fixed_sizes: bool = False, unit_kw: float | None = None) -> Lp:
    """The LP of ``d`` (eqs. 1-16, 18-28; no unit commitment) as arrays, in pu.

    ``unit_kw`` is the power unit [kW/pu]; default :func:`microgrid.model.kw_per_pu` of ``d``
    (a power of two near its peak load). Two LPs whose solutions are exchanged (the master and
    the subproblem of :mod:`microgrid.decompose`) must be built in one unit: the aggregated
    year's peak is lower and can round to another power of two.
    """
    if d.generator.unit_commitment:
        raise ValueError("build_lp: unit commitment is a MILP; use microgrid.model.build_model")
    lp = Lp(kw_per_pu=kw_per_pu(d) if unit_kw is None else float(unit_kw))
    lp.fixed = fixed_sizes
    t_all = np.arange(len(d.load_kw))
    for add in (_add_sizes, _add_pv, _add_battery, _add_generators, _add_grid, _add_balance,
                _add_demand_charge, _add_ramp_limit, _add_emissions, _add_objective):
        add(lp, d, t_all)
    return lp


def _size(lp: Lp, key: str, hi: float) -> int | None:
    """A size decision in [0, hi] (eq. 18) [pu]: a column, or None with ``lp.fixed``."""
    lp.size_keys.append(key)
    lp.size_upper[key] = hi
    return None if lp.fixed else lp.var(key, None, 0.0, hi)


def _at_most(lp: Lp, name: str, key: str, cols: np.ndarray, coef, lower=0.0) -> None:
    """x[cols] <= coef * size[key]: rows ``x - coef S <= 0``, or with ``lp.fixed`` the upper
    bounds of the columns, set from the sizes by :meth:`Lp.bounds_for`."""
    coef = np.broadcast_to(np.asarray(coef, dtype=float), cols.shape)
    if lp.fixed:
        lp.links.append((key, "col_upper", cols, coef))
        return
    r = np.arange(len(cols))
    lp.rows_add(name, len(cols), [(r, cols, 1.0), (r, lp.cols[key], -coef)], -_INF, 0.0)


def _add_sizes(lp: Lp, d: ModelInputs, t: np.ndarray) -> None:
    """Size decisions (eq. 18): P_pv, E_b, P_b, and the import limit M when it is priced."""
    u, none = lp.kw_per_pu, no_storage(d)
    _size(lp, "pv_size", _pu(d.max_pv_kwp, u))
    _size(lp, "battery_energy", 0.0 if none else _pu(d.battery.max_energy_kwh, u))
    _size(lp, "battery_power", 0.0 if none else _pu(d.battery.max_power_kw, u))
    if d.import_limit_kw is None:
        _size(lp, "import_limit", _INF)


def _add_pv(lp: Lp, d: ModelInputs, t: np.ndarray) -> None:
    """pv_t <= a_t P_pv (eq. 3); steps without sun get the bound 0, not a row."""
    a = d.pv_kw_per_kwp
    pv = lp.var("pv", len(t), 0.0, np.where(a > 0, _INF, 0.0))
    sunny = np.flatnonzero(a > 0)
    _at_most(lp, "pv_available", "pv_size", pv[sunny], a[sunny])


def _add_battery(lp: Lp, d: ModelInputs, t: np.ndarray) -> None:
    """Flows within P_b (eqs. 5-6), SOC within sigma E_b..E_b (eq. 7), cyclic dynamics (eq. 8),
    the C-rate link (eq. 20), no flow without storage (eq. 22), cycle cap (eq. 26)."""
    n, b = len(t), d.battery
    if no_storage(d):
        for name in ("charge", "discharge", "soc"):
            lp.var(name, n, 0.0, 0.0)
        return
    c, dis, s = (lp.var(k, n, 0.0, _INF) for k in ("charge", "discharge", "soc"))
    _at_most(lp, "charge_max", "battery_power", c, 1.0)
    _at_most(lp, "discharge_max", "battery_power", dis, 1.0)
    _at_most(lp, "soc_max", "battery_energy", s, 1.0)
    sigma = b.min_soc_fraction
    if sigma > 0 and lp.fixed:
        lp.links.append(("battery_energy", "col_lower", s, np.full(n, sigma)))
    elif sigma > 0:
        lp.rows_add("soc_min", n, [(t, s, 1.0), (t, lp.cols["battery_energy"], -sigma)],
                    0.0, _INF)
    gain, loss = b.charge_efficiency * d.dt_h, d.dt_h / b.discharge_efficiency
    # s_t - s_{t-1} - gain c_t + loss d_t = 0, s_{-1} = s_{T-1} (cyclic)
    lp.rows_add("soc_dynamics", n, [(t, s, 1.0), (t, s[np.roll(t, 1)], -1.0), (t, c, -gain),
                                    (t, dis, loss)], 0.0, 0.0)
    rho = b.max_c_rate_per_h
    if math.isfinite(rho) and rho > 0 and not lp.fixed:
        lp.rows_add("battery_c_rate", 1, [(0, lp.cols["battery_power"], 1.0),
                                          (0, lp.cols["battery_energy"], -rho)], -_INF, 0.0)
    if math.isfinite(b.max_cycles_per_year):
        _annual_cap(lp, "battery_cycles", dis, d.annual_factor * d.dt_h, "battery_energy",
                    b.max_cycles_per_year)


def _annual_cap(lp: Lp, name: str, cols: np.ndarray, f: float, key: str, per_size: float):
    """f * sum(x[cols]) <= per_size * size[key] (eqs. 25-26): a row whose upper bound is set
    from the size with ``lp.fixed``."""
    zero = np.zeros(len(cols), dtype=int)
    if lp.fixed:
        row = lp.rows_add(name, 1, [(zero, cols, f)], -_INF, 0.0)
        lp.links.append((key, "row_upper", row, np.array([per_size])))
        return
    lp.rows_add(name, 1, [(zero, cols, f), (0, lp.cols[key], -per_size)], -_INF, 0.0)


def _add_generators(lp: Lp, d: ModelInputs, t: np.ndarray) -> None:
    """Each technology j: g_jt <= P_gj (eq. 9) and its run-hour cap (eq. 25)."""
    n, u, f = len(t), lp.kw_per_pu, d.annual_factor * d.dt_h
    lp.cols["generator_outs"] = []
    for j, spec in enumerate(generator_specs(d)):
        key = f"generator_size_{j}"
        _size(lp, key, _pu(spec.max_power_kw, u))
        # an emergency-only technology runs in outage steps only (eq. 9)
        out = lp.var(f"generator_out_{j}", n, 0.0,
                     np.where(d.outage, _INF, 0.0) if spec.emergency_only else _INF)
        lp.cols["generator_outs"].append(out)
        # only the steps the size bounds: a step held at 0 otherwise has no link to it (its
        # dual would otherwise enter the size's subgradient in the decomposition)
        _at_most(lp, f"generator_max_{j}", key, out[d.outage] if spec.emergency_only else out,
                 1.0)
        if math.isfinite(spec.max_run_hours_per_year):
            _annual_cap(lp, f"generator_run_hours_{j}", out, f, key,
                        spec.max_run_hours_per_year)


def _add_grid(lp: Lp, d: ModelInputs, t: np.ndarray) -> None:
    """Import within M, export within X (eq. 10), neither in outages (eq. 13); the dump load
    (eq. 21)."""
    u, n, out = lp.kw_per_pu, len(t), d.outage
    m_max = _INF if d.import_limit_kw is None else _pu(d.import_limit_kw, u)
    imp = lp.var("import", n, 0.0, np.where(out, 0.0, m_max))
    lp.var("export", n, 0.0, np.where(out, 0.0, _pu(d.export_limit_kw, u)))
    if d.import_limit_kw is None:  # outage steps are held at 0, not by the limit
        _at_most(lp, "import_max", "import_limit", imp[~d.outage], 1.0)
    if d.dump_load_max_kw > 0:
        lp.var("dump", n, 0.0, _pu(d.dump_load_max_kw, u))
    if d.unserved_usd_per_kwh is not None:
        lp.var("unserved", n, 0.0, _INF)


def _add_balance(lp: Lp, d: ModelInputs, t: np.ndarray) -> None:
    """pv + d + m + sum_j g_j (+ unserved) - c - x (- w) = L in every step (eqs. 4, 21)."""
    c = lp.cols
    supply = ["pv", "discharge", "import", *(["unserved"] if "unserved" in c else [])]
    parts = [(t, c[k], 1.0) for k in supply] + [(t, g, 1.0) for g in c["generator_outs"]]
    parts += [(t, c[k], -1.0) for k in ("charge", "export", *(["dump"] if "dump" in c else []))]
    load = d.load_kw / lp.kw_per_pu
    lp.rows_add("balance", len(t), parts, load, load)


def _add_demand_charge(lp: Lp, d: ModelInputs, t: np.ndarray) -> None:
    """peak_k >= m_t for t in month k (eq. 11), priced by eq. 12."""
    rate = d.costs.demand_charge_usd_per_kw_month
    if rate <= 0:
        return
    m_max = _INF if d.import_limit_kw is None else _pu(d.import_limit_kw, lp.kw_per_pu)
    peak = lp.var("peak_import", int(d.month.max()) + 1, 0.0, m_max)
    lp.rows_add("peak_def", len(t), [(t, peak[d.month], 1.0), (t, lp.cols["import"], -1.0)],
                0.0, _INF)
    lp.term("demand_charge", peak, rate * np.asarray(d.month_weight, dtype=float))


def _add_ramp_limit(lp: Lp, d: ModelInputs, t: np.ndarray) -> None:
    """|n_t - n_{t-1}| <= R dt for the net flow n = m - x at the point of interconnection
    (eq. 16)."""
    if d.ramp_limit_kw_per_h is None or len(t) < 2:
        return
    step = d.ramp_limit_kw_per_h * d.dt_h / lp.kw_per_pu
    imp, exp, r = lp.cols["import"], lp.cols["export"], np.arange(len(t) - 1)
    parts = [(r, imp[1:], 1.0), (r, imp[:-1], -1.0)]
    if d.export_limit_kw > 0:  # else x = 0 by its bounds
        parts += [(r, exp[1:], -1.0), (r, exp[:-1], 1.0)]
    lp.rows_add("ramp", len(r), parts, -step, step)


def _emission_parts(lp: Lp, d: ModelInputs) -> tuple[np.ndarray, np.ndarray]:
    """Columns and coefficients of annualised emissions (eq. 14) [t/year per pu]."""
    scale = d.dt_h * d.annual_factor / 1000.0
    cols = [lp.cols["import"]]
    coefs = [scale * d.grid_kg_per_kwh]
    for spec, out in zip(generator_specs(d), lp.cols["generator_outs"], strict=True):
        cols.append(out)
        coefs.append(np.full(len(out), scale * spec.emission_kg_per_kwh))
    return np.concatenate(cols), np.concatenate(coefs)


def _add_emissions(lp: Lp, d: ModelInputs, t: np.ndarray) -> None:
    """The carbon cap on annualised emissions (eq. 15) [t/year]."""
    if d.carbon_cap_t_per_year is None:
        return
    cols, coefs = _emission_parts(lp, d)
    keep = coefs != 0
    lp.rows_add("carbon_cap", 1, [(0, cols[keep], coefs[keep])], -_INF,
                d.carbon_cap_t_per_year / lp.kw_per_pu)


def _add_objective(lp: Lp, d: ModelInputs, t: np.ndarray) -> None:
    """Capital (eq. 2), annualised operation (eq. 1), wear (eq. 27), carbon price, and the
    diagnostic or tie-break prices; the demand charge was added with its rows (eq. 12)."""
    c, k = d.costs, lp.cols
    f = d.annual_factor * d.dt_h
    capital = {"pv_size": ("pv_capital", c.pv_usd_per_kwp_year),
               "battery_energy": ("battery_energy_capital", c.battery_usd_per_kwh_year),
               "battery_power": ("battery_power_capital", c.battery_usd_per_kw_year),
               "import_limit": ("import_capacity", c.import_capacity_usd_per_kw_year)}
    for j, (spec, out) in enumerate(zip(generator_specs(d), k["generator_outs"], strict=True)):
        capital[f"generator_size_{j}"] = ("generator_capital", spec.usd_per_kw_year)
        lp.term("fuel", out, f * spec.fuel_usd_per_kwh)
    for key in lp.size_keys:
        lp.capital[key] = capital[key]
        if not lp.fixed:
            lp.term(capital[key][0], k[key], capital[key][1])
    lp.term("grid_energy", k["import"], f * d.import_usd_per_kwh)
    lp.term("export_revenue", k["export"], -f * d.export_usd_per_kwh)
    lp.term("battery_throughput", k["discharge"], f * c.battery_throughput_usd_per_kwh)
    if d.carbon_price_usd_per_t > 0:
        cols, coefs = _emission_parts(lp, d)
        lp.term("carbon", cols, d.carbon_price_usd_per_t * coefs)
    if "unserved" in k:
        lp.term("unserved", k["unserved"], f * d.unserved_usd_per_kwh)
    if "dump" in k and d.dump_usd_per_kwh > 0:
        lp.term("dump_load", k["dump"], f * d.dump_usd_per_kwh)
    if d.cycling_penalty_usd_per_kwh > 0:  # eq. 23, kept out of the reported total
        eps = f * d.cycling_penalty_usd_per_kwh
        lp.term("cycling_penalty", np.concatenate([k["charge"], k["discharge"]]), eps)


def to_highs(lp: Lp):
    """A ``highspy.Highs`` holding ``lp`` (output off)."""
    import highspy  # noqa: PLC0415
    import scipy.sparse as sp  # noqa: PLC0415

    a = lp.arrays()
    mat = sp.csc_matrix((a["a_val"], (a["a_row"], a["a_col"])), shape=(lp.n_row, lp.n_col))
    mat.sum_duplicates()
    model = highspy.HighsLp()
    model.num_col_, model.num_row_ = lp.n_col, lp.n_row
    model.col_cost_, model.col_lower_, model.col_upper_ = a["cost"], a["lower"], a["upper"]
    model.row_lower_, model.row_upper_ = a["row_lo"], a["row_hi"]
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.start_ = mat.indptr.astype(np.int32)
    model.a_matrix_.index_ = mat.indices.astype(np.int32)
    model.a_matrix_.value_ = mat.data
    silence_banner()
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(model)
    return h
