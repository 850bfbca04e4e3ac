"""The two bundled inference demand shapes on the NLR study's given inference cases.

Run from the project root (needs the NLR statistics: ``AILOAD_NLR_STATISTICS`` or
``../shared/data``, as ``python -m benchmarks --only validation``)::

    python docs/scripts/compare_inference_shapes.py

For u = 0.2 and 0.8 it runs ``inference-1mw`` for the validation year (2018 at 1 min, seed 1)
with ``shape="servegen-m-large"`` (the default) and ``shape="azure-2024-week"`` and prints each
statistic the validation judges beside NLR's, with the weekend/weekday ratio of busy nodes and
the hour-of-day swing of their median (local time of the start, UTC here). docs/facility.md
quotes its output.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import aiload  # noqa: E402
from benchmarks import bench_validation as bv  # noqa: E402

SHAPES = ("servegen-m-large", "azure-2024-week")
KEYS = ("mean_mw", "median_mw", "p90_mw", "max_mw", "std_mw", "util_median",
        "effective_requests_per_s", "incomplete_requests_per_s")


def case(u: float, shape: str) -> dict:
    base = aiload.facility.presets.inference_1mw(u)
    spec = dataclasses.replace(
        base, inference=(dataclasses.replace(base.inference[0], shape=shape),))
    load = aiload.facility(spec, start=bv.START, end=bv.YEAR_END, freq="1min", seed=bv.SEED,
                           progress=False)
    power = load.power
    stats = bv.power_stats(power, spec.fleet.nodes)
    served = float(power["served_requests_per_s"].mean())
    stats["effective_requests_per_s"] = served
    stats["incomplete_requests_per_s"] = float(power["requests_per_s"].mean()) - served
    busy = power["busy_nodes"]
    day = busy.index.dayofweek
    stats["weekend_over_weekday"] = busy[day >= 5].mean() / busy[day < 5].mean()
    by_hour = busy.groupby(busy.index.hour).median()
    stats["hour_median_max_over_min"] = by_hour.max() / by_hour.min()
    return stats


def main() -> None:
    nlr = bv.nlr_table("inference_1mw")
    for u in (0.2, 0.8):
        ref = nlr.loc[u]
        for shape in SHAPES:
            stats = case(u, shape)
            cells = [f"{k} {stats[k]:.4g} ({(stats[k] / ref[k] - 1) * 100:+.1f} %)"
                     if ref[k] else f"{k} {stats[k]:.4g} (NLR 0)" for k in KEYS]
            print(f"u = {u}, {shape}: weekend/weekday busy {stats['weekend_over_weekday']:.3f}, "
                  f"hour-of-day median max/min {stats['hour_median_max_over_min']:.2f}; "
                  + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
