"""Sweep speed-up on Dask: a 20-replicate sweep of colocation-10mw vs the same sweep serial.

Both runs use :func:`scenarios.sweep.run_sweep` on the bundled ``colocation-10mw`` scenario
(one month at 1 minute, utilisation 0.6), into fresh folders: serially in this process
(``workers=0``), then on a local Dask cluster of 2 worker processes (its start-up counted).
Target: speed-up >= 1.6x; the two sweeps must give identical bands. Each Dask worker process
imports aiload and warms the facility model once (several seconds on a busy machine), so the
speed-up needs tasks long enough to repay that and two free cores: the machine's load average
is reported beside it.

Run: ``python -m benchmarks --only scenarios`` (``--quick``: 4 replicates of one week).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from scenarios.sweep import run_sweep

__all__ = ["run"]


def _sweep(folder: Path, end: str, replicates: int, workers: int):
    start = time.perf_counter()
    result = run_sweep("colocation-10mw", folder, sets={"facility.utilization": [0.6]},
                       overrides={"facility.end": end}, replicates=replicates, workers=workers,
                       progress=False)
    return time.perf_counter() - start, result


def run(quick: bool = False) -> list[dict]:
    """Serial vs 2-worker Dask sweep; rows as ``python -m benchmarks`` expects."""
    end = "2025-01-08T00:00:00Z" if quick else "2025-02-01T00:00:00Z"
    replicates = 4 if quick else 20
    horizon = "one week" if quick else "one month"
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="aiload-bench-sweep-") as tmp:
        serial_s, serial = _sweep(Path(tmp) / "serial", end, replicates, workers=0)
        dask_s, dask = _sweep(Path(tmp) / "dask", end, replicates, workers=2)
    load_after = os.getloadavg()[0]
    speedup = serial_s / dask_s
    diff_kw = float(np.max(np.abs(serial.bands.to_numpy() - dask.bands.to_numpy())))
    label = f"sweep colocation-10mw {replicates} replicates, {horizon} at 1 min"
    return [
        {
            "name": f"{label}: 2 Dask workers, speed-up (serial/dask)",
            "value": dask_s,
            "unit": "s",
            "baseline_name": "same sweep serial (workers=0)",
            "baseline_value": serial_s,
            "ratio": speedup,
            "target": ">= 1.6x",
            "passed": speedup >= 1.6,
        },
        {
            "name": f"{label}: max |bands dask - bands serial|",
            "value": diff_kw,
            "unit": "kW",
            "baseline_name": "same sweep serial (workers=0)",
            "baseline_value": 0.0,
            "ratio": None,
            "target": "== 0 (same seeds, same result)",
            "passed": diff_kw == 0.0,
        },
        {
            # two workers can only be twice as fast when two cores are free
            "name": f"{label}: 1-min load average before/after (cores: {os.cpu_count()})",
            "value": load_after,
            "unit": "runnable processes",
            "baseline_name": "load average before the runs",
            "baseline_value": load_before,
            "ratio": None,
            "target": "< cores for a meaningful speed-up",
            "passed": None,
        },
    ]


if __name__ == "__main__":  # Dask's worker processes re-import the main module
    for row in run(quick=True):
        print(row)
