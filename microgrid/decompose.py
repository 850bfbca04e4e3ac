"""Size on a time-aggregated year, dispatch on the full one: a certified decomposition.

The sizing LP of a year couples four or five size decisions with every step; HiGHS' simplex
needs ~50,000 iterations on an hourly year (15-30 s on the 2-core machine). Here the sizes are
found by Benders decomposition with the aggregated year as the master problem
(``docs/formulation.md``, "Decomposition"):

* **Master**: the same LP on blocks of k steps (interval means: load, PV availability), with
  the operating cost replaced by a variable theta >= that aggregated cost. Averaging a feasible
  full-resolution dispatch over blocks gives a feasible aggregated one of the same cost when
  prices, grid intensity, month and outage state are constant within each block, so the master
  is a relaxation: its optimum is a **lower bound** on the exact one.
* **Subproblem**: the full-resolution dispatch with the master's sizes fixed (sizes enter as
  column and row bounds, so the LP has no size columns), with unserved energy priced at a high
  value of lost load. Its optimum plus the capital cost is an **upper bound** when nothing is
  unserved, and the duals of the size bounds give a cut theta >= Q(x_k) + g_k (x - x_k).

Cuts are valid for the unpenalised cost too (the penalised dispatch costs no more), so the
bounds hold whatever the penalty; the loop stops when (upper - lower) / upper <= ``tol``. The
result is the full-resolution dispatch at the best sizes found: a feasible sizing whose cost is
within ``tol`` of the exact optimum, with the gap reported. Where the conditions above do not
hold, or the loop does not converge, :func:`decompose` says why and the exact LP is solved.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np

from microgrid.lp import Lp, build_lp, generator_specs, to_highs
from microgrid.model import ModelInputs, kw_per_pu

__all__ = ["Decomposition", "decompose", "block_steps", "why_not", "coarse_inputs", "MIN_STEPS"]

#: horizons shorter than this are solved exactly (the whole LP is fast)
MIN_STEPS = 2_000
#: the aggregated year of the master has at most about this many steps (12 h blocks of an
#: hourly year; measured on two problems, issue 31: 8 h and 24 h blocks took more time)
MASTER_STEPS = 730
#: the in-out stabilisation: the step from the best sizes towards the master's after a round
#: that improved the upper bound, and after one that did not [-]
STEP_IN, STEP_OUT = 0.3, 0.6
#: rounds between two progress lines of the decomposition
PROGRESS_EVERY = 5


@dataclass(frozen=True)
class Decomposition:
    """A sizing found by :func:`decompose`.

    Attributes
    ----------
    lp : Lp
        The full-resolution dispatch LP (sizes fixed).
    x : ndarray
        Its solution at ``sizes`` [pu].
    sizes : dict
        Size key -> value [pu].
    lower_bound_usd, upper_bound_usd : float
        Certified bounds on the exact optimum [USD/year]; the sizing costs the upper one.
    gap : float
        (upper - lower) / min(|upper|, |lower|) [-] (:func:`relative_gap`).
    iterations : int
        Subproblems solved.
    block_steps : int
        Steps per block of the master [-].
    master_time_s, dispatch_time_s : float
        HiGHS time in the master and in the dispatch subproblems [s].
    highs : highspy.Highs
        The subproblem, solved at ``sizes`` (its basis optimal there).
    """

    lp: Lp
    x: np.ndarray
    sizes: dict
    lower_bound_usd: float
    upper_bound_usd: float
    gap: float
    iterations: int
    block_steps: int
    master_time_s: float
    dispatch_time_s: float
    highs: object = None


def block_steps(d: ModelInputs, *, min_steps: int | None = None,
                master_steps: int | None = None) -> int | None:
    """Steps per master block, or None where no aggregation is a relaxation.

    Needs an LP, at least ``min_steps`` (:data:`MIN_STEPS`) steps, and a block length k >= 2
    that divides the horizon and holds prices, grid intensity, month and outage state
    constant within every block: the longest such k up to ``len / master_steps``
    (:data:`MASTER_STEPS`) is taken, so a time-of-use tariff or an outage only shortens the
    blocks. :func:`why_not` says why None.
    """
    return _block_steps(d, min_steps, master_steps)[0]


def why_not(d: ModelInputs, *, min_steps: int | None = None) -> str | None:
    """Why :func:`block_steps` is None for ``d`` (a sentence), or None when it is not."""
    return _block_steps(d, min_steps, None)[1]


def _block_steps(d: ModelInputs, min_steps: int | None,
                 master_steps: int | None) -> tuple[int | None, str | None]:
    n = len(d.load_kw)
    min_steps = MIN_STEPS if min_steps is None else min_steps
    master_steps = MASTER_STEPS if master_steps is None else master_steps
    if d.generator.unit_commitment:
        return None, "unit commitment is a MILP (the decomposition is for the LP)"
    if d.unserved_usd_per_kwh is not None:
        return None, "unserved energy is priced (a diagnosis model)"
    if n < min_steps:
        return None, f"{n} steps, fewer than {min_steps}: the whole LP is fast"
    series = [np.asarray(a) for a in (d.import_usd_per_kwh, d.export_usd_per_kwh,
                                      d.grid_kg_per_kwh, d.month, d.outage)]
    # the steps at which any of them changes: a block may not straddle one
    change = np.zeros(n, dtype=bool)
    for a in series:
        change[1:] |= a[1:] != a[:-1]
    starts = np.flatnonzero(change)
    for k in range(max(2, round(n / master_steps)), 1, -1):
        if n % k == 0 and not (starts % k).any():
            return k, None
    return None, ("prices, grid intensity, calendar month or outages change too often for "
                  "blocks of 2 or more steps to hold them constant (the aggregated year would "
                  "not be a relaxation)")


def coarse_inputs(d: ModelInputs, k: int) -> ModelInputs:
    """``d`` on blocks of ``k`` steps: interval means of load and PV, the step k times longer."""
    def mean(a):
        return np.asarray(a, dtype=float).reshape(-1, k).mean(axis=1)

    return dataclasses.replace(
        d, load_kw=mean(d.load_kw), pv_kw_per_kwp=mean(d.pv_kw_per_kwp),
        import_usd_per_kwh=mean(d.import_usd_per_kwh),
        export_usd_per_kwh=mean(d.export_usd_per_kwh), grid_kg_per_kwh=mean(d.grid_kg_per_kwh),
        outage=d.outage[::k], month=d.month[::k], dt_h=d.dt_h * k)


def lost_load_usd_per_kwh(d: ModelInputs) -> float:
    """The price of unserved energy in the subproblem [USD/kWh]: twice what a kW of every
    capacity together costs per step's kWh, plus twice the dearest energy price."""
    c, f = d.costs, d.annual_factor * d.dt_h
    capacity = (c.pv_usd_per_kwp_year + c.battery_usd_per_kwh_year + c.battery_usd_per_kw_year
                + max(g.usd_per_kw_year for g in generator_specs(d))
                + c.import_capacity_usd_per_kw_year + 12 * c.demand_charge_usd_per_kw_month)
    energy = max(float(np.max(d.import_usd_per_kwh)), c.battery_throughput_usd_per_kwh,
                 max(g.fuel_usd_per_kwh for g in generator_specs(d)))
    return 2.0 * capacity / f + 2.0 * energy + 1.0


