"""Time-series conventions shared by every aiload layer.

Absolute series carry a tz-aware :class:`pandas.DatetimeIndex` with a fixed ``freq``; each
value is the mean power over the interval that *starts* at its label. Relative series
(profiles) carry a :class:`pandas.TimedeltaIndex` named ``elapsed`` with the same meaning.
Energy is always computed here, from interval means, so every layer agrees on it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from aiload._checks import check_number
from aiload.errors import InputError

__all__ = [
    "require_tz_aware",
    "require_fixed_step",
    "step_seconds",
    "energy_kwh",
    "energy_wh",
    "validate_power_series",
]


def require_tz_aware(index: pd.Index, what: str = "series") -> pd.DatetimeIndex:
    """Return ``index`` if it is a tz-aware DatetimeIndex, else raise a clear error.

    Parameters
    ----------
    index : pandas.Index
        The index to check.
    what : str
        A name for the object in the message (e.g. ``"load_kw"``).
    """
    if not isinstance(index, pd.DatetimeIndex):
        raise InputError(
            f"{what}: expected a pandas DatetimeIndex with a time zone, got "
            f"{type(index).__name__}. Build one with pandas.date_range(..., tz='UTC')."
        )
    if index.tz is None:
        raise InputError(
            f"{what}: the DatetimeIndex has no time zone (naive). aiload needs tz-aware time "
            "so that days, months and weather hours line up; fix it with "
            "series.tz_localize('UTC') or series.tz_localize('America/New_York')."
        )
    return index


def step_seconds(index: pd.Index, what: str = "series") -> float:
    """Length of one interval of a fixed-step index [s].

    Uses ``index.freq`` when set, otherwise the (single) difference between labels.
    Raises when the steps are not all equal (a gap or an irregular index).
    """
    if len(index) < 2:
        freq = getattr(index, "freq", None)
        if freq is not None:
            return _freq_seconds(freq, what)
        raise InputError(
            f"{what}: cannot tell the step of an index with {len(index)} label(s) and no freq; "
            "give at least two labels or set index.freq."
        )
    freq = getattr(index, "freq", None)
    # a reversed index keeps a negative freq: leave it to the label check below
    if freq is not None and _freq_seconds(freq, what) > 0:
        step = _freq_seconds(freq, what)
        # a daily freq in a zone with DST labels local midnights 23 or 25 h apart while
        # reporting 24 h: check a daily (short) index label by label
        if step >= 86400.0:
            gaps = np.flatnonzero(np.diff(_ns(index)) != round(step * 1e9))
            if gaps.size:
                i = int(gaps[0]) + 1
                raise InputError(
                    f"{what}: the index's freq {freq.freqstr!r} says each interval is "
                    f"{step / 3600:g} h, but labels {index[i - 1]} -> {index[i]} are "
                    f"{(index[i] - index[i - 1]).total_seconds() / 3600:g} h apart (a "
                    "daylight-saving change in local calendar days); give the series on a "
                    "fixed step in real time, e.g. hourly."
                )
        return step
    diffs = np.diff(_ns(index))
    if not np.all(diffs == diffs[0]) or diffs[0] <= 0:
        bad = int(np.flatnonzero(diffs != diffs[0])[0]) + 1 if diffs[0] > 0 else 1
        raise InputError(
            f"{what}: expected equally spaced, increasing labels; the step changes at label "
            f"{bad} ({index[bad - 1]} -> {index[bad]}). Resample it first with "
            "aiload.resample(series, freq=...) to get interval means on a fixed grid."
        )
    return diffs[0] / 1e9


def _ns(index: pd.Index) -> np.ndarray:
    """The labels as int64 nanoseconds, whatever the index's unit (``asi8`` is in its unit:
    microseconds for a ``datetime64[us]`` index, which read as ns made an hour 3.6 s)."""
    as_unit = getattr(index, "as_unit", None)
    return (as_unit("ns") if as_unit is not None else index).asi8


def _freq_seconds(freq, what: str) -> float:
    """Seconds of a fixed ``freq``; a calendar one (months, years) is refused by name."""
    try:
        return pd.Timedelta(freq).total_seconds()
    except ValueError:
        raise InputError(
            f"{what}: the index's freq {getattr(freq, 'freqstr', freq)!r} has no fixed length "
            "(calendar steps such as months differ in length), so its values cannot be interval "
            "means of one step; resample to a fixed step first, e.g. "
            "aiload.resample(series, freq='1h')."
        ) from None


def require_fixed_step(series: pd.Series | pd.DataFrame, what: str = "series") -> float:
    """Check a series has a fixed step and return it [s]."""
    return step_seconds(series.index, what)


def energy_wh(power_w: pd.Series | np.ndarray, step_s: float | None = None) -> float:
    """Energy of an interval-mean power series [Wh].

    Parameters
    ----------
    power_w : pandas.Series or numpy.ndarray
        Interval-mean power [W] (or kW, giving kWh; the helper is unit-agnostic).
    step_s : float, optional
        Interval length [s]; taken from the index when ``power_w`` is a Series.
    """
    if step_s is None:
        if not isinstance(power_w, pd.Series):
            raise InputError("energy_wh: give step_s [s] when passing a bare array.")
        step_s = step_seconds(power_w.index, "power series")
    else:
        check_number(step_s, "energy_wh(step_s=)", gt=0.0, unit="s",
                     hint="The length of one interval, e.g. 900 for 15 min.")
    values = np.asarray(power_w, dtype=np.float64)
    return float(values.sum(dtype=np.float64) * step_s / 3600.0)


def energy_kwh(power_kw: pd.Series | np.ndarray, step_s: float | None = None) -> float:
    """Energy of an interval-mean power series given in kW [kWh]."""
    return energy_wh(power_kw, step_s)


def validate_power_series(
    power: pd.Series,
    what: str = "power",
    *,
    absolute: bool = True,
    allow_negative: bool = False,
) -> float:
    """Validate an interval-mean power series; return its step [s].

    Checks: non-empty, numeric, no NaN or infinite value, (optionally) no negative values, a tz-aware
    DatetimeIndex (``absolute=True``) or a TimedeltaIndex, and a fixed step.
    """
    if not isinstance(power, pd.Series):
        raise InputError(f"{what}: expected a pandas Series, got {type(power).__name__}.")
    if len(power) == 0:
        raise InputError(f"{what}: the series is empty; expected at least one interval.")
    # pandas' own dtypes (Float64, Int64, double[pyarrow]) are numbers too; bool is not
    if not pd.api.types.is_numeric_dtype(power.dtype) or pd.api.types.is_bool_dtype(power.dtype):
        raise InputError(f"{what}: expected numeric values, got dtype {power.dtype}.")
    if absolute:
        require_tz_aware(power.index, what)
    elif not isinstance(power.index, (pd.DatetimeIndex, pd.TimedeltaIndex)):
        raise InputError(
            f"{what}: expected a DatetimeIndex or TimedeltaIndex, got {type(power.index).__name__}."
        )
    values = power.to_numpy(dtype=float, na_value=np.nan)  # pd.NA counts as NaN
    nan = np.flatnonzero(np.isnan(values))
    if nan.size:
        raise InputError(
            f"{what}: {nan.size} NaN value(s), first at {power.index[nan[0]]}. aiload never "
            "fills silently: drop, interpolate or fill them first (e.g. series.interpolate())."
        )
    inf = np.flatnonzero(np.isinf(values))
    if inf.size:
        raise InputError(
            f"{what}: {inf.size} infinite value(s), first {float(values[inf[0]])!r} at "
            f"{power.index[inf[0]]}; expected finite power. Correct or drop those intervals."
        )
    if not allow_negative:
        neg = np.flatnonzero(values < 0)
        if neg.size:
            raise InputError(
                f"{what}: {neg.size} negative value(s), first {power.iloc[neg[0]]!r} at "
                f"{power.index[neg[0]]}; consumption is positive in aiload."
            )
    return step_seconds(power.index, what)
