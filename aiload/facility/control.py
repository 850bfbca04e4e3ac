"""The power limit a facility is held to: its forms, the state a closed-loop limit reads,
and the checks.

``aiload.facility(..., power_limit_kw=...)`` takes a number [kW], a tz-aware Series of kW
(each value held until the next; NaN or +inf, and the time before the first value: no limit)
or a callable ``limit(time, state) -> kW`` called once at the start of every control period,
in time order, with the :class:`FacilityState` of the period just ended. The replay that
meets the limit: its state in :class:`aiload.facility.replay.Replay`, its loop in
:func:`aiload.facility.controller.run`, its outputs in :mod:`aiload.facility.flexout`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np
import pandas as pd

from aiload.errors import InputError

__all__ = ["FacilityState", "PowerLimit", "check_control_period"]


@dataclass(frozen=True)
class FacilityState:
    """What a closed-loop limit sees at the start of a control period.

    Attributes
    ----------
    time : pandas.Timestamp
        Start of the control period about to begin (tz-aware).
    period_s : float
        Control period [s].
    facility_kw : float
        Mean metered power over the previous control period (NaN at the first call) [kW].
    demand_kw : float
        What the facility would have drawn over that period with no limit (the open-loop
        run) [kW].
    limit_kw : float
        The limit in force over that period (inf when none) [kW].
    it_kw, cooling_kw : float
        Means over the previous period [kW].
    battery_soc : float or None
        State of charge of the battery lever [fraction 0..1]; None without a battery.
    paused_jobs : int
        Jobs paused now [-].
    capped_fraction : float
        Power-cap level now (1.0 = uncapped) [-].
    """

    time: pd.Timestamp
    period_s: float
    facility_kw: float
    demand_kw: float
    limit_kw: float
    it_kw: float
    cooling_kw: float
    battery_soc: float | None
    paused_jobs: int
    capped_fraction: float


def check_control_period(period_s: float, freq_s: float) -> tuple[int, int]:
    """Steps of the control grid ``h = min(period, freq)``: ``(m, q)`` = steps per control
    period and per output interval (one of them is 1); InputError unless the period is a
    whole multiple or a whole divisor of ``freq``."""
    ratio = period_s / freq_s
    for value, m, q in ((ratio, round(ratio), 1), (1.0 / ratio, 1, round(1.0 / ratio))):
        if value >= 1.0 - 1e-9 and abs(value - round(value)) < 1e-9 * max(1.0, value):
            return int(m), int(q)
    raise InputError(
        f"FlexibilitySpec.control_period_s = {period_s:g} s must be a whole multiple or a whole "
        f"divisor of the output freq ({freq_s:g} s); e.g. {freq_s:g} s or "
        f"{2 * freq_s:g} s."
    )


def _limit_value(value, what: str) -> float:
    """A limit value [kW]: NaN and +inf mean no limit; negative or non-numbers are refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, np.number)):
        raise InputError(f"{what}: expected a number of kW (inf or NaN for no limit), got "
                         f"{value!r} ({type(value).__name__}).")
    value = float(value)
    if math.isnan(value):
        return math.inf
    if value < 0:
        raise InputError(f"{what}: got {value:g} kW; expected a limit >= 0 kW (inf or NaN for "
                         "no limit). A facility cannot be held below zero at its meter.")
    return value


class PowerLimit:
    """The limit per control period from a number, a Series or a callable.

    Parameters
    ----------
    limit : float, pandas.Series or callable
    start : pandas.Timestamp
        Start of the run.
    period_s : float
        Control period [s].
    n_periods : int
        Control periods of the run [-].
    """

    def __init__(self, limit, start: pd.Timestamp, period_s: float, n_periods: int) -> None:
        self.start, self.period_s, self.n = start, float(period_s), int(n_periods)
        self.func = None
        self.values: np.ndarray | None = None
        if isinstance(limit, pd.Series):
            self.values = self._from_series(limit)
            self.kind = "series"
        elif callable(limit) and not isinstance(limit, (Real, np.number)):
            self.func = limit
            self.kind = "callable"
        else:
            value = _limit_value(limit, "facility(power_limit_kw=)")
            self.values = np.full(self.n, value)
            self.kind = "number"

    def _from_series(self, series: pd.Series) -> np.ndarray:
        what = "facility(power_limit_kw=<Series>)"
        index = series.index
        if not isinstance(index, pd.DatetimeIndex):
            raise InputError(f"{what}: expected a tz-aware DatetimeIndex, got a "
                             f"{type(index).__name__}; index the limits by time.")
        if index.tz is None:
            raise InputError(f"{what}: the index is naive (no time zone); expected tz-aware "
                             "times, e.g. series.tz_localize('UTC').")
        if len(index) == 0:
            raise InputError(f"{what}: the Series is empty; expected at least one time and "
                             "value (a number, or NaN/inf for no limit).")
        if not index.is_monotonic_increasing or index.has_duplicates:
            raise InputError(f"{what}: the index must increase strictly (each time once); "
                             "sort it and drop duplicate times.")
        try:
            values = series.to_numpy(dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(f"{what}: expected numbers of kW, got dtype "
                             f"{series.dtype}.") from None
        finite = values[~np.isnan(values)]
        if (finite < 0).any():
            first = index[np.flatnonzero(values < 0)[0]]
            raise InputError(f"{what}: {int((finite < 0).sum())} negative value(s), the first "
                             f"{values[values < 0][0]:g} kW at {first}; expected limits >= 0 kW "
                             "(NaN or inf for no limit).")
        starts = self.start + pd.to_timedelta(np.arange(self.n) * self.period_s, unit="s")
        end = self.start + pd.Timedelta(seconds=self.n * self.period_s)
        if index[0] >= end:
            raise InputError(f"{what}: its first time {index[0]} is at or after the run's end "
                             f"{end}, so no limit would apply; expected times from the run's "
                             f"start {self.start} (check the year and the time zone).")
        pos = index.searchsorted(starts, side="right") - 1
        held = np.where(pos >= 0, values[np.maximum(pos, 0)], np.inf)
        return np.where(np.isnan(held), np.inf, held)

    def at(self, k: int, state_fn) -> float:
        """The limit of period ``k`` [kW]; a callable is called with ``state_fn()``."""
        if self.func is None:
            return float(self.values[k])
        time = self.start + pd.Timedelta(seconds=k * self.period_s)
        try:
            got = self.func(time, state_fn())
        except InputError:
            raise
        except Exception as err:
            raise InputError(
                f"power_limit_kw callable at {time}: calling limit(time, state) raised "
                f"{type(err).__name__}: {err}; expected a function of (time, FacilityState) "
                "returning kW (NaN or inf for no limit)."
            ) from err
        return _limit_value(got, f"power_limit_kw callable at {time}")
