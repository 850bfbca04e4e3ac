"""Request-rate shapes for inference services, from the real production traces.

The bundled shape is the ServeGen m-large request rate (Alibaba Bailian, 14 days, 10-min
windows, summed over the 50 largest clients, mean 1); sub-10-min burstiness comes from
per-minute arrival counts of the Azure LLM inference 2023 and Mooncake traces. Both files in
``aiload/facility/data`` are built by ``docs/scripts/make_facility_demand_shape.py`` and carry
their attribution in the header.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.timeseries import require_tz_aware, step_seconds

__all__ = ["servegen_shape", "burst_blocks", "demand_shape"]

DATA = Path(__file__).with_name("data")
SHAPE_STEP_S = 600.0


@lru_cache(maxsize=1)
def servegen_shape() -> np.ndarray:
    """ServeGen m-large relative rate per 10-min window over 14 days (mean 1) [-]."""
    table = pd.read_csv(DATA / "servegen_mlarge_rate_shape.csv", comment="#")
    values = table["rate_ratio"].to_numpy(dtype=np.float64)
    return values / values.mean()  # undo the 6-digit rounding of the file: mean exactly 1


@lru_cache(maxsize=1)
def burst_blocks() -> np.ndarray:
    """Per-minute / 10-min-mean ratios, shape (blocks, 10), each row mean 1 [-]."""
    table = pd.read_csv(DATA / "burst_ratio_1min.csv", comment="#")
    blocks = table["ratio"].to_numpy(dtype=np.float64).reshape(-1, 10)
    return blocks / blocks.mean(axis=1, keepdims=True)


def demand_shape(
    shape, start: pd.Timestamp, step_s: float, n_steps: int, *, bursts: bool,
    rng: np.random.Generator,
) -> np.ndarray:
    """Relative demand per interval of ``step_s`` from ``start`` (mean 1 over the shape) [-].

    Parameters
    ----------
    shape : "servegen-m-large" or pandas.Series
        Bundled shape (t = 0 at local midnight of ``start``'s day, repeated every 14 days) or
        a tz-aware series of relative rates covering the run (interval means, any scale).
    step_s : float
        Output interval [s]; divides 600 s or is a multiple of it.
    bursts : bool
        Multiply each 10-min window by a randomly drawn block of ten measured per-minute ratios
        (keeps the 10-min mean); only for ``step_s`` <= 60 s.
    """
    t = np.arange(n_steps, dtype=np.float64) * step_s
    if isinstance(shape, str):
        base = servegen_shape()
        local = start.tz_convert(start.tz)
        offset = (local - local.normalize()).total_seconds()
        if step_s <= SHAPE_STEP_S:
            window = ((t + offset) // SHAPE_STEP_S).astype(np.int64) % len(base)
            rel = base[window]
        else:
            per = int(round(step_s / SHAPE_STEP_S))
            idx = ((t[:, None] + offset) // SHAPE_STEP_S).astype(np.int64) + np.arange(per)
            rel = base[idx % len(base)].mean(axis=1)
    else:
        series = shape
        require_tz_aware(series.index, "InferenceSpec.shape")
        src_step = step_seconds(series.index, "InferenceSpec.shape")
        edges = start + pd.to_timedelta(np.append(t, t[-1] + step_s), unit="s")
        if series.index[0] > edges[0] or series.index[-1] + pd.Timedelta(seconds=src_step) < edges[-1]:
            raise InputError(
                f"InferenceSpec.shape: the series covers {series.index[0]} .. {series.index[-1]} "
                f"but the run needs {edges[0]} .. {edges[-1]}; extend or repeat it."
            )
        values = series.to_numpy(dtype=np.float64)
        if np.any(values < 0) or values.mean() <= 0:
            raise InputError("InferenceSpec.shape: relative rates must be >= 0 with a positive mean.")
        knots = (series.index - edges[0]).total_seconds().to_numpy()
        cum = np.concatenate(([0.0], np.cumsum(values * src_step)))
        knots = np.append(knots, knots[-1] + src_step)
        at = np.interp(np.append(t, t[-1] + step_s), knots, cum)
        rel = np.diff(at) / step_s / values.mean()
    if bursts:
        if step_s > 60.0:
            raise InputError(
                f"InferenceSpec.bursts: per-minute burstiness needs freq <= 1min, got {step_s} s."
            )
        blocks = burst_blocks()
        minute = (t // 60.0).astype(np.int64)
        window = minute // 10
        pick = rng.integers(0, len(blocks), size=int(window.max()) + 1)
        rel = rel * blocks[pick[window], minute % 10]
    return rel
