"""Benchmark of ``grid.cosimulate``: the closed loop against the open-loop run it replaces.

Case: ``campus-100mw`` at bus 12 of case118 (the ``campus-100mw-flexible`` scenario's
connection: generator Q limits on, limits 0.94-1.06 pu, the illustrative background of
``grid.flexible_run.cosine_background``), a year at 5-min steps and a 5-min control period,
``"voltage"`` controller.

- **closed loop**: ``grid.cosimulate(..., open_loop=False)`` — the facility model with the
  callable limit, one warm-started Newton power flow per control period (more while the
  controller searches the headroom); the closed-loop ``GridResult`` is built from those
  per-period power flows (``grid.cosim_grid``: equal to ``grid.timeseries`` on the result,
  which is no longer run again);
- **open loop** (the baseline): ``aiload.facility(...)`` of the same year plus
  ``grid.timeseries`` on its ``facility_kw``.

Target (issue 15): closed loop within 3x the open loop. The machine's load average is
reported with each row (the machine is shared; timings move with it).
"""

from __future__ import annotations

import os
import time
import warnings

import pandas as pd

import aiload
import grid
from grid.flexible_run import cosine_background

BUS = 12
LIMITS = grid.Limits(vm_min_pu=0.94, vm_max_pu=1.06)
START = pd.Timestamp("2025-01-01", tz="UTC")
TARGET_RATIO = 3.0


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def run(quick: bool = False) -> list[dict]:
    """``quick``: one week instead of a year (a smoke check); ``AILOAD_BENCH_FLEX_DAYS``
    sets another horizon [days]."""
    days = int(os.environ.get("AILOAD_BENCH_FLEX_DAYS", "7" if quick else "365"))
    end = START + pd.Timedelta(days=days)
    index = pd.date_range(START, end, freq="5min", inclusive="left")
    background = cosine_background(index)
    net = grid.networks.load("case118")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # first-call costs (imports, profile cache) outside the timings
        aiload.facility("campus-100mw", start=START, end="1D", freq="5min", progress=False)
        grid.timeseries(net, pd.Series(1.0, index[:12]), bus=BUS, background=background[:12])
        load_before = _load()
        t0 = time.perf_counter()
        load = aiload.facility("campus-100mw", start=START, end=end, freq="5min", seed=0,
                               progress=False)
        t_facility = time.perf_counter() - t0
        grid.timeseries(net, load.power["facility_kw"], bus=BUS, background=background,
                        limits=LIMITS)
        t_open = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = grid.cosimulate(net, "campus-100mw", bus=BUS, start=START, end=end, freq="5min",
                              control_period="5min", controller="voltage", limits=LIMITS,
                              background=background, seed=0, open_loop=False)
        t_closed = time.perf_counter() - t0
    ratio = t_closed / t_open
    note = (f"load {load_before} -> {_load()}; facility {t_facility:.1f} s of the open loop; "
            f"loop (facility + per-period power flows) {res.wall_s:.1f} s of the closed, of "
            f"which the callback (power flows, controller) {res.network_s:.1f} s; "
            f"{len(res.control):,} periods, {res.violation_steps} steps with a violation")
    return [{"name": f"cosimulate case118 {days} d @5 min (closed loop)", "value": t_closed,
             "unit": "s", "baseline_name": "facility + grid.timeseries (open loop)",
             "baseline_value": t_open, "ratio": ratio, "target": f"<= {TARGET_RATIO:g}x",
             "passed": ratio <= TARGET_RATIO, "note": note}]


if __name__ == "__main__":
    for row in run(quick=os.environ.get("QUICK") == "1"):
        print(row)
