"""The inference demand shapes on the NLR study's given inference cases.

Run from the project root (needs the NLR statistics: ``AILOAD_NLR_STATISTICS`` or
``../shared/data``, as ``python -m benchmarks --only validation``)::

    python docs/scripts/compare_inference_shapes.py      # ~1 min

For u = 0.2 and 0.8 it runs ``inference-1mw`` for the validation year (2018 at 1 min) with
``shape="azure-2024-week"`` (the default: the digitised Azure week with its day levels and
minute spread; seeds 1-3), with the same week **without** its random part (the typical week
repeated, given as a Series) and with ``shape="servegen-m-large"`` (seed 1), and prints each
statistic the validation judges beside NLR's, with the weekend/weekday ratio of busy nodes and
the weekday plateau (median busy nodes 12-20 h over 0-6 h, the run's clock: UTC).
docs/facility.md and docs/validation.md quote its output.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import aiload  # noqa: E402
from aiload.facility.demand import DemandShape  # noqa: E402
from benchmarks import bench_validation as bv  # noqa: E402

KEYS = ("mean_mw", "median_mw", "p90_mw", "max_mw", "std_mw", "util_median",
        "effective_requests_per_s", "incomplete_requests_per_s")
JUDGED = {"mean_mw": 5, "median_mw": 5, "p90_mw": 5, "max_mw": 5, "std_mw": 10}


def typical_week() -> pd.Series:
    """The Azure week on the validation year's calendar without day levels or minute spread."""
    start = pd.Timestamp(bv.START)
    n = int((pd.Timestamp(bv.YEAR_END) - start).total_seconds() // 600)
    values = DemandShape("azure-2024-week", start, 600.0, n, bursts=False, rng=None)()
    return pd.Series(values, pd.date_range(start, periods=n, freq="10min"))


def case(u: float, shape, seed: int) -> dict:
    base = aiload.facility.presets.inference_1mw(u)
    spec = dataclasses.replace(
        base, inference=(dataclasses.replace(base.inference[0], shape=shape),))
    load = aiload.facility(spec, start=bv.START, end=bv.YEAR_END, freq="1min", seed=seed,
                           progress=False)
    power = load.power
    stats = bv.power_stats(power, spec.fleet.nodes)
    served = float(power["served_requests_per_s"].mean())
    stats["effective_requests_per_s"] = served
    stats["incomplete_requests_per_s"] = float(power["requests_per_s"].mean()) - served
    busy = power["busy_nodes"]
    day, hour = busy.index.dayofweek, busy.index.hour
    stats["weekend_over_weekday"] = busy[day >= 5].mean() / busy[day < 5].mean()
    weekday = busy[day < 5]
    stats["plateau"] = (weekday[(weekday.index.hour >= 12) & (weekday.index.hour < 20)].median()
                        / weekday[weekday.index.hour < 6].median())
    stats["busy_mean"] = busy.mean() / spec.fleet.nodes
    del hour
    return stats


def main() -> None:
    nlr = bv.nlr_table("inference_1mw")
    runs = [("azure-2024-week", "azure-2024-week", seed) for seed in (1, 2, 3)]
    runs += [("typical week, no random part", typical_week(), 1),
             ("servegen-m-large", "servegen-m-large", 1)]
    for u in (0.2, 0.8):
        ref = nlr.loc[u]
        for name, shape, seed in runs:
            stats = case(u, shape, seed)
            inside = sum(abs(stats[k] / ref[k] - 1) * 100 <= tol for k, tol in JUDGED.items())
            cells = [f"{k} {stats[k]:.4g} ({(stats[k] / ref[k] - 1) * 100:+.1f} %)"
                     if ref[k] else f"{k} {stats[k]:.4g} (NLR 0)" for k in KEYS]
            print(f"u = {u}, {name}, seed {seed}: {inside}/5 judged within; busy mean "
                  f"{stats['busy_mean']:.4f}; weekend/weekday busy "
                  f"{stats['weekend_over_weekday']:.3f}, weekday plateau 12-20 h / 0-6 h "
                  f"{stats['plateau']:.2f}; " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
