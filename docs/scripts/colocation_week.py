"""The colocation process with the measured week beside the flat one, on the given NLR cases.

Run from the project root: ``python docs/scripts/colocation_week.py`` (~5 min on two free
cores; needs no shared data). For each process — the preset (``fitted("colocation")``, days
of the week flat), the same with the measured weekend/weekday ratio (``"weekday-weekend"``,
``fit.weekday_weekend`` of the fit's file, ``docs/scripts/fit_arrivals.py``), and that week
with the numbers its own calibration chose (``screen_arrival_structures.py --calibrate
--days-of-week weekday-weekend``: σ² 0.5, a 0.35, τ_L 36 h, k 1) — it runs
``benchmarks.bench_validation.colocation_case`` (one year 2018 at 1 min, u = 0.4 and 0.8,
seeds 1-5) and prints the judged statistics of seed 1 and the queue figures' mean over the
seeds beside NLR's, with issue 13's tolerance (``docs/validation.md``, "The week of the
submissions"). ``--weaker-levels``: instead, the measured week with weaker activity levels
than the calibration grid holds (σ² 0.3, τ_L 36 h, k 2; a = 0.2 and none) — a look outside
the calibration, not a candidate.
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
#: the numbers the calibration with the measured week chose (σ², a, τ_L [h], k)
RECALIBRATED = (0.5, 0.35, 36, 1)


def processes() -> dict:
    """name -> CoxArrivals: the preset, the measured week, the measured week recalibrated."""
    preset = A.fitted("colocation")
    fit = json.loads((A.DATA / "arrivals_helios_earth.json").read_text())["fit"]
    daily = np.asarray(preset.hour_of_week).reshape(7, 24)[0]
    days = A._days_of_week("weekday-weekend", fit)
    week = dataclasses.replace(preset, hour_of_week=tuple(np.outer(days, daily / daily.mean())
                                                          .ravel()))
    s2, a, tau_h, k = RECALIBRATED
    return {"preset (flat week)": preset, "weekday-weekend": week,
            "weekday-weekend, recalibrated": dataclasses.replace(
                week, sigma2=s2, level_amplitude=a, level_tau_s=tau_h * 3600.0,
                level_sharpness=k)}


def weaker_levels() -> dict:
    """name -> CoxArrivals: the measured week with a = 0.2 and with no activity level."""
    week = processes()["weekday-weekend"]
    return {f"weekday-weekend, σ² 0.3, a {a}": dataclasses.replace(
        week, sigma2=0.3, level_amplitude=a, level_tau_s=36 * 3600.0, level_sharpness=2.0)
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
