"""The :class:`Trace` and :class:`TraceMeta` types and the checks every reader applies."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from aiload._checks import warn_spikes
from aiload.errors import InputError, TraceFormatError

__all__ = [
    "Trace", "TraceMeta", "READINGS", "check_power", "check_times", "check_tz", "tz_localize",
]

#: what a power reading means
READINGS = ("instantaneous", "averaged", "unknown")


@dataclass(frozen=True)
class TraceMeta:
    """Where a trace comes from and what it measures.

    Attributes
    ----------
    source : tuple of str
        The file path(s) read.
    format : str
        One of :data:`aiload.traces.FORMATS`.
    hardware : str or None
        Node type when known, e.g. ``"4xH100"``, ``"8xH100-SXM"``.
    n_devices : int
        Power columns that are devices (GPUs, CPU sockets); equals ``n_nodes`` for
        node-level meters.
    n_nodes : int
        Nodes covered by the trace.
    workload : str or None
        The benchmark or job when known, e.g. ``"llama2_70b_lora"``.
    sampling_interval_s : float
        Median spacing of the raw samples [s].
    reading : str
        ``"instantaneous"``, ``"averaged"`` or ``"unknown"`` (see :data:`READINGS`).
    boundary : str
        What is measured, e.g. ``"GPU board (NVML)"``, ``"AC wall of node"``.
    extra : dict
        Anything else: run id, ``tz_assumed``, units seen, the alignment applied.
    """

    source: tuple[str, ...]
    format: str
    hardware: str | None
    n_devices: int
    n_nodes: int
    workload: str | None
    sampling_interval_s: float
    reading: str
    boundary: str
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.reading not in READINGS:
            raise InputError(f"TraceMeta: reading={self.reading!r} is not one of {READINGS}.")
        if self.n_nodes < 1 or self.n_devices < 1:
            raise InputError(
                f"TraceMeta: n_nodes and n_devices must be >= 1, got {self.n_nodes} and "
                f"{self.n_devices}."
            )
        if not self.sampling_interval_s > 0:
            raise InputError(
                f"TraceMeta: sampling_interval_s must be > 0 [s], got {self.sampling_interval_s}."
            )


@dataclass(frozen=True)
class Trace:
    """Measured power of one run.

    Attributes
    ----------
    power_w : pandas.DataFrame
        Power [W], one column per device or node. Index: tz-aware ``DatetimeIndex`` named
        ``time`` (UTC) when the file has absolute time, else a ``TimedeltaIndex`` named
        ``elapsed``. Values are point samples as read; a run combined from several files
        holds interval means on a common grid instead (``meta.extra["values"]``).
    meta : TraceMeta
        Provenance.
    channels : pandas.DataFrame or None
        Other channels on the same index, units in the names (``gpu0_temperature_c``).
    """

    power_w: pd.DataFrame
    meta: TraceMeta
    channels: pd.DataFrame | None = None

    def __post_init__(self) -> None:
        idx = self.power_w.index
        if isinstance(idx, pd.DatetimeIndex):
            if idx.tz is None or idx.name != "time":
                raise InputError(
                    "Trace.power_w: a DatetimeIndex must be tz-aware and named 'time', got "
                    f"tz={idx.tz}, name={idx.name!r}."
                )
        elif not (isinstance(idx, pd.TimedeltaIndex) and idx.name == "elapsed"):
            raise InputError(
                "Trace.power_w: expected a tz-aware DatetimeIndex named 'time' or a "
                f"TimedeltaIndex named 'elapsed', got {type(idx).__name__} named {idx.name!r}."
            )
        if len(idx) < 2 or not idx.is_monotonic_increasing or not idx.is_unique:
            raise InputError(
                "Trace.power_w: needs at least two samples at strictly increasing times, got "
                f"{len(idx)} sample(s)."
            )

    @property
    def is_interval_means(self) -> bool:
        """True when ``power_w`` holds interval means on a fixed grid (a combined run)."""
        return self.meta.extra.get("values") == "interval means"

    def total_w(self) -> pd.Series:
        """Sum of all power columns [W]."""
        return self.power_w.sum(axis=1).rename("total_w")

    def energy_wh(self) -> float:
        """Energy of the whole trace [Wh].

        The trapezoid integral of :meth:`total_w` over real time for point samples; the sum
        of interval means times the step for a combined (gridded) trace.
        """
        total = self.total_w().to_numpy(dtype=np.float64)
        if self.is_interval_means:
            step_s = pd.Timedelta(self.power_w.index.freq).total_seconds()
            return float(total.sum() * step_s / 3600.0)
        t_s = (self.power_w.index.as_unit("ns").asi8 - self.power_w.index.as_unit("ns").asi8[0]) / 1e9
        return float(np.trapezoid(total, t_s) / 3600.0)

    def per_node_w(self) -> pd.DataFrame:
        """Power per node [W].

        Columns named ``"<node>/<dev>"`` are summed by ``<node>``; a single-node trace of
        device columns is summed into one column named after the node (``meta.extra["node"]``,
        else ``"node"``); node-level columns are returned as they are.
        """
        cols = [str(c) for c in self.power_w.columns]
        if any("/" in c for c in cols):
            nodes = [c.split("/", 1)[0] for c in cols]
            return self.power_w.T.groupby(nodes, sort=False).sum().T
        if self.meta.n_nodes == 1 and self.power_w.shape[1] > 1:
            name = self.meta.extra.get("node", "node")
            return self.power_w.sum(axis=1).to_frame(name)
        return self.power_w.copy()


def check_tz(tz, what: str = "read_trace(tz=)") -> None:
    """Raise an InputError unless ``tz`` is None or a time zone pandas knows.

    Parameters
    ----------
    tz : str, datetime.tzinfo or None
        An IANA name such as ``"America/New_York"``, ``"UTC"``, or a tzinfo object.
    what : str
        The argument's name, for the message.
    """
    if tz is None:
        return
    if not isinstance(tz, (str, dt.tzinfo)):
        raise InputError(
            f"{what}: got {tz!r} ({type(tz).__name__}); expected a time zone name such as "
            "'UTC', 'Europe/Berlin' or 'America/New_York', or a datetime.tzinfo."
        )
    try:
        pd.Timestamp("2000-01-01").tz_localize(tz)
    except Exception:  # noqa: BLE001 - pytz, zoneinfo and dateutil raise different types
        raise InputError(
            f"{what}: unknown time zone {tz!r}; expected an IANA name such as 'UTC', "
            "'Europe/Berlin' or 'America/New_York' (see zoneinfo.available_timezones())."
        ) from None


def tz_localize(times: pd.Series | pd.DatetimeIndex, tz: str | None, extra: dict,
                path: str | os.PathLike | None = None) -> pd.DatetimeIndex:
    """Localize naive file times to ``tz`` (or UTC, recorded as an assumption) and convert to UTC.

    A local clock that falls back at the end of daylight saving time repeats an hour: the
    repeated times are placed by their order in the file (the first 01:30 is summer time, the
    second winter time). Times inside the hour skipped in spring cannot have been written by a
    local clock and are an error.
    """
    idx = pd.DatetimeIndex(times)
    if idx.tz is not None:
        return idx.tz_convert("UTC")
    check_tz(tz)
    if tz is None:
        extra["tz_assumed"] = "UTC (the file has no time zone; pass tz= to read_trace if the clock was local)"
        tz = "UTC"
    else:
        extra["tz"] = str(tz)
    where = f"{path}: " if path is not None else ""
    try:
        return idx.tz_localize(tz, ambiguous="infer", nonexistent="raise").tz_convert("UTC")
    except Exception as err:  # noqa: BLE001 - pytz raises Ambiguous/NonExistentTimeError
        raise TraceFormatError(
            f"{where}local times in {tz!r} cannot be placed on UTC ({type(err).__name__}: {err}); "
            "a daylight-saving change needs the samples in file order across it, and times in "
            "the skipped spring hour do not exist. Check tz=, or write the file in UTC."
        ) from None


def check_times(index: pd.Index, path: str | os.PathLike, lines: np.ndarray | None = None) -> None:
    """Raise when sample times go backwards or repeat; name the file and line."""
    t = index.as_unit("ns").asi8
    if t.size < 2:
        raise TraceFormatError(
            f"{path}: found {t.size} power sample(s); expected at least two to form a trace."
        )
    bad = np.flatnonzero(np.diff(t) <= 0)
    if bad.size:
        i = int(bad[0]) + 1
        where = f"line {int(lines[i])}" if lines is not None else f"sample {i}"
        raise TraceFormatError(
            f"{path}: timestamps go backwards or repeat at {where}: {index[i]} follows "
            f"{index[i - 1]}; expected strictly increasing times. Sort the file or drop the "
            "repeated samples."
        )


def check_power(
    values: pd.DataFrame,
    path: str | os.PathLike,
    *,
    unit: str = "W",
    max_plausible_w: float,
    lines: np.ndarray | None = None,
) -> None:
    """Raise on NaN, negative or implausible power; name the file, column and line.

    Parameters
    ----------
    values : pandas.DataFrame
        Power already converted to W, columns named as the file names them.
    path : path-like
        The file, for the message.
    unit : str
        The unit the file declared (for the message).
    max_plausible_w : float
        Largest believable reading for one column [W]; a median above it means the unit is
        wrong (e.g. mW read as W).
    lines : numpy.ndarray, optional
        1-based file line of each row, for the message.
    """
    arr = values.to_numpy(dtype=np.float64)

    def where(row: int) -> str:
        return f"line {int(lines[row])}" if lines is not None else f"sample {row}"

    for j, col in enumerate(values.columns):
        x = arr[:, j]
        nan = np.flatnonzero(np.isnan(x))
        if nan.size:
            raise TraceFormatError(
                f"{path}: column {col!r} has {nan.size} missing/NaN value(s), first at "
                f"{where(int(nan[0]))}; expected a power reading [{unit}] on every row."
            )
        inf = np.flatnonzero(np.isinf(x))
        if inf.size:
            raise TraceFormatError(
                f"{path}: column {col!r} has {inf.size} infinite value(s), first "
                f"{float(x[inf[0]])!r} at {where(int(inf[0]))}; expected a finite power reading [{unit}]. Drop or "
                "correct that row."
            )
        neg = np.flatnonzero(x < 0)
        if neg.size:
            raise TraceFormatError(
                f"{path}: column {col!r} has a negative power {x[neg[0]]:g} W at "
                f"{where(int(neg[0]))}; expected consumption >= 0 W."
            )
        median = float(np.median(x))
        if median > max_plausible_w:
            raise TraceFormatError(
                f"{path}: column {col!r} reads a median of {median:g} W after converting from "
                f"{unit}, more than the {max_plausible_w:g} W plausible here; is the unit wrong "
                "(e.g. mW written where W is declared)? Fix the unit in the header."
            )
    warn_spikes(arr, f"{path}: power [W]", labels=where)
