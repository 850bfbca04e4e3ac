"""Facility model: wall time and peak memory of the reference runs, and the SimPy floor.

Rows (see ``benchmarks/__main__.py`` for the contract):

- ``colocation-10mw`` at ``utilization=0.8``, one year at 1 min (target <= 60 s);
- the same preset, one week at 1 s;
- ``campus-100mw``, one year at 1 min (target <= 180 s);
- the one-time numba import and compilation of the summation loop, done in the warm-up and
  reported on its own row (0 without numba);
- peak memory of each run (target < 4 GB): peak resident set size of a fresh interpreter that
  runs only that case (``resource.getrusage``), so it includes Python and the imports;
- the ratio of the whole simulation's wall time to a bare SimPy loop that schedules and
  processes as many events as the simulation did, measured in the same run (target <= 3×).
  "Events" are the simulation's discrete events (``meta["events"]``: every job arrival and
  every job end within the horizon, the burn-in included, plus the inference services'):
  the loop is what a plain SimPy model of the same events would cost at the least. The
  engine itself processes only the arrivals as SimPy timeouts (chained callbacks, cheaper
  than the loop's generator resumes) and settles the ends arithmetically; the row reports
  that count beside the events. The ratio is therefore a cost per simulated event against
  plain SimPy, not aiload's overhead over the SimPy work it does itself (on the colocation year
  that work is about 2/5 of the loop's). The loop runs in the same child process right before
  and right after the simulation and the baseline is the mean of the two: on a shared machine
  the load changes from minute to minute, and a baseline timed elsewhere or at another moment
  made the ratio swing 2–10×.
  Before the timed run, the numba loops are compiled (reported apart) and one hour of the
  same case is simulated, so one-time imports and first calls are not in the wall time. The
  half-second week at 1 s is run :data:`WEEK_REPEATS` times (median reported, with the range).

``quick=True`` shortens the horizons (one month, one day, one month) for a smoke check.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import simpy

ROOT = Path(__file__).resolve().parents[1]

START = "2025-01-01 00:00+00:00"


def bare_simpy_s(events: int) -> float:
    """Wall time of a SimPy process that schedules and processes ``events`` timeouts [s]."""
    env = simpy.Environment()

    def loop():
        for _ in range(events):
            yield env.timeout(1.0)

    env.process(loop())
    t0 = time.perf_counter()
    env.run()
    return time.perf_counter() - t0


_CHILD = """
import json, resource, sys, time
import numpy as np
import aiload.facility as f
from aiload.facility import summation as s
from aiload.facility import model as fm
from benchmarks.bench_facility import bare_simpy_s
simpy_events = [0]
_schedule = fm.schedule_jobs
def _counted(*args, **kwargs):  # the arrivals the engine processed as SimPy timeouts
    sched = _schedule(*args, **kwargs)
    simpy_events[0] = sched.simpy_events
    return sched
fm.schedule_jobs = _counted
preset, end, freq, kw = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
events, repeats = int(sys.argv[5]), int(sys.argv[6])
t_jit = time.perf_counter()
if s.numba_available():  # one-time import + compile of the summation loops, reported apart
    s.job_energy_at_edges(np.arange(3.0), np.array([0.5]), np.array([1.0]),
                          s.CumulativeEnergy(np.array([0.0, 1.0]), np.array([0.0, 1.0]), 1.0),
                          method="numba")
jit = time.perf_counter() - t_jit
# one hour of the same case first: imports, caches and first calls are not what is measured
f.facility(preset, start=%r, end="1h", freq=freq, progress=False, **kw)
runs = []
for _ in range(repeats):
    before = bare_simpy_s(events) if events else 0.0
    t0 = time.perf_counter()
    load = f.facility(preset, start=%r, end=end, freq=freq, progress=False, **kw)
    wall = time.perf_counter() - t0
    events = int(load.meta["events"])
    del load  # the loop after the run should not pay for the result's heap
    runs.append([wall, before, bare_simpy_s(events)])
