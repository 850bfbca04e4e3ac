"""Benchmark of the interconnection queue (issue 30): ten facilities in one power flow.

``grid.timeseries`` of ten facilities at ten case118 buses over an hourly year against the
same call with one facility, in the same run; target: ten cost at most 2x one.

Facility series: the *measured* hourly power of the HLRS Hawk supercomputer (see
:func:`benchmarks.bench_grid.hawk_hourly_mw`), each facility the year shifted by a
different number of days and given its own site time zone (the instants are the same UTC
hours), scaled to 30 MW each (300 MW in all, spread so that no bus breaks down). They are
real facility-level shapes, not outputs of ``aiload.facility``.

Rows (``run()``), each with Q limits enforced (case118's default: ``"newton_qlims"``) and
without (``enforce_q_lims=False``: the lightsim2grid batch engine):

- ``queue of 10, ... [s]``: the ten-facility year; baseline: one facility at bus 49 over the
  same year; ratio = ten / one (target <= 2).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

import grid
from benchmarks.bench_grid import hawk_hourly_mw

__all__ = ["run", "queue_series"]

BUSES = (49, 59, 80, 90, 100, 11, 20, 30, 70, 110)
ZONES = ("America/Chicago", "America/New_York", "America/Denver", "UTC", "Europe/Berlin",
         "Asia/Tokyo", "America/Los_Angeles", "Europe/London", "Asia/Singapore", "UTC")
PEAK_MW = 30.0
TARGET = 2.0


def queue_series(n_hours: int) -> dict[int, pd.Series]:
    """Ten facility series [MW] on the same UTC hours, each on its own site clock."""
    year = hawk_hourly_mw(n_hours, PEAK_MW)
    out = {}
    for k, (bus, tz) in enumerate(zip(BUSES, ZONES, strict=True)):
        shifted = np.roll(year.to_numpy(), 24 * 17 * k)
        out[bus] = pd.Series(shifted, index=year.index.tz_convert(tz), name="facility_mw")
    return out


def _best_of(fn, repeat: int) -> tuple[float, object]:
    best, result = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def run(quick: bool = False) -> list[dict]:
    n_hours = 720 if quick else 8760
    net = grid.networks.load("case118")
    queue = queue_series(n_hours)
    one = queue[49]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grid.timeseries(net, one.iloc[:24], bus=49)  # first-call costs (imports) untimed
        for q_lims in (None, False):
            t_one, r_one = _best_of(lambda q=q_lims: grid.timeseries(net, one, bus=49,
                                                                     enforce_q_lims=q), 2)
            t_ten, r_ten = _best_of(lambda q=q_lims: grid.timeseries(net, queue,
                                                                     enforce_q_lims=q), 2)
            assert r_ten.converged.all() and r_one.converged.all()
            ratio = t_ten / t_one
            rows.append({
                "name": f"queue of 10, case118, {n_hours} h ({r_ten.engine}) [s]",
                "value": t_ten, "unit": "s",
                "baseline_name": f"1 facility, same year ({r_one.engine})",
                "baseline_value": t_one, "ratio": ratio, "target": f"ratio <= {TARGET:g}",
                "passed": bool(ratio <= TARGET)})
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
