"""Long tables (one row per device per poll) to a wide :class:`Trace`; shared by CSV readers."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import pandas as pd

from aiload.traces._trace import Trace, TraceMeta, check_power, check_times
from aiload.traces.combine import combine

__all__ = ["long_to_trace"]


def long_to_trace(
    path: str | os.PathLike,
    times: pd.Index,
    device: np.ndarray,
    power_w: np.ndarray,
    channels: dict[str, np.ndarray],
    lines: np.ndarray,
    meta: Callable[[int, float], TraceMeta],
    *,
    unit: str,
    max_plausible_w: float,
) -> Trace:
    """Pivot device rows into columns, checking each device's times and power.

    Parameters
    ----------
    path : path-like
        The file, for messages.
    times : pandas.DatetimeIndex or pandas.TimedeltaIndex
        Time of each row.
    device : numpy.ndarray
        Device name of each row (the output column names).
    power_w : numpy.ndarray
        Power of each row [W].
    channels : dict of str to numpy.ndarray
        Other per-row values; columns become ``<device>_<name>``.
    lines : numpy.ndarray
        1-based file line of each row.
    meta : callable
        ``meta(n_devices, sampling_interval_s) -> TraceMeta``.
    unit, max_plausible_w
        See :func:`aiload.traces._trace.check_power`.

    Returns
    -------
    Trace
        Samples as read when all devices share the poll times; otherwise every device
        integrated onto a common grid (:func:`aiload.traces.combine.combine`).
    """
    parts = []
    for dev in map(str, pd.unique(device)):
        rows = np.flatnonzero(device == dev)
        idx = times[rows].rename(times.name)
        check_times(idx, path, lines[rows])
        frame = pd.DataFrame({dev: power_w[rows]}, index=idx)
        check_power(frame, path, unit=unit, max_plausible_w=max_plausible_w, lines=lines[rows])
        ch = pd.DataFrame({f"{dev}_{k}": v[rows] for k, v in channels.items()}, index=idx)
        parts.append((frame, ch))
    if all(f.index.equals(parts[0][0].index) for f, _ in parts):
        frame = pd.concat([f for f, _ in parts], axis=1)
        ch = pd.concat([c for _, c in parts], axis=1)
        interval = float(np.median(np.diff(frame.index.as_unit("ns").asi8))) / 1e9
        return Trace(power_w=frame, meta=meta(frame.shape[1], interval), channels=ch)
    traces = [
        Trace(power_w=f, meta=meta(1, float(np.median(np.diff(f.index.as_unit("ns").asi8))) / 1e9), channels=c)
        for f, c in parts
    ]
    return combine([(None, t) for t in traces], n_nodes=1)