print(json.dumps({"runs": runs, "events": events, "simpy_events": simpy_events[0], "jit": jit,
                  "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
""" % (START, START)

#: SimPy events of each case at seed 0 (for the bare loop before the run; the loop after it
#: uses the count the run reports)
EXPECTED_EVENTS = {("colocation-10mw", "365D", "1min"): 7_451_513,
                   ("colocation-10mw", "7D", "1s"): 209_637,
                   ("campus-100mw", "365D", "1min"): 8_791_651}


def _measure(preset: str, end: str, freq: str, repeats: int = 1, **kw):
    """Run one case ``repeats`` times in one fresh interpreter.

    Returns wall time [s], peak RSS [GiB], the simulation's events, the bare-loop baseline
    [s] (mean of the loop timed just before and just after the run, same process), the numba
    start-up [s], the range of the ratios (with repeats, the run with the median ratio is
    the one returned) and the job arrivals the engine processed as SimPy timeouts.
    """
    expected = EXPECTED_EVENTS.get((preset, end, freq), 0)
    out = subprocess.run([sys.executable, "-c", _CHILD, preset, end, freq, json.dumps(kw),
                          str(expected), str(repeats)], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    rows = []
    for wall, before, after in res["runs"]:
        floor = (before + after) / 2 if before > 0 else after
        rows.append((wall / floor, wall, floor))
    rows.sort()
    ratio, wall, floor = rows[len(rows) // 2]
    return (wall, res["maxrss_kib"] / 2**20, res["events"], floor, res["jit"],
            (rows[0][0], rows[-1][0]), res["simpy_events"])


#: the one-week-at-1-s case runs in about half a second, where the machine's speed moves by
#: tens of percent from one second to the next: it is run this many times in one process
#: (each between its own bare loops) and the run with the median ratio is reported
WEEK_REPEATS = 9


def _row(name, value, unit, baseline_name=None, baseline_value=None, ratio=None, target="",
         passed=None) -> dict:
    return {"name": name, "value": value, "unit": unit, "baseline_name": baseline_name,
            "baseline_value": baseline_value, "ratio": ratio, "target": target, "passed": passed}


def run(quick: bool = False) -> list[dict]:
    """Run the reference cases; return one row per figure."""
    year, week = ("30D", "1D") if quick else ("365D", "7D")
    cases = [
        (f"colocation-10mw u=0.8, {year} @ 1min", "colocation-10mw", year, "1min",
         {"utilization": 0.8}, 60.0, 1),
        (f"colocation-10mw u=0.8, {week} @ 1s", "colocation-10mw", week, "1s",
         {"utilization": 0.8}, None, WEEK_REPEATS),
        (f"campus-100mw, {year} @ 1min", "campus-100mw", year, "1min", {}, 180.0, 1),
    ]
    rows = []
    for label, preset, end, freq, kw, limit_s, repeats in cases:
        wall, peak_gib, events, floor, jit_s, spread, simpy_events = _measure(
            preset, end, freq, repeats, **kw)
        baseline = "bare SimPy loop, same event count"
        if repeats > 1:
            baseline += (f" (run with the median ratio of {repeats}: "
                         f"{spread[0]:.2f}-{spread[1]:.2f})")
        scaled = " for 365D (quick run: not judged)" if quick else ""
        rows.append(_row(f"{label}: wall time", wall, "s", target=(
            f"<= {limit_s:.0f} s{scaled}" if limit_s else "reported"),
            passed=(wall <= limit_s) if (limit_s and not quick) else None))
        rows.append(_row(f"{label}: peak memory", peak_gib, "GiB", target="< 4 GiB",
                         passed=peak_gib < 4.0))
        rows.append(_row(f"{label}: numba import + compile, once per process (not in wall time)",
                         jit_s, "s", target="reported"))
        rows.append(_row(f"{label}: simulation / bare SimPy ({events} events; the engine's "
                         f"SimPy timeouts: {simpy_events} arrivals)", wall, "s",
                         baseline_name=baseline, baseline_value=floor,
                         ratio=wall / floor if floor > 0 else None, target="<= 3x",
                         passed=(wall / floor <= 3.0) if floor > 0 else None))
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
