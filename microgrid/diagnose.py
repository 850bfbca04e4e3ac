"""Why a sizing has no solution: the binding limits named, the steps found.

``size`` calls :func:`explain_infeasible` when HiGHS reports an infeasible model: it re-solves
with a priced dump load, then with priced unserved energy too, and turns the result into a
:class:`~microgrid.solve.SizingInfeasibleError` that names the limits, the steps and what to
relax.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from microgrid.lp import build_lp, to_highs
from microgrid.model import ModelInputs, build_model, solution_unscaled
from microgrid.solve import SizingInfeasibleError, solve_highs, solve_model

__all__ = ["explain_infeasible", "limits_text"]

#: the price of the diagnostic dump load and unserved energy [USD/kWh]
_DIAGNOSTIC_USD_PER_KWH = 1000.0


def limits_text(d: ModelInputs) -> str:
    """The limits of a sizing that can make it infeasible, as one line of text."""
    limit = "chosen by the model" if d.import_limit_kw is None else f"{d.import_limit_kw:g} kW"
    parts = [
        f"import_limit_kw={limit}",
        f"generator.max_power_kw={d.generator.max_power_kw:g}",
        f"battery.max_energy_kwh={d.battery.max_energy_kwh:g}",
        f"battery.max_power_kw={d.battery.max_power_kw:g}",
        f"max_pv_kwp={d.max_pv_kwp:g}",
        f"max_dump_load_kw={d.dump_load_max_kw:g}",
    ]
    if math.isfinite(d.generator.max_run_hours_per_year):
        parts.append(f"generator.max_run_hours_per_year={d.generator.max_run_hours_per_year:g}")
    if math.isfinite(d.battery.max_cycles_per_year):
        parts.append(f"battery.max_cycles_per_year={d.battery.max_cycles_per_year:g}")
    if d.outage.any():
        parts.append(f"{int(d.outage.sum())} outage step(s)")
    if d.ramp_limit_kw_per_h is not None:
        parts.append(f"ramp_limit_kw_per_h={d.ramp_limit_kw_per_h:g}")
    if d.carbon_cap_t_per_year is not None:
        parts.append(f"carbon.cap_t_per_year={d.carbon_cap_t_per_year:g}")
    return ", ".join(parts)


def _relaxed_flows(d: ModelInputs) -> tuple[dict[str, np.ndarray], bool]:
    """Dump load and unserved energy [kW] of the diagnostic model (LP: ``microgrid.lp``, with
    every generator technology; MILP: the Pyomo model), and whether it has a solution."""
    if not d.generator.unit_commitment:
        lp = build_lp(d)
        res, x = solve_highs(to_highs(lp), len(d.load_kw), time_limit_s=60,
                             kw_per_pu=lp.kw_per_pu)
        if not res.has_solution:
            return {}, False
        return {k: x[lp.cols[k]] * lp.kw_per_pu for k in ("dump", "unserved")
                if k in lp.cols}, True
    m = build_model(d)
    res = solve_model(m, time_limit_s=60)
    if not res.has_solution:
        return {}, False
    out = {"dump": solution_unscaled(m, m.dump_pu)}
    if hasattr(m, "unserved_pu"):
        out["unserved"] = solution_unscaled(m, m.unserved_pu)
    return out, True


def explain_infeasible(d: ModelInputs, index: pd.DatetimeIndex) -> SizingInfeasibleError:
    """The error for an infeasible sizing: supply nothing can take, or load short (module
    docstring)."""
    # first: is it only supply the limits force but nothing takes (a priced dump load)?
    head = f"size: no sizing can serve load_kw under the given limits ({limits_text(d)})."
    tol = 1e-6 * max(1.0, float(d.load_kw.max()))
    dumping = {"dump_load_max_kw": math.inf, "dump_usd_per_kwh": _DIAGNOSTIC_USD_PER_KWH}
    flows, has_solution = _relaxed_flows(ModelInputs(**{**d.__dict__, **dumping}))
    short = np.zeros(0, dtype=int)
    if not has_solution:  # then with priced unserved energy too
        flows, has_solution = _relaxed_flows(ModelInputs(**{
            **d.__dict__, **dumping, "unserved_usd_per_kwh": _DIAGNOSTIC_USD_PER_KWH}))
        if not has_solution:
            return SizingInfeasibleError(head + " Relax one of these limits.")
        unserved = flows["unserved"]
        short = np.flatnonzero(unserved > tol)
    excess = np.maximum(flows["dump"] - d.dump_load_max_kw, 0.0)
    over = np.flatnonzero(excess > tol)
    if short.size == 0 and over.size:
        worst = int(over[np.argmax(excess[over])])
        return SizingInfeasibleError(
            f"{head} The limits force more supply than the load takes in {over.size} of "
            f"{len(index)} steps (first at {index[over[0]]}; worst {excess[worst]:.6g} kW at "
            f"{index[worst]}; {float(excess.sum() * d.dt_h):.6g} kWh in all), e.g. a net flow "
            "at the interconnection that may not fall as fast as the load (ramp limit) or a "
            "generator's minimum load. Allow a dump load (max_dump_load_kw >= "
            f"{math.ceil(float(excess.max())):d}), storage, export (export_limit_kw; for a "
            "minimum load, not a ramp limit), or relax the ramp limit / "
            "generator.min_load_fraction."
        )
    if short.size == 0:
        return SizingInfeasibleError(head + " Relax one of these limits.")
    energy_kwh = float(unserved.sum() * d.dt_h)
    worst = int(short[np.argmax(unserved[short])])
    return SizingInfeasibleError(
        f"{head} Even at the largest allowed sizes the load is short in {short.size} of "
        f"{len(index)} steps (first at {index[short[0]]}; worst {unserved[worst]:.6g} kW at "
        f"{index[worst]} against a load of {d.load_kw[worst]:.6g} kW; {energy_kwh:.6g} kWh in "
        "all). Raise the import limit or generator.max_power_kw, allow storage "
        "(battery.max_energy_kwh / max_power_kw) or remove outage steps / the ramp or carbon "
        "limit."
    )
