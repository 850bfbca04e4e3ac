"""The recorder's own CPU use at 0.1 s on 8 simulated GPUs (``aiload record`` overhead).

The GPUs are the fake NVML of the tests (same functions as pynvml, answering at once), so this
measures aiload's side only: scheduling, stamping, buffering and the Arrow/Parquet writes. A
real NVML call adds its own cost (tens of µs each on recent drivers; not measured here).
Baseline, in the same run: a thread that only wakes at the same interval.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "aiload"))
from _measure_fakes import FakeNvml  # noqa: E402  (the tests' fake, one definition)

from aiload.measure import Recorder  # noqa: E402

INTERVAL_S = 0.1
N_GPUS = 8


def _cpu_percent(work, duration_s: float) -> float:
    """Process CPU time spent while ``work`` runs for ``duration_s`` [% of one core].

    Steady state: counted from one second after the start to just before the stop (opening
    NVML and the final Parquet conversion are one-off costs, reported apart).
    """
    stop = work()
    time.sleep(1.0)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    time.sleep(duration_s)  # the main thread sleeps: what is spent is the worker's
    percent = 100.0 * (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    stop()
    return percent


def _idle_waker():
    event = threading.Event()

    def loop():
        while not event.wait(INTERVAL_S):
            pass

    thread = threading.Thread(target=loop)
    thread.start()
    return lambda: (event.set(), thread.join())


def run(quick: bool = False) -> list[dict]:
    """Recorder CPU use [% of one core] against an idle thread waking at the same interval."""
    duration_s = 3.0 if quick else 30.0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.parquet"
        holder = {}

        def recorder():
            holder["rec"] = Recorder(out, interval_s=INTERVAL_S, flush_interval_s=10.0, cpu=False,
                                     nvml=FakeNvml(power_w=[300.0] * N_GPUS)).start()
            def stop():
                t0 = time.perf_counter()
                holder["rec"].stop()
                holder["stop_s"] = time.perf_counter() - t0

            return stop

        baseline = _cpu_percent(_idle_waker, duration_s)
        value = _cpu_percent(recorder, duration_s)
        rec = holder["rec"]
        import pyarrow.parquet as pq

        df = pq.read_table(out).to_pandas()
    spacing_ms = df["time"].diff().dt.total_seconds().iloc[1:] * 1e3
    read_ms = df["read_duration_s"] * 1e3
    return [
        {
            "name": f"record CPU use, {N_GPUS} fake GPUs at {INTERVAL_S} s (value/baseline)",
            "value": value, "unit": "% of one core",
            "baseline_name": "idle thread waking every 0.1 s", "baseline_value": baseline,
            "ratio": value / baseline if baseline > 0 else float("nan"),
            "target": "< 1 % of one core", "passed": value < 1.0,
        },
        {
            "name": "record sample spacing, p99 (value/baseline)",
            "value": float(spacing_ms.quantile(0.99)), "unit": "ms",
            "baseline_name": "nominal interval", "baseline_value": INTERVAL_S * 1e3,
            "ratio": float(spacing_ms.quantile(0.99)) / (INTERVAL_S * 1e3),
            "target": "< 1.1 x interval", "passed": float(spacing_ms.quantile(0.99)) < 1.1 * INTERVAL_S * 1e3,
        },
        {
            "name": f"record read duration per sample, median, {N_GPUS} fake GPUs (value/baseline)",
            "value": float(read_ms.median()), "unit": "ms",
            "baseline_name": "interval", "baseline_value": INTERVAL_S * 1e3,
            "ratio": float(read_ms.median()) / (INTERVAL_S * 1e3),
            "target": "informational (fake NVML)", "passed": None,
        },
        {
            "name": "record stop: flush + Parquet conversion (value/baseline)",
            "value": holder["stop_s"], "unit": "s",
            "baseline_name": "recorded duration", "baseline_value": duration_s + 1.0,
            "ratio": holder["stop_s"] / (duration_s + 1.0),
            "target": "informational", "passed": None,
        },
        {
            "name": "record ticks skipped (value/baseline)",
            "value": float(rec.missed_ticks), "unit": "ticks",
            "baseline_name": "samples taken", "baseline_value": float(rec.n_samples),
            "ratio": rec.missed_ticks / max(rec.n_samples, 1),
            "target": "0", "passed": rec.missed_ticks == 0,
        },
    ]


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
