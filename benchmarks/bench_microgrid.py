"""Microgrid sizing: build and solve time of an hourly and a 15-minute year, Pyomo vs linopy.

The load is aiload's simulated ``campus-100mw`` facility for 2025 (seed 0), with PV
(bundled Greensboro TMY), battery, generator, an import limit of 70 MW and a demand charge,
priced as in docs/microgrid.md. The baseline, measured in the same run, is the same LP
built with linopy (``benchmarks/microgrid_linopy.py``, in kW and USD, unscaled) and solved
by HiGHS' interior point method, the fastest HiGHS option on the unscaled LP (its dual
simplex had not finished after 5 min). ``microgrid`` solves its per-unit model with dual
simplex. Targets (issue 6, 2-core machine): hourly year built < 2 s, solved < 30 s.
A like-for-like row (issue 17) solves the linopy model on the same per-unit data
(:func:`per_unit_inputs`: every kW and kWh divided by ``kw_per_pu``) with the same HiGHS dual
simplex, so the two interfaces differ only in how they build and hand over the model.

``run(quick=True)`` does the hourly year only; the 15-minute year (35,040 steps) runs
otherwise. Measured figures and the machine load are in docs/microgrid.md. Timings depend
on machine load: the ratios to the baseline measured in the same run are steadier.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time

import pandas as pd

import aiload
import microgrid as mg
from microgrid.model import ModelInputs, build_model, kw_per_pu
from microgrid.sizing import prepare_inputs
from microgrid.solve import PRIMAL_SIMPLEX_MIN_STEPS, solve_model

try:  # python -m benchmarks (package) or python benchmarks/bench_microgrid.py
    from benchmarks.microgrid_linopy import build_linopy
except ImportError:  # pragma: no cover
    from microgrid_linopy import build_linopy

__all__ = ["run", "campus_inputs", "per_unit_inputs"]

START = pd.Timestamp("2025-01-01", tz="UTC")
END = pd.Timestamp("2026-01-01", tz="UTC")
LIMIT_KW = 70_000.0


def campus_inputs(freq: str):
    """ModelInputs of the campus-100mw 2025 sizing at step ``freq``."""
    load = aiload.facility(
        "campus-100mw", start=START, end=END, freq=freq, seed=0, progress=False
    ).power["facility_kw"]
    crf = mg.capital_recovery_factor
    costs = mg.Costs(
        pv_usd_per_kwp_year=1100 * crf(0.07, 30) + 18,
        battery_usd_per_kwh_year=250 * crf(0.07, 15) + 2.5,
        battery_usd_per_kw_year=300 * crf(0.07, 15),
        generator_usd_per_kw_year=1000 * crf(0.07, 25) + 15,
        import_usd_per_kwh=0.07,
        fuel_usd_per_kwh=0.08,
        demand_charge_usd_per_kw_month=15.0,
    )
    data, _ = prepare_inputs(
        load,
        pv_availability=mg.pv_availability(index=load.index),
        costs=costs,
        battery=mg.Battery(),
        generator=mg.Generator(emission_kg_per_kwh=0.45),
        import_limit_kw=LIMIT_KW,
    )
    return data


def per_unit_inputs(d: ModelInputs) -> tuple[ModelInputs, float]:
    """``d`` with every power and energy divided by ``kw_per_pu(d)``, and that unit [kW/pu].

    Prices per kWh and costs per kW-year keep their values, so the optimum of the returned
    inputs is the kW optimum divided by the unit (docs/formulation.md, "Scaling").
    """
    u = kw_per_pu(d)

    def div(x):
        return x if x is None or math.isinf(x) else x / u

    battery = dataclasses.replace(d.battery, max_energy_kwh=div(d.battery.max_energy_kwh),
                                  max_power_kw=div(d.battery.max_power_kw))
    generator = dataclasses.replace(d.generator, max_power_kw=div(d.generator.max_power_kw),
                                    unit_size_kw=div(d.generator.unit_size_kw))
    scaled = dataclasses.replace(
        d, load_kw=d.load_kw / u, battery=battery, generator=generator,
        import_limit_kw=div(d.import_limit_kw), export_limit_kw=div(d.export_limit_kw),
        max_pv_kwp=div(d.max_pv_kwp), ramp_limit_kw_per_h=div(d.ramp_limit_kw_per_h),
        carbon_cap_t_per_year=div(d.carbon_cap_t_per_year),
        dump_load_max_kw=div(d.dump_load_max_kw),
    )
    return scaled, u


def _row(name, value, unit, baseline_name, baseline_value, target, passed):
    ratio = value / baseline_value if baseline_value else None
    return dict(name=name, value=value, unit=unit, baseline_name=baseline_name,
                baseline_value=baseline_value, ratio=ratio, target=target, passed=passed)


def _measure(label: str, data, *, targets: bool, solve_linopy: bool) -> list[dict]:
    t0 = time.perf_counter()
    m = build_model(data)
    build_s = time.perf_counter() - t0
    print(f"  {label}: pyomo built in {build_s:.2f} s", file=sys.stderr, flush=True)
    res = solve_model(m)
    print(f"  {label}: pyomo/HiGHS {res.status} in {res.solve_time_s:.1f} s, objective "
          f"{res.objective_usd:,.2f} USD/yr, gap {res.mip_gap:.1e}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    lm = build_linopy(data)
    lin_build_s = time.perf_counter() - t0
    rows = [
        _row(f"{label} build, pyomo / linopy", build_s, "s", "linopy build", lin_build_s,
             "< 2 s" if targets else "-", build_s < 2 if targets else None),
    ]
    if solve_linopy:
        t0 = time.perf_counter()
        lm.solve(solver_name="highs", io_api="direct", progress=False, output_flag=False,
                 solver="ipm")
        lin_solve_s = time.perf_counter() - t0
        rows.append(_row(f"{label} solve, pyomo pu dual simplex / linopy kW ipm",
                         res.solve_time_s, "s", "linopy solve", lin_solve_s,
                         "< 30 s" if targets else "-",
                         res.solve_time_s < 30 if targets else None))
        gap = abs(res.objective_usd - float(lm.objective.value)) / abs(res.objective_usd)
        rows.append(_row(f"{label} objective, |pyomo - linopy| / pyomo", gap, "-",
                         "linopy objective", float(lm.objective.value), "< 1e-6", gap < 1e-6))
        # like for like: the same per-unit data, the same HiGHS dual simplex
        scaled, u = per_unit_inputs(data)
        t0 = time.perf_counter()
        lpu = build_linopy(scaled)
        lpu.solve(solver_name="highs", io_api="direct", progress=False, output_flag=False,
                  solver="simplex")
        lpu_s = time.perf_counter() - t0
        print(f"  {label}: linopy pu dual simplex built + solved in {lpu_s:.1f} s",
              file=sys.stderr, flush=True)
        rows.append(_row(f"{label} build + solve, pyomo / linopy, both pu dual simplex",
                         build_s + res.solve_time_s, "s", "linopy pu build + solve", lpu_s,
                         "-", None))
        lgap = abs(res.objective_usd - u * float(lpu.objective.value)) / abs(res.objective_usd)
        rows.append(_row(f"{label} objective, |pyomo - linopy pu| / pyomo", lgap, "-",
                         "linopy pu objective [USD/yr]", u * float(lpu.objective.value),
                         "< 1e-6", lgap < 1e-6))
    else:
        method = ("primal simplex" if len(data.load_kw) > PRIMAL_SIMPLEX_MIN_STEPS
                  else "dual simplex")
        rows.append(_row(f"{label} solve (pu, HiGHS {method})", res.solve_time_s, "s",
                         "-", None, "< 600 s", res.status == "optimal"
                         and res.solve_time_s < 600))
        rows.append(_row(f"{label} duality gap (HiGHS primal-dual objective error)",
                         res.mip_gap, "-", "-", None, "< 1e-6", res.mip_gap < 1e-6))
    return rows


def run(quick: bool = False) -> list[dict]:
    """Build/solve times of the campus sizing (see module docstring)."""
    rows = _measure("hourly year", campus_inputs("1h"), targets=True, solve_linopy=True)
    if not quick:
        rows += _measure("15-min year", campus_inputs("15min"), targets=False,
                         solve_linopy=False)
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
