"""Hardware check of ``aiload record`` on a real NVIDIA GPU (skipped without one).

Run it on a GPU node with a command that loads the GPU for at least 30 s, e.g.::

    AILOAD_GPU_LOAD_CMD="gpu_burn 40" python -m pytest -m gpu tests/aiload/test_measure_gpu.py

The recorder stops the command after 30 s if it is still running.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time

import numpy as np
import pyarrow.parquet as pq
import pytest

from aiload.measure import Recorder

pytestmark = pytest.mark.gpu

LOAD_S = 30.0


def _require_gpu_and_load() -> list[str]:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:  # no driver, no library: the usual case on CI
        pytest.skip(f"no NVIDIA GPU here: NVML could not start ({type(exc).__name__}: {exc})")
    try:
        count = pynvml.nvmlDeviceGetCount()
    finally:
        pynvml.nvmlShutdown()
    if count == 0:
        pytest.skip("NVML started but found no GPU")
    command = os.environ.get("AILOAD_GPU_LOAD_CMD")
    if not command:
        pytest.skip(
            "set AILOAD_GPU_LOAD_CMD to a command that loads the GPU for >= 30 s (e.g. 'gpu_burn 40')"
        )
    return shlex.split(command)


def test_power_integral_matches_energy_counter_on_a_real_gpu(tmp_path):
    command = _require_gpu_and_load()
    out = tmp_path / "gpu.parquet"
    with Recorder(out, interval_s=0.1, flush_interval_s=5.0, cpu=False, command=command) as rec:
        load = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            load.wait(timeout=LOAD_S)
        except subprocess.TimeoutExpired:
            load.terminate()
            load.wait(timeout=30)
        time.sleep(1.0)  # let an averaged reading settle before the last sample
    df = pq.read_table(out).to_pandas()
    assert len(df) >= 0.8 * LOAD_S / 0.1, (
        f"the load ran < 30 s or ticks were lost: only {len(df)} samples "
        f"({rec.missed_ticks} ticks skipped)"
    )
    t_s = (df["time"] - df["time"].iloc[0]).dt.total_seconds().to_numpy()
    checked = 0
    for dev in rec.power_reading:
        if f"{dev}_energy_j" not in df:
            continue
        power_w = df[f"{dev}_power_w"].to_numpy()
        integrated_j = float(np.trapezoid(power_w, t_s))
        counter_j = float(df[f"{dev}_energy_j"].iloc[-1] - df[f"{dev}_energy_j"].iloc[0])
        assert integrated_j == pytest.approx(counter_j, rel=0.05), (
            f"{dev} ({rec.power_reading[dev]} power): integral {integrated_j:.0f} J "
            f"vs counter {counter_j:.0f} J"
        )
        checked += 1
    if checked == 0:
        pytest.skip("no GPU here has NVML's total-energy counter (needs Volta or newer)")

    import aiload

    trace = aiload.read_trace(out)
    assert len(trace.power_w) == len(df)
    assert "gpu0" in trace.power_w.columns
