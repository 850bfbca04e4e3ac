"""WattAMeter logs (NLR's NVML/RAPL logger; BSD-3-Clause, github.com/NatLabRockies/WattAMeter).

Plain text, whitespace-separated. Comment lines start with ``#``; the last one before the
data is the header ``# timestamp reading-time[ns] <channel>[<unit>] ...``. Timestamps
(``%Y-%m-%d_%H:%M:%S.%f``, the midpoint of the read call) carry no zone.

- NVML file: ``gpu-<i>[mW]`` board power (converted to W, columns ``gpu<i>``) and
  ``gpu-<i>[C]`` temperature (channel ``gpu<i>_temperature_c``).
- RAPL file: cumulative energy counters ``cpu-<i>[uJ]`` (package) and ``cpu-<i>-core[uJ]``,
  plus WattAMeter's own ``[W]`` columns. Power is derived here from the counters,
  ``P_k = (E_{k+1} - E_k) / (t_{k+1} - t_k)``, a mean over that interval, placed at its
  midpoint (WattAMeter's own ``[W]`` column writes the same value on row ``k``), with
  wrap-around: a negative difference means the counter passed ``max_energy_range_uj`` and
  the range is added back. The range is not in the log: the default is Intel's common
  ``262143328850`` uJ; pass ``rapl_max_energy_range_uj`` (from
  ``/sys/class/powercap/intel-rapl:<i>/max_energy_range_uj``) for other CPUs. Package power
  becomes column ``cpu<i>``; the core sub-domain (inside the package) goes to the channel
  ``cpu<i>_core_power_w`` so that it is not counted twice; WattAMeter's own ``[W]`` values go
  to channels ``cpu<i>_logged_power_w``. ``n`` counter readings give ``n - 1`` samples.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from aiload._checks import check_number
from aiload.errors import TraceFormatError
from aiload.traces._trace import Trace, TraceMeta, check_power, check_times, tz_localize

__all__ = ["read_wattameter_file", "rapl_power_w", "RAPL_MAX_ENERGY_RANGE_UJ", "MAX_DEVICE_W"]

#: default wrap range of a RAPL energy counter [uJ] (Intel's usual max_energy_range_uj)
RAPL_MAX_ENERGY_RANGE_UJ = 262_143_328_850
#: largest believable reading of one GPU or CPU socket [W]
MAX_DEVICE_W = 3_000.0
_COL = re.compile(r"^(gpu|cpu)-(\d+)(-core)?\[(mW|W|uJ|C)\]$")


def rapl_power_w(
    energy_uj: np.ndarray, t_s: np.ndarray, max_energy_range_uj: float = RAPL_MAX_ENERGY_RANGE_UJ
) -> np.ndarray:
    """Power from a cumulative RAPL energy counter, unwrapping counter overflow [W].

    Parameters
    ----------
    energy_uj : numpy.ndarray
        Counter readings [uJ], shape (n,).
    t_s : numpy.ndarray
        Reading times [s], strictly increasing, shape (n,).
    max_energy_range_uj : float
        Counter range [uJ]: after it the counter restarts from 0.

    Returns
    -------
    numpy.ndarray
        Mean power over each interval between readings [W], shape (n - 1,).
    """
    diff = np.diff(np.asarray(energy_uj, dtype=np.float64))
    diff = np.where(diff < 0, diff + max_energy_range_uj, diff)
    return diff / np.diff(t_s) / 1e6


def _header(path: Path) -> tuple[list[str], int, str | None]:
    """Column names, number of comment lines and the run id."""
    comments: list[str] = []
    with path.open(encoding="utf-8-sig") as fh:
        for line in fh:
            if not line.startswith("#"):
                break
            comments.append(line)
    if not comments:
        if path.stat().st_size == 0:
            raise TraceFormatError(f"{path}: the file is empty; expected a WattAMeter log.")
        raise TraceFormatError(
            f"{path}: line 1 is not a '#' comment; expected WattAMeter's header "
            "'# timestamp reading-time[ns] <channel>[<unit>] ...'."
        )
    cols = comments[-1].lstrip("#").split()
    if cols[:2] != ["timestamp", "reading-time[ns]"]:
        raise TraceFormatError(
            f"{path}: line {len(comments)} header starts {cols[:2]}; expected "
            "'timestamp reading-time[ns]' followed by channels like 'gpu-0[mW]'."
        )
    run = re.search(r"Power data for run (\S+)", comments[0])
    return cols, len(comments), run.group(1) if run else None


def read_wattameter_file(
    path: str | os.PathLike,
    *,
    tz: str | None = None,
    rapl_max_energy_range_uj: float = RAPL_MAX_ENERGY_RANGE_UJ,
) -> Trace:
    """Read one WattAMeter log (NVML or RAPL) [W].

    Parameters
    ----------
    path : path-like
        ``nvml_wattameter*.log`` or ``rapl_wattameter*.log``.
    tz : str, optional
        Zone of the logging node's clock; default UTC (recorded in ``meta.extra``).
    rapl_max_energy_range_uj : float
        RAPL counter range [uJ] for unwrapping (see the module notes).

    Returns
    -------
    Trace
        Columns ``gpu<i>`` or ``cpu<i>`` [W]; other channels in ``Trace.channels``.
    """
    check_number(rapl_max_energy_range_uj, "rapl_max_energy_range_uj", gt=0.0, unit="uJ",
                 hint="Read it from /sys/class/powercap/intel-rapl:<i>/max_energy_range_uj.")
    path = Path(path)
    cols, n_comments, run = _header(path)
    try:
        raw = pd.read_csv(path, sep=r"\s+", comment="#", header=None, dtype=str,
                          keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise TraceFormatError(f"{path}: the header has no data lines under it.") from None
    if raw.shape[1] != len(cols):
        raise TraceFormatError(
            f"{path}: data lines have {raw.shape[1]} fields but the header names {len(cols)} "
            f"({' '.join(cols)}); expected one value per header column."
        )
    raw.columns = cols
    lines = np.arange(len(raw)) + n_comments + 1
    # whitespace-separated fields are never empty: a missing one is a line cut short (a log
    # copied while being written), whose last number may itself be cut ('75' of '75012')
    short = np.flatnonzero((raw == "").any(axis=1).to_numpy())
    if short.size:
        row = int(short[0])
        raise TraceFormatError(
            f"{path}: line {lines[row]} has {int((raw.iloc[row] != '').sum())} fields but the "
            f"header names {len(cols)}; the line was cut short (a truncated log?), so its last "
            "reading cannot be trusted. Drop that line."
        )
    extra: dict = {"run_id": run, "units": sorted({c[c.index("[") + 1 : -1] for c in cols[1:]})}
    try:
        stamps = pd.to_datetime(raw["timestamp"], format="%Y-%m-%d_%H:%M:%S.%f")
    except ValueError as err:
        raise TraceFormatError(
            f"{path}: column 'timestamp': {err}; expected '%Y-%m-%d_%H:%M:%S.%f' like "
            "'2025-10-07_09:38:40.623626'."
        ) from None
    index = pd.DatetimeIndex(tz_localize(stamps, tz, extra, path), name="time")
    check_times(index, path, lines)
    values = raw[cols[2:]].apply(pd.to_numeric, errors="coerce")
    unknown = [c for c in cols[2:] if not _COL.match(c)]
    if unknown:
        raise TraceFormatError(
            f"{path}: column(s) {unknown} are not WattAMeter channels; expected names like "
            "'gpu-0[mW]', 'gpu-0[C]', 'cpu-0[uJ]', 'cpu-0-core[uJ]', 'cpu-0[W]'."
        )
    power: dict[str, np.ndarray] = {}
    channels: dict[str, np.ndarray] = {}
    t_s = (index.as_unit("ns").asi8 - index.as_unit("ns").asi8[0]) / 1e9
    is_rapl = any(c.endswith("[uJ]") for c in cols)
    for col in cols[2:]:
        kind, i, core, unit = _COL.match(col).groups()
        dev = f"{kind}{i}"
        x = values[col].to_numpy(dtype=np.float64)
        if unit == "mW":
            power[dev] = x / 1000.0
        elif unit == "C":
            channels[f"{dev}_temperature_c"] = x
        elif unit == "uJ":
            if np.isnan(x).any():
                row = int(np.flatnonzero(np.isnan(x))[0])
                raise TraceFormatError(
                    f"{path}: column {col!r} has a missing counter at line {lines[row]}; expected "
                    "an energy reading [uJ] on every line."
                )
            p = rapl_power_w(x, t_s, rapl_max_energy_range_uj)
            wild = np.flatnonzero(p > MAX_DEVICE_W)
            if wild.size:
                k = int(wild[0])
                raise TraceFormatError(
                    f"{path}: column {col!r} jumps from {x[k]:.0f} to {x[k + 1]:.0f} uJ between "
                    f"lines {lines[k]} and {lines[k + 1]}, i.e. {p[k]:.0f} W after unwrapping with "
                    f"max_energy_range_uj={rapl_max_energy_range_uj:.0f}; expected < "
                    f"{MAX_DEVICE_W:.0f} W. Pass rapl_max_energy_range_uj= the value in "
                    "/sys/class/powercap/intel-rapl:<i>/max_energy_range_uj of that node."
                )
            if core:
                channels[f"{dev}_core_power_w"] = p
            else:
                power[dev] = p
        elif unit == "W":
            channels[f"{dev}{'_core' if core else ''}_logged_power_w"] = x[:-1]
    if not power:
        raise TraceFormatError(
            f"{path}: no power channel found in {cols[2:]}; expected 'gpu-<i>[mW]' (NVML) or "
            "'cpu-<i>[uJ]' (RAPL) columns."
        )
    if is_rapl:  # counter differences describe the intervals between readings
        t_ns = index.as_unit("ns").asi8
        index = pd.DatetimeIndex(
            pd.to_datetime(t_ns[:-1] + np.diff(t_ns) // 2, utc=True), name="time"
        )
        lines = lines[1:]
        if index.size < 2:
            raise TraceFormatError(
                f"{path}: {index.size + 1} RAPL counter reading(s) give {index.size} power "
                "sample(s); expected at least three readings (two samples) to form a trace."
            )
    frame = pd.DataFrame(power, index=index)
    ch = pd.DataFrame(channels, index=index)
    unit = "uJ counters" if is_rapl else "mW"
    check_power(frame, path, unit=unit, max_plausible_w=MAX_DEVICE_W, lines=lines)
    if not is_rapl:
        low = [c for c in frame.columns if np.median(frame[c]) < 1.0]
        if low:
            raise TraceFormatError(
                f"{path}: column(s) {low} read a median below 1 W after converting from mW; a GPU "
                "board draws tens of watts even idle. Were watts written under an [mW] header?"
            )
    node = re.sub(r"^(nvml|rapl)_?wattameter_?", "", path.stem) or "node"
    extra["node"] = node
    if is_rapl:
        extra["rapl_max_energy_range_uj"] = rapl_max_energy_range_uj
    meta = TraceMeta(
        source=(str(path),),
        format="wattameter",
        hardware=None,
        n_devices=frame.shape[1],
        n_nodes=1,
        workload=None,
        sampling_interval_s=float(np.median(np.diff(index.as_unit("ns").asi8))) / 1e9,
        # NVML power before WattAMeter's 2026 switch is nvmlDeviceGetPowerUsage (~1 s mean);
        # RAPL power is a counter difference, a mean over the interval.
        reading="averaged",
        boundary="CPU packages (RAPL)" if is_rapl else "GPU boards (NVML)",
        extra=extra,
    )
    return Trace(power_w=frame, meta=meta, channels=ch)
