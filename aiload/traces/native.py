"""aiload's own trace files (format version 1), as written by ``aiload record``.

A finished recording is ``<name>.parquet``; an interrupted one is the Arrow IPC stream
``<name>.parquet.partial.arrows`` (all complete record batches are read, a batch cut short by
a kill is ignored). Columns: ``time`` (UTC, midpoint of the read call), ``read_duration_s``,
``<dev>_power_w`` [W] per device (``gpu0``, ``cpu0``, ...) and optional per-device channels
(``<dev>_energy_j``, ``<dev>_temperature_c``, ...). The schema metadata key ``b"aiload"``
holds a JSON object (host, GPU models, per-device reading kind, interval, label, ...).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from aiload.errors import TraceFormatError
from aiload.measure.writer import FORMAT_NAME, FORMAT_VERSION, METADATA_KEY, read_partial
from aiload.traces._trace import Trace, TraceMeta, check_power, check_times

__all__ = ["read_native"]

_MAX_DEVICE_W = 3_000.0
_GPU = re.compile(r"(GB200|B200|H200|H100|A100|L40S|L4|V100|A10)", re.I)


def _reading(kinds: dict) -> str:
    gpu = [v for k, v in kinds.items() if k.startswith("gpu")]
    if any(v == "averaged" for v in gpu):
        return "averaged"
    if gpu and all(v == "instantaneous" for v in gpu):
        return "instantaneous"
    if not gpu and kinds and all(v == "counter-difference" for v in kinds.values()):
        return "averaged"  # energy-counter differences are interval means
    return "unknown"


def read_native(path: str | os.PathLike) -> Trace:
    """Read an aiload trace file (Parquet or partial Arrow stream) [W].

    Parameters
    ----------
    path : path-like
        ``<name>.parquet`` or ``<name>.parquet.partial.arrows``.

    Returns
    -------
    Trace
        Columns = device names (``gpu0``, ``cpu0``, ...) [W]; other channels (and
        ``read_duration_s``) in ``Trace.channels``; ``meta.extra["complete"]`` is False for
        an interrupted recording.
    """
    path = Path(path)
    if path.stat().st_size == 0:
        raise TraceFormatError(f"{path}: the file is empty; expected an aiload trace file.")
    if path.name.endswith(".arrows"):
        table = read_partial(path)
    else:
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as err:
            raise TraceFormatError(f"{path}: not a readable Parquet file ({err}).") from None
    raw_meta = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw_meta is None:
        raise TraceFormatError(
            f"{path}: no {METADATA_KEY!r} schema metadata; expected a file written by aiload record."
        )
    info = json.loads(raw_meta)
    if info.get("format") != FORMAT_NAME or info.get("format_version") != FORMAT_VERSION:
        raise TraceFormatError(
            f"{path}: metadata says format {info.get('format')!r} version "
            f"{info.get('format_version')!r}; expected {FORMAT_NAME!r} version {FORMAT_VERSION}."
        )
    names = table.column_names
    power_cols = [c for c in names if c.endswith("_power_w")]
    if "time" not in names or not power_cols:
        raise TraceFormatError(
            f"{path}: columns {names} lack 'time' or any '<dev>_power_w'; expected the aiload "
            "trace schema (time, read_duration_s, gpu0_power_w, ...)."
        )
    if table.num_rows == 0:
        raise TraceFormatError(
            f"{path}: the recording holds no samples (stopped before its first flush)."
        )
    df = table.to_pandas()
    index = pd.DatetimeIndex(df["time"], name="time")
    if index.tz is None:
        raise TraceFormatError(f"{path}: column 'time' has no time zone; expected timestamp[ns, UTC].")
    index = index.tz_convert("UTC")
    check_times(index, path)
    power = pd.DataFrame(
        {c[: -len("_power_w")]: df[c].to_numpy(np.float64) for c in power_cols}, index=index
    )
    check_power(power, path, unit="W", max_plausible_w=_MAX_DEVICE_W)
    channels = df.drop(columns=["time", *power_cols]).set_index(index)
    kinds = info.get("power_reading") or {}
    models = info.get("gpu_models") or []
    # the recorder's "hardware" is a description ("4x NVIDIA H100 80GB HBM3; 2x AMD ..."):
    # aiload's short node type comes from the GPU models
    match = _GPU.search(models[0]) if models else None
    hardware = f"{len(models)}x{match.group(1).upper()}" if match else info.get("hardware")
    host = info.get("host") or path.name.split(".")[0]
    keys = ("host", "driver_version", "nvml_version", "command", "start", "end", "interval_s")
    extra = {k: info.get(k) for k in (*keys, "aiload_version")}
    extra.update(
        node=host,
        power_reading=kinds,
        complete=info.get("end") is not None,
        hardware_description=info.get("hardware"),
        gpu_models=models,
    )
    meta = TraceMeta(
        source=(str(path),),
        format="aiload",
        hardware=hardware,
        n_devices=power.shape[1],
        n_nodes=1,
        workload=info.get("label"),
        sampling_interval_s=float(np.median(np.diff(index.as_unit("ns").asi8))) / 1e9,
        reading=_reading(kinds),
        boundary=" + ".join(
            b for b, p in (("GPU boards (NVML)", "gpu"), ("CPU packages (RAPL)", "cpu"))
            if any(c.startswith(p) for c in power.columns)
        ) or "devices",
        extra=extra,
    )
    return Trace(power_w=power, meta=meta, channels=channels)
