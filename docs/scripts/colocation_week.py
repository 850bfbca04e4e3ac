"""The colocation process on the measured week beside the flat one, on the given NLR cases.

Run from the project root: ``python docs/scripts/colocation_week.py`` (~7 min on two free
cores; needs no shared data). For each process — the flat week with its own calibration (the
preset before issue 27: σ² 0.3, a 0.45, τ_L 18 h, k 2), the measured weekend/weekday ratio
(``"weekday-weekend"``, ``fit.weekday_weekend`` of the fit's file,
``docs/scripts/fit_arrivals.py``) with those numbers, that week with the numbers the
28-point grid chose (σ² 0.5, a 0.35, τ_L 36 h, k 1), and the preset (the measured week,
calibrated on the extended grid: σ² 0.15, a 0.45, τ_L 18 h, k 1) — it runs
``benchmarks.bench_validation.colocation_case`` (one year 2018 at 1 min, u = 0.4 and 0.8,
seeds 1-5) and prints the judged statistics of seed 1 and the queue figures' mean over the
seeds beside NLR's, with issue 13's tolerance (``docs/validation.md``, "The week of the
submissions"). ``--weaker-levels``: instead, the measured week with weaker activity levels
than the 28-point grid holds (σ² 0.3, τ_L 36 h, k 2; a = 0.2 and none) — a look outside
that calibration, not a candidate.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1].parent
sys.path.insert(0, str(ROOT))

import aiload.facility.arrivals as A  # noqa: E402
from benchmarks import bench_validation as bv  # noqa: E402

SEEDS = range(1, 6)
#: the flat week's calibration, the preset before issue 27 (σ², a, τ_L [h], k)
FLAT = (0.3, 0.45, 18, 2.0)
#: the numbers the 28-point grid chose with the measured week (σ², a, τ_L [h], k)
RECALIBRATED = (0.5, 0.35, 36, 1.0)


def _numbers(process, point):
    s2, a, tau_h, k = point
    return dataclasses.replace(process, sigma2=s2, level_amplitude=a,
                               level_tau_s=tau_h * 3600.0, level_sharpness=k)


def processes() -> dict:
    """name -> CoxArrivals: the flat week (former preset), the measured week with the flat
    week's numbers, with the 28-point grid's numbers, and the preset."""
    preset = A.fitted("colocation")
    fit = json.loads((A.DATA / "arrivals_helios_earth.json").read_text())["fit"]
    week = np.asarray(preset.hour_of_week).reshape(7, 24)
    daily = week[0] / week[0].mean()  # the daily cycle, the same shape every day
    days = A._days_of_week("weekday-weekend", fit)
    flat = _numbers(dataclasses.replace(preset, hour_of_week=tuple(np.tile(daily, 7))), FLAT)
    measured = dataclasses.replace(flat, hour_of_week=tuple(np.outer(days, daily).ravel()))
    return {"flat week (the preset before issue 27)": flat,
            "weekday-weekend, the flat week's numbers": measured,
            "weekday-weekend, the 28-point grid's numbers": _numbers(measured, RECALIBRATED),
            "weekday-weekend, the preset": preset}


def weaker_levels() -> dict:
    """name -> CoxArrivals: the measured week with a = 0.2 and with no activity level."""
    week = processes()["weekday-weekend, the flat week's numbers"]
    return {f"weekday-weekend, σ² 0.3, a {a}": _numbers(week, (0.3, a, 36, 2.0))
            for a in (0.2, 0.0)}


def main(weaker: bool = False) -> None:
    nlr = pd.read_csv(bv.NLR / "colocation_10mw.csv").set_index("avg_utilization")
    judged = [k for k in bv.COLOCATION_KEYS if k in bv.TOLERANCE]
    for name, process in (weaker_levels() if weaker else processes()).items():
        for u in (0.4, 0.8):
            runs = [bv.colocation_case(u, seed=seed, arrival_process=process)[0]
                    for seed in SEEDS]
            cells, within = [], 0
            for key in judged:
                err = runs[0][key] / nlr.loc[u, key] - 1.0
                ok = abs(err) <= bv.TOLERANCE[key]
                within += ok
                cells.append(f"{key} {runs[0][key]:.4g} ({err:+.1%}{'' if ok else ', OUT'})")
            print(f"{name} | u = {u} | seed 1: {within} of {len(judged)} within | "
                  + "; ".join(cells), flush=True)
            for key in bv.QUEUE_KEYS:
                values = [r[key] for r in runs]
                print(f"{name} | u = {u} | {key}, mean of seeds 1-5: {np.mean(values):.4g} "
                      f"({np.mean(values) / nlr.loc[u, key] - 1:+.1%}; range "
                      f"{min(values):.3g}-{max(values):.3g})", flush=True)


if __name__ == "__main__":
    main(weaker="--weaker-levels" in sys.argv[1:])