def relative_gap(upper: float, lower: float) -> float:
    """(upper - lower) over the smaller of |upper| and |lower| [-]: then a returned cost
    ``upper`` is within ``gap * |optimum|`` of the optimum whatever the signs (issue 31)."""
    if not (math.isfinite(upper) and math.isfinite(lower)):
        return math.inf
    scale = min(abs(upper), abs(lower))
    return (upper - lower) / scale if scale > 0 else (0.0 if upper == lower else math.inf)


def _run(h, options: dict) -> float:
    for name, value in options.items():
        h.setOptionValue(name, value)
    start = time.perf_counter()
    h.run()
    return time.perf_counter() - start


def decompose(d: ModelInputs, *, tol: float = 1e-4, max_iterations: int = 60,
              time_limit_s: float | None = None,
              min_steps: int | None = None, progress=None) -> Decomposition | str:
    """Benders decomposition of the sizing LP ``d`` (module docstring).

    Returns the :class:`Decomposition`, or a sentence saying why there is none: it does not
    apply (:func:`why_not`), or it did not reach ``tol`` within ``max_iterations`` rounds or
    ``time_limit_s`` (the caller then solves exactly and reports the sentence). ``min_steps``
    overrides :data:`MIN_STEPS` (tests of small problems). ``progress(line)``, when given,
    hears of the start and of every :data:`PROGRESS_EVERY` th round (its gap).
    """
    import highspy  # noqa: PLC0415

    k = block_steps(d, min_steps=min_steps)
    if k is None:
        return why_not(d, min_steps=min_steps)
    progress = progress or (lambda line: None)
    progress(f"decomposition on {k}-step blocks (certified gap {tol:g})")
    start = time.perf_counter()
    inf = highspy.kHighsInf
    # one power unit for both LPs: the sizes, the cuts and theta pass between them in pu (the
    # block means' lower peak can round to another power of two: the master then read the
    # subproblem's pu at half their size and its bound exceeded the exact optimum, issue 31)
    unit = kw_per_pu(d)
    master_lp = build_lp(coarse_inputs(d, k), unit_kw=unit)
    keys = master_lp.size_keys
    size_cols = np.array([master_lp.cols[key] for key in keys], dtype=np.int32)
    cost = master_lp.arrays()["cost"]
    capital = np.zeros_like(cost)
    capital[size_cols] = cost[size_cols]
    operating = cost - capital
    master = to_highs(master_lp)
    theta = master_lp.n_col
    master.addCol(1.0, -inf, inf, 0, np.zeros(0, np.int32), np.zeros(0))
    master.changeColsCost(master_lp.n_col, np.arange(master_lp.n_col, dtype=np.int32), capital)
    used = np.flatnonzero(operating)
    master.addRow(0.0, inf, len(used) + 1, np.append(used, theta).astype(np.int32),
                  np.append(-operating[used], 1.0))
    sub_lp = build_lp(dataclasses.replace(d, unserved_usd_per_kwh=lost_load_usd_per_kwh(d)),
                      fixed_sizes=True, unit_kw=unit)
    base = sub_lp.arrays()
    sub = to_highs(sub_lp)
    options = {"solver": "simplex"}
    t_master = t_sub = 0.0
    best = None
    upper, lower = math.inf, -math.inf
    step = 1.0
    for it in range(1, max_iterations + 1):
        t_master += _run(master, options)
        if master.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return "the aggregated master LP did not solve to optimality"
        xm = np.asarray(master.getSolution().col_value)
        lower = max(lower, master.getInfo().objective_function_value)
        gap = relative_gap(upper, lower)
        if gap <= tol:
            break
        target = np.maximum(xm[size_cols], 0.0)
        # in-out stabilisation: a step from the best sizes towards the master's keeps the
        # dispatch near its last basis (cheap re-solves); the cut there is as valid
        trial = target if best is None else best[2] + step * (target - best[2])
        sizes = {key: float(v) for key, v in zip(keys, trial, strict=True)}
        last = trial
        cols, lo, hi, rows, row_hi = sub_lp.bounds_for(sizes, base)
        sub.changeColsBounds(len(cols), cols.astype(np.int32), lo, hi)
        if len(rows):
            sub.changeRowsBounds(len(rows), rows.astype(np.int32),
                                 np.full(len(rows), -inf), row_hi)
        # from the last basis: dual simplex after a change of bounds
        t_sub += _run(sub, options)
        if sub.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return "a dispatch subproblem did not solve to optimality"
        sol = sub.getSolution()
        x = np.asarray(sol.col_value)
        q = sub.getInfo().objective_function_value
        cap = sum(sub_lp.capital[key][1] * v for key, v in sizes.items())
        unserved = float(x[sub_lp.cols["unserved"]].sum())
        served = unserved <= 1e-9 * max(1.0, float(np.abs(d.load_kw).sum()) / sub_lp.kw_per_pu)
        improved = served and cap + q < upper
        if improved:
            upper, best = cap + q, (x.copy(), dict(sizes), trial)
        step = STEP_IN if improved else STEP_OUT
        gap = relative_gap(upper, lower)
        if it % PROGRESS_EVERY == 0:
            progress(f"decomposition round {it}, "
                     + (f"gap {gap:.1e}" if math.isfinite(gap) else "no served dispatch yet"))
        if gap <= tol:
            break
        if time_limit_s is not None and time.perf_counter() - start > time_limit_s:
            return (f"the decomposition had not reached its certified gap when time_limit_s "
                    f"ran out ({it} rounds)")
        grad = sub_lp.size_gradient(np.asarray(sol.col_dual), np.asarray(sol.row_dual))
        g = np.array([grad[key] for key in keys])
        xv = np.array([sizes[key] for key in keys])
        # theta >= q + g (x - x_k)
        master.addRow(q - float(g @ xv), inf, len(keys) + 1,
                      np.append(size_cols, theta).astype(np.int32), np.append(-g, 1.0))
    else:
        return (f"the decomposition did not reach a certified gap of {tol:g} in "
                f"{max_iterations} rounds")
    if lower > upper + 1e-9 * max(abs(upper), 1.0):
        # bounds crossed: the master is not a relaxation of this problem (a defect, never a
        # certificate); the caller solves the exact LP
        return ("its bounds crossed (lower above upper: the master was not a relaxation); "
                "please report this problem")
    x, sizes, trial = best
    if not np.array_equal(trial, last):
        # the subproblem ends at its best sizes, so its basis is optimal for them (the
        # tie-break passes start from it)
        cols, lo, hi, rows, row_hi = sub_lp.bounds_for(sizes, base)
        sub.changeColsBounds(len(cols), cols.astype(np.int32), lo, hi)
        if len(rows):
            sub.changeRowsBounds(len(rows), rows.astype(np.int32),
                                 np.full(len(rows), -inf), row_hi)
        t_sub += _run(sub, options)
        if sub.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return "the final dispatch subproblem did not solve to optimality"
        x = np.asarray(sub.getSolution().col_value)
    u = sub_lp.kw_per_pu
    return Decomposition(lp=sub_lp, x=x, sizes=sizes, lower_bound_usd=lower * u,
                         upper_bound_usd=upper * u, gap=gap, iterations=it, block_steps=k,
                         master_time_s=t_master, dispatch_time_s=t_sub, highs=sub)
