"""Request-rate shapes for inference services, from the real production traces.

Two shapes are bundled, by name (:data:`SHAPES`):

- ``"azure-2024-week"`` (the default): a week of the Azure LLM inference 2024 trace (coding
  and conversation services, **digitised from the trace's published plots**), anchored to the
  calendar: each step takes the window of its own weekday and local time in ``start``'s time
  zone, daylight-saving changes included. Two variations that one typical week does not
  carry, both read off the same plots, are drawn on top when the run has a random generator:
  a **level for each local day** (log-normal, mean 1, log standard deviation
  :data:`DAY_LEVEL_SIGMA`: the day-to-day variation of the weekday peak) and the **spread of
  the per-minute rate** within each 10-min window (the ten minutes spread evenly between the
  plotted line's lower and upper edges, in a random order; the window's mean is kept). Both
  are keyed to the calendar (a hash of the run's seed and the local day or window), so with
  the same seed a date has the same demand in any run, whatever its start and length;
- ``"servegen-m-large"``: 14 days from local midnight of the run's first day, whatever the
  date (see below); no random part.

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

__all__ = ["servegen_shape", "azure_week_shape", "azure_minute_half_range", "burst_blocks",
           "day_levels", "minute_ratios", "demand_shape", "DemandShape", "SHAPES",
           "DEFAULT_SHAPE", "DAY_LEVEL_SIGMA", "shape_period_s"]

DATA = Path(__file__).with_name("data")
SHAPE_STEP_S = 600.0
WEEK_S = 7 * 86400
#: 1970-01-05, the first Monday of the Unix epoch [s]: weeks counted from it start on Monday
_MONDAY_S = 4 * 86400
#: the bundled shapes by name, the default first: what each is, for messages and docs
SHAPES = {
    "azure-2024-week": "Azure LLM inference 2024 (coding + conversation), a week digitised from "
                       "the published plots, on the calendar (weekday and local time), with "
                       "day-to-day levels and the per-minute spread of the same plots",
    "servegen-m-large": "ServeGen m-large (Alibaba Bailian), 14 days from local midnight of "
                        "the run's first day",
}
#: the default ``InferenceSpec.shape``
DEFAULT_SHAPE = "azure-2024-week"
#: day-to-day variation of the Azure week's weekday peak: log standard deviation of each
#: complete local Monday-Thursday's highest 10-min rate about its service's mean, pooled over
#: coding and conversation (5 degrees of freedom; the header of azure_llm_2024_week_shape.csv,
#: ``docs/scripts/make_facility_demand_shape.py``) [-]
DAY_LEVEL_SIGMA = 0.0544
#: position of each of a window's ten minutes between the lower (-1) and upper (+1) edge [-]
_MINUTE_PROFILE = np.linspace(-1.0, 1.0, 10)


@lru_cache(maxsize=1)
def servegen_shape() -> np.ndarray:
    """ServeGen m-large relative rate per 10-min window over 14 days (mean 1): the running
    median over five windows of the 50 largest clients' summed rate [-]."""
    table = pd.read_csv(DATA / "servegen_mlarge_rate_shape.csv", comment="#")
    values = table["rate_ratio"].to_numpy(dtype=np.float64)
    return values / values.mean()  # undo the 6-digit rounding of the file: mean exactly 1


@lru_cache(maxsize=1)
def _azure_table() -> pd.DataFrame:
    return pd.read_csv(DATA / "azure_llm_2024_week_shape.csv", comment="#")


def azure_week_shape() -> np.ndarray:
    """Azure LLM inference 2024 relative rate per 10-min window of the local week, Monday
    00:00 first (1,008 values, mean 1); digitised from the trace's published plots, the
    services' clock taken as UTC-4 (``docs/scripts/make_facility_demand_shape.py``) [-]."""
    values = _azure_table()["rate_ratio"].to_numpy(dtype=np.float64)
    return values / values.mean()


