"""Request-rate shapes for inference services, from the real production traces.

Two shapes are bundled, by name (:data:`SHAPES`):

- ``"servegen-m-large"`` (the default): 14 days from local midnight of the run's first day,
  whatever the date (see below);
- ``"azure-2024-week"``: a week of the Azure LLM inference 2024 trace (coding and
  conversation services, **digitised from the trace's published plots**), anchored to the
  calendar: each step takes the window of its own weekday and local time in ``start``'s time
  zone, daylight-saving changes included, so a date's demand is the same in any run.

The ServeGen shape is the ServeGen m-large request rate (Alibaba Bailian, 14 days, 10-min
windows, summed over the 50 largest clients, circular running median over five windows so that
single clients' batch spikes of 10-20 min drop out, mean 1; peak/mean 2.51 against 3.13 for the
raw sum); sub-10-min burstiness comes from
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

__all__ = ["servegen_shape", "azure_week_shape", "burst_blocks", "demand_shape", "DemandShape",
           "SHAPES", "shape_period_s"]

DATA = Path(__file__).with_name("data")
SHAPE_STEP_S = 600.0
WEEK_S = 7 * 86400
#: 1970-01-05, the first Monday of the Unix epoch [s]: weeks counted from it start on Monday
_MONDAY_S = 4 * 86400
#: the bundled shapes by name: what each is, for messages and docs
SHAPES = {
    "servegen-m-large": "ServeGen m-large (Alibaba Bailian), 14 days from local midnight of "
                        "the run's first day",
    "azure-2024-week": "Azure LLM inference 2024 (coding + conversation), a week digitised from "
                       "the published plots, on the calendar (weekday and local time)",
}


@lru_cache(maxsize=1)
def servegen_shape() -> np.ndarray:
    """ServeGen m-large relative rate per 10-min window over 14 days (mean 1): the running
    median over five windows of the 50 largest clients' summed rate [-]."""
    table = pd.read_csv(DATA / "servegen_mlarge_rate_shape.csv", comment="#")
    values = table["rate_ratio"].to_numpy(dtype=np.float64)
    return values / values.mean()  # undo the 6-digit rounding of the file: mean exactly 1


@lru_cache(maxsize=1)
def azure_week_shape() -> np.ndarray:
    """Azure LLM inference 2024 relative rate per 10-min window of the local week, Monday
    00:00 first (1,008 values, mean 1); digitised from the trace's published plots, the
    services' clock taken as UTC-4 (``docs/scripts/make_facility_demand_shape.py``) [-]."""
    table = pd.read_csv(DATA / "azure_llm_2024_week_shape.csv", comment="#")
    values = table["rate_ratio"].to_numpy(dtype=np.float64)
    return values / values.mean()


def shape_period_s(name: str) -> float:
    """Period after which a bundled shape repeats [s]."""
    return WEEK_S if name == "azure-2024-week" else 14 * 86400.0


