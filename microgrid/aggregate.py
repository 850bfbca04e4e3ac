"""Coarser time steps for long horizons, with the error they introduce reported.

A 15-minute year is 35,040 steps per variable; an hourly one 8,760. Averaging k steps into
one keeps energy exactly (interval means) but flattens peaks, which is what sizes the battery
and the import limit. :func:`coarsen` returns the coarse series together with the peak and
load-duration-curve errors so the user can judge whether the cheaper model is good enough.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.timeseries import energy_kwh, validate_power_series
from microgrid.pv import check_availability

__all__ = ["Aggregation", "coarsen"]


@dataclass(frozen=True)
class Aggregation:
    """A coarsened load (and PV availability) and the error it introduces.

    Attributes
    ----------
    load_kw : pandas.Series
        Interval means on the coarse step [kW].
    pv_availability : pandas.Series or None
        Interval means of a_t on the coarse step [kW/kWp].
    energy_error_kwh : float
        Coarse minus original load energy [kWh] (0 up to rounding: means conserve energy).
    peak_error_kw : float
        Original peak minus coarse peak [kW] (>= 0: averaging never raises the peak).
    peak_error_fraction : float
        ``peak_error_kw`` over the original peak [-].
    duration_curve_rmse_kw : float
        RMS difference between the original load-duration curve and that of the coarse
        series held constant over each coarse step [kW].
    """

    load_kw: pd.Series
    pv_availability: pd.Series | None
    energy_error_kwh: float
    peak_error_kw: float
    peak_error_fraction: float
    duration_curve_rmse_kw: float


def _block_mean(series: pd.Series, k: int, freq: pd.Timedelta) -> pd.Series:
    values = series.to_numpy(dtype=np.float64).reshape(-1, k).mean(axis=1)
    index = pd.date_range(series.index[0], periods=len(values), freq=freq)
    return pd.Series(values, index=index, name=series.name)


def coarsen(
    load_kw: pd.Series, pv_availability: pd.Series | None = None, *, freq: str | pd.Timedelta
) -> Aggregation:
    """Average ``load_kw`` (and ``pv_availability``) onto a coarser fixed step.

    Parameters
    ----------
    load_kw : pandas.Series
        Interval-mean load [kW] on a tz-aware fixed-step index.
    pv_availability : pandas.Series, optional
        a_t [kW/kWp] on the same index.
    freq : str or pandas.Timedelta
        The new step, a whole multiple of the old one (e.g. ``"1h"`` from 15 minutes).

    Returns
    -------
    Aggregation

    Examples
    --------
    >>> import pandas as pd
    >>> idx = pd.date_range("2025-01-01", periods=8, freq="15min", tz="UTC")
    >>> agg = coarsen(pd.Series([1.0, 3, 1, 3, 2, 2, 2, 2], index=idx), freq="1h")
    >>> agg.load_kw.tolist(), agg.peak_error_kw
    ([2.0, 2.0], 1.0)
    """
    step_s = validate_power_series(load_kw, "load_kw")
    try:  # a bare number would be nanoseconds to pandas
        new = None if isinstance(freq, (int, float, np.number)) else pd.Timedelta(freq)
    except (TypeError, ValueError):
        new = None
    if new is None or new is pd.NaT:
        raise InputError(f"coarsen: freq must be a fixed step such as '1h' or '15min', got "
                         f"{freq!r}.")
    ratio = new.total_seconds() / step_s
    k = int(round(ratio))
    if k < 1 or abs(ratio - k) > 1e-9:
        raise InputError(
            f"coarsen: the new step {new} is not a whole multiple of the series' step "
            f"{pd.Timedelta(seconds=step_s)}; pick e.g. freq={pd.Timedelta(seconds=step_s * 4)}."
        )
    if len(load_kw) % k:
        raise InputError(
            f"coarsen: {len(load_kw)} steps do not split into whole blocks of {k}; trim the "
            f"series to {len(load_kw) - len(load_kw) % k} steps first."
        )
    coarse = _block_mean(load_kw, k, new)
    pv = None
    if pv_availability is not None:
        if (not isinstance(pv_availability, pd.Series)
                or not pv_availability.index.equals(load_kw.index)):
            raise InputError(
                "coarsen: pv_availability is on another index than load_kw; build it with "
                "microgrid.pv_availability(..., index=load_kw.index)."
            )
        validate_power_series(pv_availability, "pv_availability")  # NaN, inf, < 0
        check_availability(pv_availability)  # > 1.1 kW/kWp is a unit error
        pv = _block_mean(pv_availability, k, new)
    original = load_kw.to_numpy(dtype=np.float64)
    held = np.repeat(coarse.to_numpy(), k)
    peak = float(original.max())
    peak_error = peak - float(coarse.max())
    rmse = float(np.sqrt(np.mean((np.sort(original) - np.sort(held)) ** 2)))
    return Aggregation(
        load_kw=coarse,
        pv_availability=pv,
        energy_error_kwh=energy_kwh(coarse) - energy_kwh(load_kw),
        peak_error_kw=peak_error,
        peak_error_fraction=peak_error / peak if peak > 0 else 0.0,
        duration_curve_rmse_kw=rmse,
    )