def azure_minute_half_range() -> np.ndarray:
    """Half the spread of the per-minute rate within each 10-min window of the Azure week,
    relative to the window's mean (1,008 values, Monday 00:00 local first) [-]."""
    return _azure_table()["minute_half_range"].to_numpy(dtype=np.float64)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _uniform(key: int, counter: np.ndarray) -> np.ndarray:
    """Uniform numbers in (0, 1), one per ``counter``, a pure function of ``(key, counter)``
    (SplitMix64), so any slice of a calendar draws the same values as the whole [-]."""
    with np.errstate(over="ignore"):
        x = np.uint64(key) + (counter.astype(np.uint64) + np.uint64(1)) * _GOLDEN
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return ((x >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def day_levels(key: int, local_day: np.ndarray, sigma: float = DAY_LEVEL_SIGMA) -> np.ndarray:
    """Log-normal level of each local day (days since 1970-01-01 on the site's clock), mean 1,
    log standard deviation ``sigma``: a pure function of the key and the day [-]."""
    u1 = _uniform(key, 2 * local_day)
    u2 = _uniform(key, 2 * local_day + 1)
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)  # Box-Muller
    return np.exp(sigma * z - 0.5 * sigma**2)


def minute_ratios(key: int, local_minute: np.ndarray, half_range: np.ndarray) -> np.ndarray:
    """Ratio of each local minute's rate to its 10-min window's mean: the window's ten minutes
    spread evenly over ``1 ± half_range`` in an order drawn from the key and the window, so a
    window's ten ratios have mean 1 exactly [-]."""
    window = local_minute // 10
    unique, inverse = np.unique(window, return_inverse=True)
    draws = _uniform(key ^ 0x5DEECE66D, unique[:, None] * 16 + np.arange(10))
    rank = np.argsort(np.argsort(draws, axis=1), axis=1)
    position = _MINUTE_PROFILE[rank[inverse, local_minute % 10]]
    return 1.0 + half_range * position


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
    shape : "azure-2024-week", "servegen-m-large" or pandas.Series
        Bundled shape (Azure 2024: the weekday and local time of each step, every week, with
        day levels and the minute spread drawn from ``rng``; ServeGen: t = 0 at local
        midnight of ``start``'s day, repeated every 14 days) or a tz-aware series of
        relative rates covering the run (interval means, any scale).
    step_s : float
        Output interval [s]; divides 600 s or is a multiple of it.
    n_steps : int
        Steps of the run [-].
    bursts : bool
        Multiply each 10-min window by a randomly drawn block of ten measured per-minute ratios
        (keeps the 10-min mean); only for ``step_s`` <= 60 s. The blocks of the whole run are
        drawn here, once. With the Azure week they replace its plotted minute spread.
    rng : numpy.random.Generator or None
        The run's generator; ``None``: the Azure week without its random part (the typical
        week, as the demand scale is solved on).
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
            # the calendar's random part (day levels, minute spread), keyed by the run's
            # generator; without one, the typical week. Measured per-minute bursts replace
            # the plots' minute spread (they describe the same thing).
            self._key = None if rng is None else int(rng.integers(0, 2**63))
            self._spread = not bursts
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

    def _local_s(self, utc_ns: np.ndarray) -> np.ndarray:
        """Seconds since 1970-01-01 00:00 on the site's clock of each instant [s]."""
        origin_s, offsets = self._week
        utc_s = utc_ns // 10**9
        return utc_s + offsets[(utc_s - origin_s) // 900]

    @staticmethod
    def _window(local_s: np.ndarray) -> np.ndarray:
        """Index of the 10-min window of the local week (Monday 00:00 first) [-]."""
        return ((local_s - _MONDAY_S) % WEEK_S) // int(SHAPE_STEP_S)

    def _at(self, local_s: np.ndarray) -> np.ndarray:
        """The week's value times the day's level at local instants (whole seconds) [-]."""
        values = azure_week_shape()[self._window(local_s)]
        if self._key is not None:
            values = values * day_levels(self._key, local_s // 86400)
        return values

    def _minutes(self, local_s: np.ndarray) -> np.ndarray:
        """The per-minute ratio at local instants [-]."""
        return minute_ratios(self._key, local_s // 60,
                             azure_minute_half_range()[self._window(local_s)])

    def _calendar(self, first: int, stop: int) -> np.ndarray:
        """The weekly shape on the calendar, steps ``first .. stop - 1`` [-]."""
        i = np.arange(first, stop, dtype=np.int64)
        begin = self._start_ns + i * self._step_ns  # integer ns: no rounding at window edges
        spread = self._key is not None and self._spread
        if not len(begin):
            return np.zeros(0)
        if self.step_s >= SHAPE_STEP_S:
            # whole windows: the minute spread averages out (mean 1 per window)
            per = int(round(self.step_s / SHAPE_STEP_S))
            sub = begin[:, None] + np.arange(per, dtype=np.int64) * int(SHAPE_STEP_S * 1e9)
            return self._at(self._local_s(sub)).mean(axis=1)
        if self.step_s <= 60.0 and (60 * 10**9) % self._step_ns == 0:
            # steps inside whole minutes: each UTC minute once, then every step of it (a
            # 0.1-s run evaluates 1 value in 600); every zone's offset is whole minutes
            minute = begin // (60 * 10**9)
            first_min = int(minute[0])
            starts = np.arange(first_min, int(minute[-1]) + 1, dtype=np.int64) * (60 * 10**9)
            local = self._local_s(starts)
            per_minute = self._at(local)
            if spread:
                per_minute = per_minute * self._minutes(local)
            return per_minute[minute - first_min]
        local = self._local_s(begin)
        values = self._at(local)
        if not spread:
            return values
        # steps across minute edges (e.g. 40 s, 5 min): the mean of the minutes they overlap,
        # each minute weighted by its share of the step (a step lies in one 10-min window)
        step_ns = self._step_ns
        local_ns = (local * 10**9 + begin % 10**9)[:, None]
        span = int(-(-step_ns // (60 * 10**9))) + 1
        minute = local_ns // (60 * 10**9) + np.arange(span, dtype=np.int64)
        lo = np.maximum(minute * 60 * 10**9, local_ns)
        hi = np.minimum((minute + 1) * 60 * 10**9, local_ns + step_ns)
        weight = np.clip(hi - lo, 0, None) / step_ns
        ratios = self._minutes(minute.ravel() * 60).reshape(minute.shape)
        return values * (weight * ratios).sum(axis=1)

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
