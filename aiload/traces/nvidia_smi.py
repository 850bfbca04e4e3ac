"""nvidia-smi query logs: ``nvidia-smi --query-gpu=timestamp,index,power.draw,... --format=csv``.

Long format, one row per GPU per poll, header like ``timestamp, index, power.draw [W]``,
values like ``2024/05/01 12:00:00.123, 0, 312.45 W`` (with ``nounits`` the ``W`` is left
out). The power field may be ``power.draw`` (on recent drivers a 1-s average, reading
``"unknown"`` since it depends on the driver), ``power.draw.average`` (``"averaged"``) or
``power.draw.instant`` (``"instantaneous"``). Timestamps carry no zone. Extra fields become
channels: ``temperature.gpu`` -> ``gpu<i>_temperature_c``, ``utilization.gpu`` ->
``gpu<i>_util_pct``, ``utilization.memory`` -> ``gpu<i>_mem_util_pct``, ``clocks.sm`` ->
``gpu<i>_sm_clock_mhz``; ``name`` sets ``meta.hardware`` (``"4xH100"``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from aiload.errors import TraceFormatError
from aiload.traces._long import long_to_trace
from aiload.traces._trace import Trace, TraceMeta, tz_localize

__all__ = ["read_nvidia_smi", "POWER_FIELDS"]

#: power fields nvidia-smi can log, and what kind of reading each is
POWER_FIELDS = {
    "power.draw.instant": "instantaneous",
    "power.draw.average": "averaged",
    "power.draw": "unknown",
}
_CHANNELS = {
    "temperature.gpu": "temperature_c",
    "utilization.gpu": "util_pct",
    "utilization.memory": "mem_util_pct",
    "clocks.sm": "sm_clock_mhz",
    "clocks.current.sm": "sm_clock_mhz",
}
_MAX_GPU_W = 3_000.0
_GPU = re.compile(r"(GB200|B200|H200|H100|A100|L40S|L4|V100|A10)", re.I)


def _number(col: pd.Series) -> pd.Series:
    """'312.45 W' / '87 %' / '312.45' -> float; '[N/A]' -> NaN."""
    return pd.to_numeric(col.str.replace(r"\s*(W|%|MHz|MiB|C)$", "", regex=True), errors="coerce")


def read_nvidia_smi(path: str | os.PathLike, *, tz: str | None = None) -> Trace:
    """Read an nvidia-smi CSV query log [W].

    Parameters
    ----------
    path : path-like
        The CSV written by ``nvidia-smi --query-gpu=timestamp,index,power.draw,...
        --format=csv[,nounits] -lms <ms>``.
    tz : str, optional
        Zone of the host clock; default UTC (recorded in ``meta.extra["tz_assumed"]``).

    Returns
    -------
    Trace
        Columns ``gpu<index>`` [W]. When all GPUs share each poll's timestamp the values are
        the samples as read; otherwise each GPU is integrated onto a common grid (see
        :mod:`aiload.traces.combine`).
    """
    path = Path(path)
    try:
        raw = pd.read_csv(path, dtype=str, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise TraceFormatError(f"{path}: the file is empty; expected an nvidia-smi CSV log.") from None
    raw.columns = [c.strip() for c in raw.columns]
    fields = {re.sub(r"\s*\[.*\]$", "", c): c for c in raw.columns}
    power_field = next((f for f in POWER_FIELDS if f in fields), None)
    missing = [f for f in ("timestamp", "index") if f not in fields]
    if missing or power_field is None:
        raise TraceFormatError(
            f"{path}: header {list(raw.columns)} lacks "
            f"{missing + ([] if power_field else ['power.draw'])}; expected "
            "'timestamp, index, power.draw [W], ...' from "
            "nvidia-smi --query-gpu=timestamp,index,power.draw --format=csv."
        )
    if len(raw) == 0:
        raise TraceFormatError(f"{path}: the header has no rows under it.")
    header = fields[power_field]
    unit = re.search(r"\[(.*)\]", header)
    unit = unit.group(1) if unit else "W"
    if unit != "W":
        raise TraceFormatError(
            f"{path}: column {header!r} declares unit {unit!r}; expected W as nvidia-smi writes it."
        )
    lines = np.arange(len(raw)) + 2
    raw = raw.apply(lambda c: c.str.strip())
    extra: dict = {"power_field": power_field, "units": "W"}
    try:
        stamps = pd.to_datetime(raw[fields["timestamp"]], format="%Y/%m/%d %H:%M:%S.%f")
    except ValueError as err:
        raise TraceFormatError(
            f"{path}: column 'timestamp': {err}; expected 'YYYY/MM/DD HH:MM:SS.fff'."
        ) from None
    times = tz_localize(stamps, tz, extra, path)
    gpu_index = pd.to_numeric(raw[fields["index"]], errors="coerce")
    if gpu_index.isna().any():
        row = int(np.flatnonzero(gpu_index.isna())[0])
        raise TraceFormatError(
            f"{path}: column 'index' reads {raw[fields['index']].iloc[row]!r} at line {lines[row]}; "
            "expected the GPU's integer index."
        )
    power = _number(raw[header]).to_numpy()
    device = np.array([f"gpu{int(i)}" for i in gpu_index])
    channels = {name: _number(raw[fields[f]]).to_numpy() for f, name in _CHANNELS.items() if f in fields}
    n_gpus = len(np.unique(device))
    hardware = None
    if "name" in fields:
        match = _GPU.search(str(raw[fields["name"]].iloc[0]))
        hardware = f"{n_gpus}x{match.group(1).upper()}" if match else None

    def meta(n_devices: int, interval_s: float) -> TraceMeta:
        return TraceMeta(
            source=(str(path),),
            format="nvidia-smi",
            hardware=hardware,
            n_devices=n_devices,
            n_nodes=1,
            workload=None,
            sampling_interval_s=interval_s,
            reading=POWER_FIELDS[power_field],
            boundary="GPU boards (NVML via nvidia-smi)",
            extra=dict(extra, node=path.stem),
        )

    return long_to_trace(
        path, times.rename("time"), device, power, channels, lines, meta,
        unit=unit, max_plausible_w=_MAX_GPU_W,
    )
