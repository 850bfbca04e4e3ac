"""Benchmark of issue 28: a campus-100mw day at 0.1 s with iteration cycles and failures,
streamed, and the stabilisation study on that day.

- **facility**: ``aiload.facility("campus-100mw", freq="100ms", dynamics=IterationDynamics(),
  stream_to=...)`` for one day (864,000 intervals), in a child process so its peak resident
  memory is its own; the baseline is the same day without dynamics. Target: under 4 GB.
- **study**: ``microgrid.stabilise`` on that day's ``facility_kw`` with the illustrative limits
  of docs/stabilisation.md (5 MW/s up and down over 1 s, 1 MW amplitude in 0.1-20 Hz), the
  campus's 78,400 GPUs (9,800 nodes of 8 H100). Target: 60 s or less, numba's compilation of
  the three loops included (the study is timed cold, as a scenario run meets it). Baseline:
  ``microgrid.stabilise.evaluate`` of the unmitigated day (one ramp pass and one Welch PSD:
  what judging a single candidate costs), timed in the same process (best of three); the
  ratio says how many such judgements the whole study is worth.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START = "2025-01-06 00:00+00:00"
GB = 1024 ** 3

_CHILD = r"""
import json, resource, sys, time
import aiload
from aiload.facility import IterationDynamics
dyn = IterationDynamics() if sys.argv[3] == "1" else None
t0 = time.perf_counter()
aiload.facility("campus-100mw", start=sys.argv[1], end=sys.argv[2], freq="100ms", seed=0,
                progress=False, stream_to=sys.argv[4], dynamics=dyn)
wall = time.perf_counter() - t0
print(json.dumps({"wall_s": wall,
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def _facility(end: str, dynamics: bool, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, START, end, "1" if dynamics else "0",
                          str(path)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"the facility child (dynamics={dynamics}) exited {out.returncode}:\n"
                           + out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> list[dict]:
    """``quick``: two hours instead of a day."""
    import microgrid  # noqa: PLC0415
    from aiload.facility import read_facility  # noqa: PLC0415

    end = "2h" if quick else "1D"
    with tempfile.TemporaryDirectory() as tmp:
        plain = _facility(end, False, Path(tmp) / "plain.parquet")
        dyn = _facility(end, True, Path(tmp) / "dyn.parquet")
        load = read_facility(Path(tmp) / "dyn.parquet").power["facility_kw"]
    limits = microgrid.PoiLimits(ramp_up_mw_per_s=5.0, ramp_down_mw_per_s=5.0,
                                 ramp_window_s=1.0, band_hz=(0.1, 20.0), band_amplitude_mw=1.0)
    from microgrid.stabilise import evaluate  # noqa: PLC0415

    values = load.to_numpy(dtype="float64")
    t_eval = float("inf")
    for _ in range(3):  # best of three: a 0.1 s timing moves with the machine's load
        t0 = time.perf_counter()
        figures = evaluate(values, 0.1, limits)
        t_eval = min(t_eval, time.perf_counter() - t0)
    t0 = time.perf_counter()
    res = microgrid.stabilise(load, limits, gpus=9800 * 8)
    t_study = time.perf_counter() - t0
    table = res.options.set_index("option")
    machine = "/".join(f"{x:.1f}" for x in os.getloadavg())
    return [
        {"name": f"campus-100mw {end} at 0.1 s with dynamics, streamed: peak memory",
         "value": dyn["peak_rss_bytes"] / GB, "unit": "GiB",
         "baseline_name": "same day without dynamics",
         "baseline_value": plain["peak_rss_bytes"] / GB,
         "ratio": dyn["peak_rss_bytes"] / plain["peak_rss_bytes"], "target": "< 4 GiB",
         "passed": dyn["peak_rss_bytes"] < 4 * GB},
        {"name": f"campus-100mw {end} at 0.1 s with dynamics, streamed: wall time",
         "value": dyn["wall_s"], "unit": "s", "baseline_name": "same day without dynamics",
         "baseline_value": plain["wall_s"], "ratio": dyn["wall_s"] / plain["wall_s"],
         "target": f"(reported; load {machine})", "passed": None},
        {"name": f"stabilise on that {end} ({len(load):,} steps, {len(res.options)} options)",
         "value": t_study, "unit": "s",
         "baseline_name": "evaluate() of the unmitigated load (ramps + Welch)",
         "baseline_value": t_eval, "ratio": t_study / t_eval, "target": "<= 60 s",
         "passed": t_study <= 60.0, "cheapest": res.cheapest,
         "load_ramp_up_mw_per_s": figures["ramp_up_mw_per_s"],
         "load_band_amplitude_mw": figures["band_amplitude_mw"],
         "options": {o: {"limits_met": bool(r["limits_met"]), "kw": float(r["kw"]),
                         "kwh": float(r["kwh"]), "cost_usd_per_year": float(r["cost_usd_per_year"])}
                     for o, r in table.iterrows()}},
    ]
