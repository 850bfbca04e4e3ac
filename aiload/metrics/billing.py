"""Billing demand: 15-minute demand (interval means on the clock) and its monthly peaks."""

from __future__ import annotations

import numpy as np
import pandas as pd

from aiload.metrics._input import PowerInput, as_power
from aiload.metrics.level import cumulative_energy_kwh
from aiload.metrics._table import row, unavailable

__all__ = ["demand_kw", "demand_rows"]


def _demand(x: PowerInput, period_s: float) -> pd.Series:
    ns0 = int(x.index.as_unit("ns").asi8[0])
    period_ns = int(round(period_s * 1e9))
    end_s = x.span_s
    if x.absolute:
        # blocks on the clock (:00, :15, ...), like a utility meter
        first_ns = -(-ns0 // period_ns) * period_ns
    else:
        first_ns = ns0
    offset_s = (first_ns - ns0) / 1e9
    n_blocks = int(np.floor((end_s - offset_s) / period_s + 1e-9))
    if n_blocks <= 0:
        return pd.Series([], dtype=float, name="demand_kw")
    edges = offset_s + period_s * np.arange(n_blocks + 1)
    energy = np.diff(cumulative_energy_kwh(x, edges))
    labels_ns = first_ns + period_ns * np.arange(n_blocks)
    if x.absolute:
        index = pd.DatetimeIndex(pd.to_datetime(labels_ns, utc=True)).tz_convert(x.index.tz)
    else:
        index = pd.TimedeltaIndex(pd.to_timedelta(labels_ns, unit="ns"), name="elapsed")
    return pd.Series(energy * 3600.0 / period_s, index=index, name="demand_kw")


def demand_kw(
    power: pd.Series | pd.DataFrame,
    period: str = "15min",
    *,
    unit: str | None = None,
    kind: str = "auto",
) -> pd.Series:
    """Demand: mean power over each complete clock-aligned period [kW].

    Parameters
    ----------
    power : pandas.Series
        Power [W, kW or MW] (see :func:`aiload.metrics.summary`).
    period : str
        Demand interval (``"15min"`` for most tariffs).
    unit, kind
        As in :func:`aiload.metrics.summary`.

    Returns
    -------
    pandas.Series
        Demand [kW] named ``demand_kw``, labelled by the period start; energy-exact
        (interval means integrate exactly, samples by the trapezoid rule). Periods only
        partly covered by the data are left out.
    """
    x = as_power(power, unit=unit, kind=kind)
    return _demand(x, pd.Timedelta(period).total_seconds())


def demand_rows(x: PowerInput, period_s: float = 900.0) -> list[dict]:
    """Peak 15-minute demand per month (absolute time) or over the series (elapsed time)."""
    g, m = "billing", "demand_15min_peak_kw"
    if x.step_s > period_s:
        return [unavailable(g, m, "kW", "all", f"step {x.step_s:g} s is longer than {period_s:g} s")]
    demand = _demand(x, period_s)
    if demand.empty:
        return [unavailable(g, m, "kW", "all", f"no complete {period_s:g}-s demand interval")]
    rows = [row(g, m, demand.max(), "kW", "all")]
    if x.absolute:
        months = demand.index.strftime("%Y-%m")
        for month, peak in demand.groupby(months).max().items():
            rows.append(row(g, m, peak, "kW", month))
    return rows
