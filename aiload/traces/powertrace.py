"""LLM-PowerTrace long CSV: ``run_id,timestamp,time_relative_s,gpu_id,power_w,...``.

One row per GPU per sample. ``power_w`` is in W. ``timestamp`` (ISO 8601; zone-less values
are taken as UTC unless ``tz=``) gives absolute time; when it is absent or empty,
``time_relative_s`` gives elapsed time. Other numeric columns become channels
``gpu<id>_<column>``. A file holding several runs needs ``run_id=`` to pick one.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from aiload.errors import TraceFormatError
from aiload.traces._long import long_to_trace
from aiload.traces._trace import Trace, TraceMeta, tz_localize

__all__ = ["read_powertrace", "REQUIRED_COLUMNS"]

#: columns every LLM-PowerTrace file must have
REQUIRED_COLUMNS = ("run_id", "gpu_id", "power_w")
_MAX_GPU_W = 3_000.0


def read_powertrace(
    path: str | os.PathLike, *, tz: str | None = None, run_id: str | None = None
) -> Trace:
    """Read an LLM-PowerTrace long CSV [W].

    Parameters
    ----------
    path : path-like
        The CSV file.
    tz : str, optional
        Zone of zone-less timestamps; default UTC (recorded in ``meta.extra``).
    run_id : str, optional
        The run to read when the file holds several.

    Returns
    -------
    Trace
        Columns ``gpu<id>`` [W] on a UTC ``time`` index, or on ``elapsed`` when the file
        only has ``time_relative_s``.
    """
    path = Path(path)
    try:
        raw = pd.read_csv(path, dtype={"run_id": str, "timestamp": str})
    except pd.errors.EmptyDataError:
        raise TraceFormatError(f"{path}: the file is empty; expected an LLM-PowerTrace CSV.") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in raw.columns]
    has_time = "timestamp" in raw.columns or "time_relative_s" in raw.columns
    if missing or not has_time:
        raise TraceFormatError(
            f"{path}: missing column(s) {missing + ([] if has_time else ['timestamp'])}; found "
            f"{list(raw.columns)}; expected 'run_id,timestamp,time_relative_s,gpu_id,power_w,...'."
        )
    if len(raw) == 0:
        raise TraceFormatError(f"{path}: the header has no rows under it.")
    lines = np.arange(len(raw)) + 2
    runs = pd.unique(raw["run_id"].astype(str))
    if run_id is None and len(runs) > 1:
        raise TraceFormatError(
            f"{path}: holds {len(runs)} runs ({', '.join(runs[:5])}...); expected one. Pick one "
            "with read_trace(path, run_id=...)."
        )
    if run_id is not None:
        keep = (raw["run_id"].astype(str) == str(run_id)).to_numpy()
        if not keep.any():
            raise TraceFormatError(f"{path}: no rows with run_id={run_id!r}; the file has {list(runs)}.")
        raw, lines = raw[keep], lines[keep]
    extra: dict = {"run_id": str(raw["run_id"].iloc[0]), "units": "W"}
    # empty stamps: none (then elapsed time), or every one; a partly empty column would
    # otherwise switch the whole file to elapsed time and drop the absolute time silently
    empty = (raw["timestamp"].fillna("").str.strip() == "").to_numpy() \
        if "timestamp" in raw.columns else None
    if empty is not None and empty.any() and not empty.all():
        row = int(np.flatnonzero(empty)[0])
        raise TraceFormatError(
            f"{path}: column 'timestamp' is empty at line {lines[row]} ({int(empty.sum())} of "
            f"{empty.size} rows) but filled elsewhere; expected a timestamp on every row, or "
            "none (then time_relative_s gives elapsed time). Fill or drop those rows."
        )
    if (empty is None or empty.all()) and "time_relative_s" not in raw.columns:
        raise TraceFormatError(
            f"{path}: column 'timestamp' is empty and there is no 'time_relative_s' column; "
            "expected absolute times in 'timestamp' or elapsed seconds in 'time_relative_s'."
        )
    if empty is not None and not empty.any():
        # a UTC offset on every stamp may change inside the file (daylight saving time):
        # parse such stamps straight to UTC; a mix of zoned and naive stamps is ambiguous
        zoned = raw["timestamp"].str.strip().str.contains(r"(?:Z|[+-]\d\d:?\d\d)$", regex=True)
        if zoned.any() and not zoned.all():
            row = int(np.flatnonzero(~zoned.to_numpy())[0] if zoned.iloc[0] else
                      np.flatnonzero(zoned.to_numpy())[0])
            raise TraceFormatError(
                f"{path}: column 'timestamp' mixes times with and without a UTC offset (line "
                f"{lines[row]}: {raw['timestamp'].iloc[row]!r}); expected one or the other."
            )
        try:
            stamps = pd.to_datetime(raw["timestamp"], format="ISO8601", utc=bool(zoned.all()))
        except ValueError as err:
            raise TraceFormatError(
                f"{path}: column 'timestamp': {err}; expected ISO 8601 times."
            ) from None
        times = pd.DatetimeIndex(tz_localize(stamps, tz, extra, path), name="time")
    else:
        seconds = pd.to_numeric(raw["time_relative_s"], errors="coerce").to_numpy()
        if np.isnan(seconds).any():
            row = int(np.flatnonzero(np.isnan(seconds))[0])
            raise TraceFormatError(
                f"{path}: column 'time_relative_s' is empty or not a number at line {lines[row]}; "
                "expected elapsed seconds."
            )
        times = pd.TimedeltaIndex(pd.to_timedelta(seconds, unit="s"), name="elapsed")
    gpu = raw["gpu_id"].astype(str).str.replace(r"^(gpu)?", "gpu", regex=True).to_numpy()
    power = pd.to_numeric(raw["power_w"], errors="coerce").to_numpy(dtype=np.float64)
    skip = {"run_id", "timestamp", "time_relative_s", "gpu_id", "power_w"}
    channels = {
        c: raw[c].to_numpy(dtype=np.float64)
        for c in raw.columns
        if c not in skip and pd.api.types.is_numeric_dtype(raw[c])
    }

    def meta(n_devices: int, interval_s: float) -> TraceMeta:
        return TraceMeta(
            source=(str(path),),
            format="powertrace",
            hardware=None,
            n_devices=n_devices,
            n_nodes=1,
            workload=None,
            sampling_interval_s=interval_s,
            reading="unknown",
            boundary="GPU boards (NVML)",
            extra=dict(extra, node=path.stem),
        )

    return long_to_trace(
        path, times, gpu, power, channels, lines, meta, unit="W", max_plausible_w=_MAX_GPU_W
    )
