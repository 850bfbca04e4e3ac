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
- ``10 facility years generated on 2 Dask workers [s]``: the queue scenario's own path
  (``scenarios.queue_study.run_facilities``) for ten queued facilities (colocation-10mw and
  inference-1mw in turn, a year hourly each, their own seeds and clocks) on a local Dask
  cluster of two processes; baseline: the same ten one after another in this process; the
  series must be the same bits; target: ratio < 1 (they run in parallel).
"""

from __future__ import annotations

import tempfile
import time
import warnings
from pathlib import Path

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


def _queue_toml(end: str) -> str:
    """A scenario of ten queued facilities (no grid study: only their generation)."""
    tables = []
    for k in range(10):
        kind = ("preset = \"colocation-10mw\"\nutilization = 0.5" if k % 2 == 0
                else "preset = \"inference-1mw\"")
        tables.append(f"[[facility]]\nname = \"site {k}\"\nbus = {BUSES[k]}\n{kind}\n"
                      f"timezone = \"{ZONES[k]}\"\nstart = 2025-01-01T00:00:00Z\n"
                      f"end = {end}\nfreq = \"1h\"\n")
    return ("name = \"bench-queue\"\n[queue]\nseed = 0\n\n" + "\n".join(tables)
            + "\n[grid]\nnetwork = \"case118\"\nstudies = [\"timeseries\"]\n")


def generation_row(quick: bool) -> dict:
    """Ten facility years generated serially and on two local Dask workers."""
    from scenarios.loader import load_scenario  # noqa: PLC0415
    from scenarios.queue_study import run_facilities  # noqa: PLC0415

    end = "2025-02-01T00:00:00Z" if quick else "2026-01-01T00:00:00Z"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench-queue.toml"
        path.write_text(_queue_toml(end), encoding="utf-8")
        scenario = load_scenario(path)
    t0 = time.perf_counter()
    serial = run_facilities(scenario, workers=0)
    t_serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    parallel = run_facilities(scenario, workers=2)
    t_dask = time.perf_counter() - t0  # cluster start and worker warm-up included
    for bus, load in serial.items():
        pd.testing.assert_frame_equal(load.power, parallel[bus].power)
    ratio = t_dask / t_serial
    span = "a month" if quick else "a year"
    return {"name": f"10 facility years generated on 2 Dask workers ({span} hourly each) [s]",
            "value": t_dask, "unit": "s", "baseline_name": "the same ten one after another",
            "baseline_value": t_serial, "ratio": ratio, "target": "ratio < 1",
            "passed": bool(ratio < 1.0)}


def run(quick: bool = False) -> list[dict]:
    rows = _power_flow_rows(quick)
    rows.append(generation_row(quick))
    return rows


def _power_flow_rows(quick: bool) -> list[dict]:
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