def _utc_offsets(start: pd.Timestamp, span_s: float) -> tuple[int, np.ndarray]:
    """UTC offsets of ``start``'s time zone on a 15-min grid covering ``start`` .. ``start +
    span_s``: (grid origin [s since the epoch], offset of each 15-min cell [s]). Every time
    zone changes its offset on a quarter hour."""
    origin = start.floor("15min")
    cells = pd.date_range(origin, periods=int(span_s // 900) + 3, freq="15min")
    offsets = (cells.tz_localize(None) - cells.tz_convert(None)).total_seconds()
    return int(origin.value // 10**9), offsets.to_numpy(dtype=np.int64)


@lru_cache(maxsize=1)
def burst_blocks() -> np.ndarray:
    """Per-minute / 10-min-mean ratios, shape (blocks, 10), each row mean 1 [-]."""
    table = pd.read_csv(DATA / "burst_ratio_1min.csv", comment="#")
    blocks = table["ratio"].to_numpy(dtype=np.float64).reshape(-1, 10)
    return blocks / blocks.mean(axis=1, keepdims=True)


class DemandShape:
    """Relative demand per interval of ``step_s`` from ``start`` (mean 1 over the shape) [-],
    evaluated on any slice of the run's steps, so a long high-resolution run never holds the
    whole series (:meth:`__call__`). Every slice gives the same values as the whole run would.

    Parameters
    ----------
    shape : "servegen-m-large", "azure-2024-week" or pandas.Series
        Bundled shape (ServeGen: t = 0 at local midnight of ``start``'s day, repeated every
        14 days; Azure 2024: the weekday and local time of each step, every week) or
        a tz-aware series of relative rates covering the run (interval means, any scale).
    step_s : float
        Output interval [s]; divides 600 s or is a multiple of it.
    n_steps : int
        Steps of the run [-].
    bursts : bool
        Multiply each 10-min window by a randomly drawn block of ten measured per-minute ratios
        (keeps the 10-min mean); only for ``step_s`` <= 60 s. The blocks of the whole run are
        drawn here, once.
    rng : numpy.random.Generator
    """

    def __init__(self, shape, start: pd.Timestamp, step_s: float, n_steps: int, *,
                 bursts: bool, rng: np.random.Generator) -> None:
        self.step_s, self.n_steps = float(step_s), int(n_steps)
        t_last = (self.n_steps - 1) * self.step_s
        self._week = None
        if isinstance(shape, str) and shape == "azure-2024-week":
            # the calendar: each step's own weekday and local time, DST changes included
            if start.tz is None:
                raise InputError("InferenceSpec.shape 'azure-2024-week' needs a tz-aware start "
                                 "(its weekday and hours are local time).")
            self._series = None
            self._start_ns = int(start.value)
            self._step_ns = int(round(self.step_s * 1e9))
            self._week = _utc_offsets(start, t_last + self.step_s)
        elif isinstance(shape, str):
            # the wall clock at start: on a DST-change day real time since midnight is an
            # hour off
            wall = start.tz_localize(None) if start.tz is not None else start
            self._offset = (wall - wall.normalize()).total_seconds()
            self._series = None
        else:
            series = shape
            require_tz_aware(series.index, "InferenceSpec.shape")
            src_step = step_seconds(series.index, "InferenceSpec.shape")
            first = start
            last = start + pd.to_timedelta(t_last + self.step_s, unit="s")
            if series.index[0] > first or series.index[-1] + pd.Timedelta(seconds=src_step) < last:
                raise InputError(
                    f"InferenceSpec.shape: the series covers {series.index[0]} .. "
                    f"{series.index[-1]} but the run needs {first} .. {last}; extend or repeat it."
                )
            values = series.to_numpy(dtype=np.float64)
            if np.any(values < 0) or values.mean() <= 0:
                raise InputError(
                    "InferenceSpec.shape: relative rates must be >= 0 with a positive mean."
                )
            knots = (series.index - first).total_seconds().to_numpy()
            self._knots = np.append(knots, knots[-1] + src_step)
            self._cum = np.concatenate(([0.0], np.cumsum(values * src_step)))
            self._mean = values.mean()
            self._series = series
        self._picks = None
        if bursts:
            if self.step_s > 60.0:
                raise InputError(
                    f"InferenceSpec.bursts: per-minute burstiness needs freq <= 1min, got "
                    f"{self.step_s} s."
                )
            windows = int((t_last // 60.0) // 10) + 1
            self._picks = rng.integers(0, len(burst_blocks()), size=windows)

    def _windows(self, utc_ns: np.ndarray) -> np.ndarray:
        """Index of the local 10-min window of the week holding each instant [-]."""
        origin_s, offsets = self._week
        utc_s = utc_ns // 10**9
        local_s = utc_s + offsets[(utc_s - origin_s) // 900]
        return ((local_s - _MONDAY_S) % WEEK_S) // int(SHAPE_STEP_S)

    def _calendar(self, first: int, stop: int) -> np.ndarray:
        """The weekly shape on the calendar, steps ``first .. stop - 1`` [-]."""
        base = azure_week_shape()
        i = np.arange(first, stop, dtype=np.int64)
        begin = self._start_ns + i * self._step_ns  # integer ns: no rounding at window edges
        if self.step_s <= SHAPE_STEP_S:
            return base[self._windows(begin)]
        per = int(round(self.step_s / SHAPE_STEP_S))
        sub = begin[:, None] + np.arange(per, dtype=np.int64) * int(SHAPE_STEP_S * 1e9)
        return base[self._windows(sub)].mean(axis=1)

    def __call__(self, first: int = 0, stop: int | None = None) -> np.ndarray:
        """Relative demand of steps ``first .. stop - 1`` [-]."""
        stop = self.n_steps if stop is None else stop
        step_s = self.step_s
        t = np.arange(first, stop, dtype=np.float64) * step_s
        if self._week is not None:
            rel = self._calendar(first, stop)
        elif self._series is None:
            base = servegen_shape()
            if step_s <= SHAPE_STEP_S:
                window = ((t + self._offset) // SHAPE_STEP_S).astype(np.int64) % len(base)
                rel = base[window]
            else:
                per = int(round(step_s / SHAPE_STEP_S))
                first_window = ((t[:, None] + self._offset) // SHAPE_STEP_S).astype(np.int64)
                idx = first_window + np.arange(per)
                rel = base[idx % len(base)].mean(axis=1)
        else:
            at = np.interp(np.append(t, stop * step_s), self._knots, self._cum)
            rel = np.diff(at) / step_s / self._mean
        if self._picks is not None:
            minute = (t // 60.0).astype(np.int64)
            rel = rel * burst_blocks()[self._picks[minute // 10], minute % 10]
        return rel


def demand_shape(
    shape, start: pd.Timestamp, step_s: float, n_steps: int, *, bursts: bool,
    rng: np.random.Generator,
) -> np.ndarray:
    """Relative demand of the whole run at once: ``DemandShape(...)()`` [-]."""
    return DemandShape(shape, start, step_s, n_steps, bursts=bursts, rng=rng)()
