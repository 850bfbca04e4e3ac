"""Normalise any power series to the one form the metrics work on.

A metric needs three things from its input: the times [s from the first label], the power
[kW] and what a value *means* — the mean over the interval that starts at its label (a
regular series such as a facility output) or a point sample (a measured trace, irregular).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.timeseries import require_tz_aware

__all__ = ["PowerInput", "as_power", "unit_from_name", "common_unit", "TO_KW"]

#: factor that converts a value in the given unit to kW
TO_KW = {"W": 1e-3, "kW": 1.0, "MW": 1e3}
_SUFFIX = {"_w": "W", "_kw": "kW", "_mw": "MW"}
_ALIASES = {"w": "W", "kw": "kW", "mw": "MW"}

Kind = Literal["auto", "intervals", "samples"]


@dataclass(frozen=True)
class PowerInput:
    """A validated power series in kW with its time axis.

    Attributes
    ----------
    t_s : numpy.ndarray
        Time of each value from the first label [s].
    p_kw : numpy.ndarray
        Power [kW].
    kind : {"intervals", "samples"}
        ``"intervals"``: each value is the mean over ``[t, t + step_s)``; ``"samples"``:
        instantaneous readings, linear between them.
    step_s : float
        Interval length (intervals) or median sampling interval (samples) [s].
    index : pandas.Index
        The original index (tz-aware DatetimeIndex or TimedeltaIndex).
    name : str
        The series name (for labels).
    unit : str
        The unit the caller's values were in (``"W"``, ``"kW"`` or ``"MW"``).
    """

    t_s: np.ndarray
    p_kw: np.ndarray
    kind: str
    step_s: float
    index: pd.Index
    name: str
    unit: str

    @property
    def span_s(self) -> float:
        """Time covered by the series [s] (intervals include the last interval)."""
        last = self.t_s[-1] + (self.step_s if self.kind == "intervals" else 0.0)
        return float(last - self.t_s[0])

    @property
    def absolute(self) -> bool:
        """True when the index is absolute (tz-aware) time."""
        return isinstance(self.index, pd.DatetimeIndex)

    def to_series(self) -> pd.Series:
        """The power as a pandas Series [kW] on the original index."""
        return pd.Series(self.p_kw, index=self.index, name=f"{self.name}")


def unit_from_name(name: object) -> str | None:
    """Unit implied by a name suffix ``_w``, ``_kw`` or ``_mw``; None when there is none."""
    text = str(name).lower() if name is not None else ""
    for suffix in ("_kw", "_mw", "_w"):
        if text.endswith(suffix):
            return _SUFFIX[suffix]
    return None


def _normalise_unit(unit: str) -> str:
    try:
        return _ALIASES[str(unit).lower()]
    except KeyError:
        raise InputError(
            f"unit: got {unit!r}; expected one of 'W', 'kW', 'MW'. Pass the unit of the "
            "values, e.g. summary(trace_w, unit='W')."
        ) from None


def common_unit(series: list[pd.Series], unit: str | None) -> str | None:
    """The one unit shared by several inputs (given or inferred from names).

    Raises when the names say different units and no ``unit`` was given: summing or
    comparing W with kW silently is the classic factor-1000 error.
    """
    if unit is not None:
        return _normalise_unit(unit)
    found = {str(s.name): unit_from_name(s.name) for s in series}
    units = {u for u in found.values() if u is not None}
    if len(units) > 1:
        listing = ", ".join(f"{k!r} ({v or 'no unit'})" for k, v in found.items())
        raise InputError(
            f"mixed units across inputs: {listing}. Expected every input in the same unit; "
            "convert them first (e.g. power_w / 1000 renamed to *_kw) or pass unit=."
        )
    return units.pop() if units else None


def as_power(
    power: pd.Series | pd.DataFrame,
    *,
    unit: str | None = None,
    kind: Kind = "auto",
    what: str = "power",
) -> PowerInput:
    """Validate ``power`` and convert it to kW.

    Parameters
    ----------
    power : pandas.Series or one-column pandas.DataFrame
        Power [W, kW or MW] on a tz-aware DatetimeIndex or a TimedeltaIndex.
    unit : {"W", "kW", "MW"}, optional
        Unit of the values; inferred from a name ending in ``_w``/``_kw``/``_mw`` if omitted.
    kind : {"auto", "intervals", "samples"}
        What a value means. ``"auto"``: interval means when the index has a fixed step
        (or a ``freq``), point samples otherwise.
    what : str
        Name used in error messages.
    """
    if isinstance(power, pd.DataFrame):
        if power.shape[1] != 1:
            raise InputError(
                f"{what}: got a DataFrame with {power.shape[1]} columns {list(power.columns)[:6]}; "
                "expected one power series. Pick a column, e.g. df['facility_kw'], or sum "
                "them first (df.sum(axis=1))."
            )
        power = power.iloc[:, 0]
    if not isinstance(power, pd.Series):
        raise InputError(f"{what}: expected a pandas Series, got {type(power).__name__}.")
    name = str(power.name) if power.name is not None else what
    inferred = unit_from_name(power.name)
    if unit is None:
        if inferred is None:
            raise InputError(
                f"{what}: cannot tell the unit of series {power.name!r}: give unit='W', 'kW' "
                "or 'MW', or name it with a unit suffix (e.g. 'it_kw', 'power_w')."
            )
        unit = inferred
    unit = _normalise_unit(unit)
    if inferred is not None and inferred != unit:
        raise InputError(
            f"{what}: unit={unit!r} was given but the name {power.name!r} says {inferred!r}; "
            "expected them to agree. Rename the series or fix unit=."
        )
    if len(power) == 0:
        raise InputError(f"{what}: the series is empty; expected at least two values.")
    if not np.issubdtype(power.dtype, np.number):
        raise InputError(f"{what}: expected numeric values, got dtype {power.dtype}.")
    index = power.index
    if isinstance(index, pd.DatetimeIndex):
        require_tz_aware(index, what)
    elif not isinstance(index, pd.TimedeltaIndex):
        raise InputError(
            f"{what}: expected a tz-aware DatetimeIndex or a TimedeltaIndex named 'elapsed', "
            f"got {type(index).__name__}. Build one with pandas.date_range(..., tz='UTC') or "
            "pandas.to_timedelta(seconds, unit='s')."
        )
    values = power.to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise InputError(
            f"{what}: {bad.size} NaN or infinite value(s), first at {index[bad[0]]}. aiload never "
            "fills silently: drop, interpolate or fill them first (e.g. series.interpolate())."
        )
    neg = np.flatnonzero(values < 0)
    if neg.size:
        raise InputError(
            f"{what}: {neg.size} negative value(s), first {float(values[neg[0]])!r} at {index[neg[0]]}; "
            "expected consumption as positive power. Split two-way flows into import and "
            "export columns."
        )
    if len(power) < 2:
        raise InputError(f"{what}: only one value; expected at least two to form a series.")
    ns = index.as_unit("ns").asi8
    diffs = np.diff(ns)
    if np.any(diffs <= 0):
        first = int(np.flatnonzero(diffs <= 0)[0])
        raise InputError(
            f"{what}: time labels must increase strictly; label {first + 1} ({index[first + 1]}) "
            f"is not after label {first} ({index[first]}). Sort the series and drop or "
            "average duplicates (series.groupby(level=0).mean().sort_index())."
        )
    t_s = (ns - ns[0]) / 1e9
    regular = bool(np.all(diffs == diffs[0]))
    freq = getattr(index, "freq", None)
    if freq is not None and not regular and kind != "samples":
        # a daily freq across a DST change labels 23 h or 25 h days as 24 h, a calendar freq
        # (months) has no length: taking the freq's word would misstate the energy
        i = int(np.flatnonzero(diffs != diffs[0])[0])
        raise InputError(
            f"{what}: the index's freq {freq.freqstr!r} claims one fixed step, but labels "
            f"{index[i]} -> {index[i + 1]} are {diffs[i] / 3.6e12:g} h apart and "
            f"{index[0]} -> {index[1]} {diffs[0] / 3.6e12:g} h (a daylight-saving change or "
            "calendar steps). Give the series on a fixed step in real time (e.g. hourly), or "
            "pass kind='samples' for point readings."
        )
    if kind == "auto":
        kind = "intervals" if regular else "samples"
    if kind == "intervals":
        if not regular:
            raise InputError(
                f"{what}: kind='intervals' needs a fixed step, but the steps vary "
                f"({diffs.min() / 1e9:g} s to {diffs.max() / 1e9:g} s). Use kind='samples' for "
                "point readings, or resample to interval means first (aiload.resample)."
            )
        step_s = diffs[0] / 1e9
    elif kind == "samples":
        step_s = float(np.median(diffs)) / 1e9
    else:
        raise InputError(f"kind: got {kind!r}; expected 'auto', 'intervals' or 'samples'.")
    return PowerInput(
        t_s=t_s,
        p_kw=values * TO_KW[unit],
        kind=kind,
        step_s=float(step_s),
        index=index,
        name=name,
        unit=unit,
    )
